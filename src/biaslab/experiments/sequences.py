"""Day 4 - order as a prior, and its price: long-range dependencies in recurrent networks.

The task (``data.sequences.recall_task``): read T random symbols and answer the first one, so the
information needed lies T − 1 steps back. An Elman RNN (lecture notes §5.2, eq. 5.6) carries it
through T multiplications by its recurrent Jacobian, and the gradient that should teach it to keep
the symbol shrinks geometrically on the way back (vanishing gradients): it learns short sequences
and fails on long ones. The LSTM's additive cell state c_t = f ⊙ c_{t−1} + i ⊙ g keeps a path along
which the gradient need not vanish — provided the forget gates start near 1 (chrono initialisation,
``nn.recurrent.chrono_init``; with torch's default biases f ≈ 1/2 and the LSTM failed here like the
RNN: 0.127 at T = 100; chrono initialisation is Tallec & Ollivier 2018, not in the documents); a
Transformer reaches position 0 from every position in one attention step, at O(T²) cost. Each model
and length trains ``restarts`` initialisations and keeps the one best on validation
(``train.recipes.fit_best_of_restarts``): at T = 100 about one LSTM initialisation in five stalls
with two symbols merged (7 of 8 right); 30 epochs instead of 20 did not free one, and gradient
clipping moved the stall to other initialisations. The recurrent models train on torch's fused
kernels (``SequenceClassifier(fused=True)``: the same initial weights, 3.6 times faster here with
early stopping) and are probed on the written-out ones.

The same weights run at every step (ML-for-physics slides, 'What about time?': "Parameter sharing
crucial to generalize: lengths unseen in training"), so each recurrent model trained on T is also
tested on 1.25T, 1.5T and 2T. Running is not recalling: where the LSTM fails at 2T (T = 100) its
accuracy falls with the distance beyond T. And recurrence's price: an RNN's forward pass is a chain
that grows by a fixed number of operations per step (counted on autograd's graph), a Transformer's
does not grow with T; beside it the seconds of each on this machine.

Figures: test accuracy against T for the three models, and the norm of the loss gradient with
respect to each input step, ‖∂L/∂x_t‖, of the untrained RNN and LSTM at the longest T.

The documents: lecture notes §5.2 ("If ‖W_h‖ < 1, gradients shrink exponentially (vanishing
gradients)—the network forgets distant inputs. Gated architectures (LSTMs, GRUs) add learned gates
that control information flow, helping gradients propagate"); the inductive-bias slides, 'In
practice: Recurrent Neural Networks' ("can be exposed to vanishing/exploding ones") and 'Have we
handled all possible data structures?' ("RNNs struggle with long-range dependencies"). They give no
accuracy and no gradient ratio: the thresholds are biaslab's target.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from biaslab.config import check_batch_fits, check_range
from biaslab.data.sequences import recall_task
from biaslab.data.splits import GeneratedSizes
from biaslab.errors import ConfigError
from biaslab.evaluate.gradient_flow import gradient_by_step, scaled_identity_rnn
from biaslab.evaluate.scaling import fit_power_law
from biaslab.evaluate.sequential_depth import forward_cost
from biaslab.nn import SequenceClassifier, TransformerConfig, TransformerEncoder, count_parameters
from biaslab.nn.embedding import OneHotInputs
from biaslab.nn.recurrent import chrono_init
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_best_of_restarts, predict
from biaslab.train.trainer import accuracy

MODELS = ("RNN", "LSTM", "Transformer")
BEYOND = (1.25, 1.5, 2.0)  # the lengths, in multiples of the training length T, each model is tested at
NOTES = "lecture notes §5.2 (Sequences → RNNs), eq. 5.6"  # vanishing gradients; LSTMs, GRUs


@dataclass(frozen=True)
class SequencesConfig:
    """The task's sizes, the models' training, the task's lengths and the models' width."""

    data: GeneratedSizes = GeneratedSizes()
    # lr: the LSTM at T = 100 needs it (3e-3: 0.59 after 20 epochs, 1e-2: 1.00)
    # Early stopping on validation accuracy: a model that recalls every validation sequence (or has
    # stalled) for 3 epochs stops there, with its best epoch's weights (the Transformer is right on
    # all of them after 3-5 of its 20 epochs)
    train: ClassifierTraining = ClassifierTraining(
        epochs=20, lr=1e-2, schedule="onecycle", monitor="val_accuracy", patience=3
    )
    lengths: tuple[int, ...] = (10, 25, 50, 100)
    vocab: int = 8
    hidden: int = 64
    # Initialisations per model and length, the best on validation kept: at T = 100 about one LSTM
    # initialisation in five stalls at 7 of 8 symbols (0.875), with or without gradient clipping.
    restarts: int = 3
    # The spectral radius ρ of a ReLU RNN's recurrent matrix ρI: below 1 the gradient through time
    # vanishes, above 1 it explodes, as ρ^(T-1)
    radii: tuple[float, ...] = (0.5, 0.9, 1.0, 1.1, 1.5)
    # Lengths at which the untrained models' forward passes are counted (sequential operations)
    # and timed (the fastest of timing_repeats passes over timing_batch sequences)
    timed_lengths: tuple[int, ...] = (25, 50, 100, 200, 400)
    timing_batch: int = 256
    timing_repeats: int = 3

    def __post_init__(self):
        if sorted(set(self.lengths)) != list(self.lengths) or self.lengths[0] < 2:
            raise ConfigError(f"lengths={self.lengths}: must be increasing, each at least 2")
        check_range(self, "vocab", 2, 1000)
        check_range(self, "restarts", 1, 20)
        check_range(self, "hidden", 4, 4096)
        check_range(self, "radii", 0, 10, "spectral radii", open_low=True)
        if sorted(set(self.radii)) != list(self.radii):
            raise ConfigError(f"radii={self.radii}: give them increasing")
        check_range(self, "timed_lengths", 2, 100_000)
        if len(set(self.timed_lengths)) < 3 or sorted(self.timed_lengths) != list(self.timed_lengths):
            raise ConfigError(
                f"timed_lengths={self.timed_lengths}: at least 3, increasing (a power law's fit)"
            )
        check_range(self, "timing_batch", 1, 100_000)
        check_range(self, "timing_repeats", 1, 100)
        if self.hidden % 4:
            raise ConfigError(f"hidden={self.hidden}: must be a multiple of the Transformer's 4 heads")
        check_batch_fits(self)

    def training_set(self) -> tuple[int, str]:
        return self.data.training_set()


def build(name: str, cfg: SequencesConfig, length: int, fused: bool = False) -> nn.Module:
    """Models that read (N, T) integer symbols and answer (N, vocab) logits; ``fused``: the
    recurrent ones on torch's kernels (training), else written out gate by gate (the probes)."""
    if name == "Transformer":
        config = TransformerConfig(vocab_size=cfg.vocab, dim=cfg.hidden, heads=4, layers=1, max_len=length)
        return TransformerEncoder(replace(config, positional="learned", num_classes=cfg.vocab, pool="mean"))
    cell = {"RNN": "rnn", "LSTM": "lstm"}[name]
    model = SequenceClassifier(cfg.vocab, cfg.hidden, cfg.vocab, cell=cell, fused=fused)
    if cell == "lstm":  # forget gates near 1 from the start: memory over the whole sequence
        chrono_init(model.rnn, max(length, 3))
    return OneHotInputs(model, cfg.vocab)


def fit_model(task, name: str, length: int) -> dict:
    """One model on sequences of one length, the best of its restarts on validation (a task)."""
    cfg: SequencesConfig = task.cfg
    splits = cfg.data.generate(
        lambda n, seed: recall_task(n, length, cfg.vocab, seed=seed),
        lambda split: task.seed_for("data", split, str(length)),
    )
    tag = f"{name.lower()}-T{length}"
    fit = fit_best_of_restarts(
        lambda: build(name, cfg, length, fused=True),  # the same initial weights, trained faster
        splits,
        cfg.train,
        lambda r: task.training(f"{tag}-restart{r}"),
        restarts=cfg.restarts,
    )
    out = {"accuracy": fit.test["accuracy"], "parameters": count_parameters(fit.trainer.model)}
    if name != "Transformer":  # its learned positions stop at T: it has no input for step T + 1
        out["beyond"] = []  # [factor, accuracy at factor x T] on fresh sequences; 2T last
        for factor in BEYOND:
            tag = "2T" if factor == 2 else f"{factor:g}T"
            tokens, targets = recall_task(
                cfg.data.n_test,
                round(factor * length),
                cfg.vocab,
                seed=task.seed_for("data", tag, str(length)),
            )
            out["beyond"].append([factor, accuracy(predict(fit.trainer.model, tokens).cpu(), targets)])
    return out


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "gradient_first_over_last": measure("gradient at the first step over the last"),
    "accuracy_at_double_length": measure("test accuracy at twice the training length"),
    "sequential_operations": measure("operations on the longest chain of the forward pass"),
}


@experiment(
    name="sequences",
    words=WORDS,
    day=4,
    step=6,
    config=SequencesConfig,
    title="Long-range dependencies: RNN, LSTM and Transformer",
    summary="recall the first of T symbols: accuracy against T and the vanishing gradient of an RNN",
    quick={
        "lengths": (5, 20),
        "n_train": 500,
        "n_val": 200,
        "n_test": 200,
        "hidden": 16,
        "epochs": 2,
        "restarts": 1,
        "timed_lengths": (5, 10, 20),
        "timing_batch": 16,
        "timing_repeats": 1,
    },
)
def run(ctx) -> None:
    cfg: SequencesConfig = ctx.cfg
    accuracy: dict[str, list[float]] = {m: [] for m in MODELS}
    fits = ctx.tasks(fit_model, [(name, length) for length in cfg.lengths for name in MODELS])
    for length in cfg.lengths:
        for name in MODELS:
            fit = fits[name, length]
            accuracy[name].append(fit["accuracy"])
            ctx.metric("accuracy", fit["accuracy"], model=name.lower(), T=length)
            if "beyond" in fit:
                ctx.metric("accuracy_at_double_length", at_double_length(fit), model=name.lower(), T=length)
            if length == cfg.lengths[0]:
                ctx.metric("parameters", fit["parameters"], model=name.lower())
    chance = 1 / cfg.vocab
    ctx.table(
        f"Test accuracy recalling the first of T symbols (chance {chance:.3f})",
        ["T", *MODELS],
        [[t, *(round(accuracy[m][i], 4) for m in MODELS)] for i, t in enumerate(cfg.lengths)],
    )
    longest = cfg.lengths[-1]
    rnn, lstm, transformer = (accuracy[m][-1] for m in MODELS)
    ctx.claim(
        f"An Elman RNN fails where the dependency is long (T = {longest}); the LSTM and the "
        "Transformer do not",
        source=f"{NOTES}; inductive-bias slides, 'Have we handled all possible data structures?'; "
        "biaslab's target (RNN < 0.5, LSTM and Transformer >= 0.9)",
        expected="RNN < 0.5 while LSTM and Transformer >= 0.9 at the longest T",
        measured=f"RNN {rnn:.3f}, LSTM {lstm:.3f}, Transformer {transformer:.3f}",
        passed=rnn < 0.5 and min(lstm, transformer) >= 0.9,
        kind="finding",
        checked_in_quick=False,
    )
    probe_tokens, probe_targets = recall_task(256, longest, cfg.vocab, seed=ctx.seed_for("probe"))
    norms = {}
    for name in ("RNN", "LSTM"):
        fresh = ctx.init_model(lambda n=name: build(n, cfg, longest), f"{name.lower()}-probe")
        probe_steps = nn.functional.one_hot(probe_tokens, cfg.vocab).float()  # (256, T, vocab)
        norms[name] = gradient_by_step(fresh.model, probe_steps, probe_targets)
        ctx.metric("gradient_first_over_last", float(norms[name][0] / norms[name][-1]), model=name.lower())
    ratio = {name: float(norms[name][0] / norms[name][-1]) for name in norms}
    ctx.claim(
        f"The gradient reaching the first step of an untrained RNN has vanished at T = {longest}",
        source=f"{NOTES}; inductive-bias slides, 'In practice: Recurrent Neural Networks'; "
        "Tallec & Ollivier 2018 (chrono initialisation); biaslab's target (the ratio 1e-3)",
        expected="‖∂L/∂x_1‖ / ‖∂L/∂x_T‖ < 1e-3 for the RNN; >= 1e-3 for the chrono-initialised LSTM",
        measured=f"RNN {ratio['RNN']:.2e}, LSTM {ratio['LSTM']:.2e}",
        passed=ratio["RNN"] < 1e-3 <= ratio["LSTM"],
        kind="finding",
        checked_in_quick=False,
    )
    through_time(ctx, cfg, probe_tokens, probe_targets)
    unseen_lengths(ctx, cfg, fits)
    sequential_in_time(ctx, cfg)
    ctx.figure(
        "accuracy_vs_length",
        plots.curves(list(cfg.lengths), accuracy, "sequence length T", "test accuracy", reference=chance),
        "Test accuracy recalling the first of T symbols, against T; the dotted line is chance.",
    )
    steps = list(range(1, longest + 1))
    ylabel = "‖∂L/∂x_t‖ (untrained, mean over 256 sequences)"
    ctx.figure(
        "gradient_by_step",
        plots.curves(steps, {m: list(v) for m, v in norms.items()}, "input step t", ylabel, log_y=True),
        f"How much the loss at the end of a {longest}-step sequence depends on each input step, for "
        "an untrained Elman RNN and a chrono-initialised LSTM: the RNN's gradient decays "
        "geometrically towards the start.",
    )


def through_time(ctx, cfg: SequencesConfig, tokens: torch.Tensor, targets: torch.Tensor) -> None:
    """The gradient through time of a ReLU RNN with recurrent matrix ρI, for each ρ: it vanishes
    below ρ = 1 and explodes above, as ρ^(T−1) from the last input step to the first."""
    steps = nn.functional.one_hot(tokens, cfg.vocab).double()  # (N, T, vocab)
    length = steps.size(1)
    gain = {}
    for radius in cfg.radii:
        model = scaled_identity_rnn(
            cfg.vocab, cfg.hidden, cfg.vocab, radius, ctx.seed_for("radius", str(radius))
        )
        norms = gradient_by_step(model, steps, targets)  # (T,)
        gain[radius] = float(norms[0] / norms[-1])
        ctx.metric("gradient_first_over_last", gain[radius], model="relu_rnn", radius=radius)
    worst = max(abs(math.log(gain[r]) - (length - 1) * math.log(r)) for r in cfg.radii)
    ctx.table(
        f"‖∂L/∂x_1‖ / ‖∂L/∂x_T‖ of a ReLU RNN with recurrent matrix ρI, T = {length}",
        ["ρ", "measured", "ρ^(T−1)"],
        [[r, float(f"{gain[r]:.4g}"), float(f"{r ** (length - 1):.4g}")] for r in cfg.radii],
    )
    # inductive-bias slides, 'In practice: Recurrent Neural Networks': "Need to handle carefully
    # the backpropagation of gradients, can be exposed to vanishing/exploding ones". Along a
    # linear stretch the gradient is multiplied by the recurrent Jacobian once per step.
    ctx.claim(
        "Through time an RNN's gradient vanishes or explodes: multiplied by the recurrent matrix's "
        "spectral radius ρ at every step",
        source=f"inductive-bias slides, 'In practice: Recurrent Neural Networks'; {NOTES}; Pascanu et al. "
        "2013; biaslab's target (within 1e-9 in the logarithm, float64)",
        printed="can be exposed to vanishing/exploding ones",
        kind="check",
        expected="‖∂L/∂x_1‖ / ‖∂L/∂x_T‖ = ρ^(T−1) for every ρ (a ReLU RNN kept linear: all units active)",
        measured=", ".join(f"ρ = {r:g}: {gain[r]:.3g}" for r in cfg.radii) + f"; largest log gap {worst:.1e}",
        passed=worst <= 1e-9,
    )


def at_double_length(fit: dict) -> float:
    """A recurrent model's test accuracy at 2T, the last of its lengths beyond T (``BEYOND``)."""
    return fit["beyond"][-1][1]


def unseen_lengths(ctx, cfg: SequencesConfig, fits: dict) -> None:
    """Each recurrent model trained on length T, tested on 2T: the same weights run at every step,
    so nothing in the network is tied to the lengths it saw. The Transformer's learned position
    embeddings stop at T: it has no parameters for step T + 1."""
    rows = [
        [
            t,
            *(
                round(a, 4)
                for m in ("RNN", "LSTM")
                for a in (fits[m, t]["accuracy"], at_double_length(fits[m, t]))
            ),
        ]
        for t in cfg.lengths
    ]
    ctx.table(
        "Test accuracy at the training length T and at 2T, never seen in training (the Transformer's "
        "learned positions end at T)",
        ["T", "RNN at T", "RNN at 2T", "LSTM at T", "LSTM at 2T"],
        rows,
    )
    learned = [t for t in cfg.lengths if fits["LSTM", t]["accuracy"] >= 0.9]
    at_double = [at_double_length(fits["LSTM", t]) for t in learned]
    ctx.claim(
        "Sharing parameters over time generalises to lengths unseen in training: an LSTM trained on "
        "T recalls at 2T",
        source="ML-for-physics slides, 'What about time?'; lecture notes §5.2 (Sequences → RNNs); "
        "biaslab's target (>= 0.9 at 2T wherever it reached 0.9 at T)",
        printed="lengths unseen in training",
        expected="the LSTM's test accuracy at 2T >= 0.9 at every T where it reached 0.9",
        measured=(
            ", ".join(f"T = {t} → {2 * t}: {a:.3f}" for t, a in zip(learned, at_double))
            or "the LSTM reached 0.9 at no length"
        )
        + "; sharing lets a network run at any length, whether its rule holds there depends on what it "
        "learned",
        passed=bool(learned) and min(at_double) >= 0.9,
        kind="finding",
        checked_in_quick=False,
    )
    failed = [t for t, a in zip(learned, at_double) if a < 0.9]
    if failed:  # why: how the accuracy falls between T and 2T
        curves = {t: [a for _, a in fits["LSTM", t]["beyond"]] for t in failed}
        ctx.claim(
            "Where the LSTM fails at 2T its memory fades with the distance: the further beyond its "
            "training length, the less it recalls",
            source="lecture notes §5.2 (Sequences → RNNs); biaslab's target (accuracy falling from "
            f"{BEYOND[0]:g}T to 2T)",
            expected=f"accuracy at {', '.join(f'{f:g}T' for f in BEYOND)} falling, for each T where 2T fails",
            measured="; ".join(
                f"T = {t}: " + ", ".join(f"{f:g}T {a:.3f}" for f, a in zip(BEYOND, curves[t])) for t in failed
            ),
            passed=all(
                c[0] > c[-1] and all(a >= b for a, b in itertools.pairwise(c)) for c in curves.values()
            ),
            kind="finding",
            checked_in_quick=False,
        )


def sequential_in_time(ctx, cfg: SequencesConfig) -> None:
    """The longest chain of operations of each untrained model's forward pass against T
    (``evaluate.sequential_depth``): a recurrent network adds a fixed number per step, attention
    none. Beside it the forward pass's time on this machine."""
    depth: dict[str, list[int]] = {m: [] for m in MODELS}
    seconds: dict[str, list[float]] = {m: [] for m in MODELS}
    for length in cfg.timed_lengths:
        tokens, _ = recall_task(cfg.timing_batch, length, cfg.vocab, seed=ctx.seed_for("timing", str(length)))
        for name in MODELS:
            model = ctx.init_model(
                lambda n=name, t=length: build(n, cfg, t), f"{name.lower()}-timing", str(length)
            )
            chain, time = forward_cost(model, tokens, cfg.timing_repeats, ctx.device)  # tokens (N, T)
            depth[name].append(chain)
            seconds[name].append(time)
            ctx.metric("sequential_operations", chain, model=name.lower(), T=length)
    ctx.timing(
        **{f"{m.lower()}_T{t}_seconds": s for m in MODELS for t, s in zip(cfg.timed_lengths, seconds[m])}
    )
    lengths = cfg.timed_lengths
    per_step = {  # operations added per time step between consecutive lengths
        m: [(depth[m][i + 1] - depth[m][i]) / (lengths[i + 1] - lengths[i]) for i in range(len(lengths) - 1)]
        for m in MODELS
    }
    ctx.table(
        f"The forward pass against T: operations on its longest chain (each waits for the one before) "
        f"and seconds for {cfg.timing_batch} sequences on this machine",
        ["T", *(f"{m} operations" for m in MODELS), *(f"{m} seconds" for m in MODELS)],
        [
            [t, *(depth[m][i] for m in MODELS), *(float(f"{seconds[m][i]:.3g}") for m in MODELS)]
            for i, t in enumerate(cfg.timed_lengths)
        ],
        timing_columns=[f"{m} seconds" for m in MODELS],
    )
    recurrent_linear = all(len(set(per_step[m])) == 1 and per_step[m][0] >= 1 for m in ("RNN", "LSTM"))
    ctx.claim(
        "An RNN cannot be parallelised over time: its forward pass is a chain that grows by a fixed "
        "number of operations per step, while a Transformer's does not grow with T",
        source=f"{NOTES}; lecture notes §6 (Attention as a unifying primitive); biaslab's target (counted "
        "exactly on autograd's graph)",
        printed="without first computing h_1 through h_{99}",
        kind="check",
        expected="RNN and LSTM: the same number (>= 1) of operations added per step at every length; "
        "Transformer: none",
        measured="; ".join(
            f"{m} {depth[m][0]} → {depth[m][-1]} operations ({per_step[m][0]:g} per step)" for m in MODELS
        )
        + f" over T = {lengths[0]}-{lengths[-1]}",
        passed=recurrent_linear and set(per_step["Transformer"]) == {0.0},
    )
    law = {m: fit_power_law(lengths, seconds[m]) for m in MODELS}
    where = ctx.device if ctx.device != "cpu" else f"{torch.get_num_threads()} CPU threads"
    ctx.timing(**{f"{m.lower()}_time_exponent": law[m].exponent for m in MODELS})
    ctx.claim(
        "An RNN's time grows in proportion to the length of the sequence",
        source=f"{NOTES}; biaslab's target (the fitted exponent of time against T within [0.8, 1.3])",
        kind="finding",
        expected="the budget: RNN seconds ∝ T^k with k in [0.8, 1.3]",
        measured=f"RNN k = {law['RNN'].exponent:.2f}, LSTM {law['LSTM'].exponent:.2f} (the Transformer: "
        f"{law['Transformer'].exponent:.2f} on {where}: its T² products; the positions run side by side "
        "only on hardware with room for them all at once)",
        passed=0.8 <= law["RNN"].exponent <= 1.3,
        timing=True,
        checked_in_quick=False,
    )
    ctx.figure(
        "sequential_operations",
        plots.curves(
            list(lengths),
            {m: [float(d) for d in depth[m]] for m in MODELS},
            "sequence length T",
            "operations on the longest chain",
        ),
        "The longest chain of operations in each model's forward pass, each waiting for the one before: it "
        "grows with T for the recurrent networks and stays flat for the Transformer, whose positions are "
        "computed side by side.",
    )
