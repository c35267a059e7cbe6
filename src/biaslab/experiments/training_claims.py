"""The notes' claims about training: four slips an exact computation settles, and two costs measured.

The slips, each shown against the exact value and the library's own computation (the verdict
"the notes' figure is wrong" where they disagree): the update printed with a plus sign (a step up
the loss), batch norm dividing by the variance (output variance 1/σ², not 1), attention's scores
"divided by 1/√head_size" (multiplied by √d: variance d², not 1), and the noise σ² called an
optimisation error (the true function itself keeps it).

The costs: the backward pass against the forward, counted in operations by torch's
FlopCounterMode and timed, on the notes' MLP and the Day-5 CNN (each weight gets a gradient and
each layer but the first passes one to its input: twice the forward's products); and full-batch
gradient descent against minibatch SGD to the same training loss, counted in gradients of single
examples and in seconds (a full-batch step costs N/B minibatch steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from biaslab.config import check_range
from biaslab.data.mnist import MnistSizes, mnist_splits_for
from biaslab.data.synthetic import noisy_polynomial
from biaslab.evaluate.timing import backward_operations, time_forward_backward
from biaslab.nn import CNN, MLP
from biaslab.nn.attention import scaled_dot_product_attention
from biaslab.nn.normalization import BatchNorm
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.time_to_loss import time_to_loss

STEP = 0.1  # η of the update slip's one step
SPREAD = 3.0  # σ of the batch the normalisation slip normalises
HEAD = 64  # d, the head size of the attention slip
NOISE = 0.5  # σ of the noise slip's y = f(x) + ε
CUBIC = (0.0, 1.0, -2.0, 0.5)  # f(x) = x − 2x² + 0.5x³
CNN_RATIO = (1.8, 2.2)  # biaslab's target: the CNN's backward over forward operations
EXAMPLE_RATIO = (30, 300)  # biaslab's target: full batch over minibatch examples, "about 100x"


@dataclass(frozen=True)
class TrainingClaimsConfig:
    """The batch the step is timed on, and the race of full batch against minibatches."""

    data: MnistSizes = MnistSizes(n_train=10_000, n_val=1000, n_test=1000)
    step_batch: int = 256  # rows of the forward and backward passes timed
    repeats: int = 10  # the fastest of this many timings of each pass
    minibatch: int = 100  # B of minibatch SGD
    learning_rates: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0)  # each batch size tries these
    target_loss: float = 0.3  # the training loss both must reach
    max_examples: int = 3_000_000  # each run's budget, in gradients of single examples

    def __post_init__(self):
        check_range(self, "step_batch", 1, 65_536)
        check_range(self, "repeats", 1, 1000)
        check_range(self, "learning_rates", 0, 100, open_low=True)
        check_range(self, "target_loss", 0, 2.3, "a cross-entropy below chance's ln 10", open_low=True)
        check_range(self, "max_examples", 1)
        size, description = self.data.training_set()
        check_range(self, "minibatch", 1, size, f"at most the training set ({description})")


@experiment(
    name="training-claims",
    day=7,
    step=5,
    config=TrainingClaimsConfig,
    requires=("mnist",),
    title="The notes' claims about training: four slips, the backward pass, full batch",
    summary="the plus-sign update, batch norm by the variance, 1/√head_size and σ² as an optimisation "
    "error settled exactly; backward against forward (operations, seconds); full batch against minibatches",
    quick={
        "n_train": 1000,
        "step_batch": 32,
        "repeats": 2,
        "learning_rates": (0.3,),
        "target_loss": 1.0,
        "max_examples": 100_000,
    },
)
def run(ctx) -> None:
    slips(ctx)  # exact verdicts first: a run that has trained may not give them
    step_costs(ctx, ctx.cfg)
    full_batch(ctx, ctx.cfg)


def slips(ctx) -> None:
    """Four formulas the notes print wrong, each against the exact value and the library's."""
    source = "notes, Day 2 (gradient descent)"
    w = torch.tensor(1.0, requires_grad=True)  # J(w) = ½ w², J'(1) = 1
    optimizer = torch.optim.SGD([w], lr=STEP)
    (0.5 * w**2).backward()
    optimizer.step()  # torch's update: w ← w − η ∂J/∂w
    ctx.claim_exact(
        f"One gradient step (η = {STEP}) on J(w) = ½w² from w = 1 lowers J from 0.5 to 0.405",
        source=source,
        notes=f"{0.5 * (1 + STEP) ** 2:.6g}",  # the notes' W ← W + η ∂J/∂W: w = 1.1
        measured=float(0.5 * w.detach() ** 2),
        tolerance=1e-6,
        exact=lambda: 0.5 * (1 - STEP) ** 2,
        computation="w − η J'(w) = 1 − 0.1 = 0.9 and J = ½·0.81 = 0.405 (torch.optim.SGD's step); the "
        "notes' update W ← W + η ∂J/∂W gives w = 1.1 and J = 0.605 > 0.5: a step up the loss",
    )
    z = torch.linspace(-1, 1, 1001, dtype=torch.float64)
    x = (SPREAD * (z - z.mean()) / z.std(correction=0)).unsqueeze(1)  # (1001, 1): variance exactly σ²
    normed = BatchNorm(1).double().train()(x).detach()
    ctx.claim_exact(
        f"Batch norm's output has unit variance (a batch of variance {SPREAD**2:g})",
        source="notes, Day 2 (batch normalisation)",
        notes=f"{1 / SPREAD**2:.6g}",  # (x − μ)/σ² has variance σ²/σ⁴
        measured=float(normed.var(correction=0)),
        tolerance=1e-4,
        exact=lambda: 1.0,
        computation=f"(x − μ)/√(σ² + ε) has variance σ²/(σ² + ε) = 1 to 1e-6 (biaslab's BatchNorm); the "
        f"notes divide by the variance σ² instead, giving σ²/σ⁴ = 1/{SPREAD**2:g}",
    )
    gen = torch.Generator().manual_seed(ctx.seed_for("attention-scores"))
    q, k = (torch.randn(64, 512, HEAD, generator=gen, dtype=torch.float64) for _ in range(2))  # (B, T, d)
    _, weights = scaled_dot_product_attention(q, k, k, return_weights=True)  # (B, T, T)
    spread = float(weights.log().var(dim=-1).mean())  # log-softmax is the scores less a per-row constant
    ctx.claim_exact(
        f"Attention's scores Q Kᵀ/√d have variance 1 for unit-variance queries and keys (d = {HEAD})",
        source="notes, Day 4 (attention)",
        notes=str(HEAD**2),  # "divide by 1/√d": the scores times √d, variance d·d
        measured=round(spread, 2),
        tolerance=0.05,
        exact=lambda: 1.0,
        computation=f"q·k sums d products of variance 1: variance d, divided by √d: 1 (measured on the "
        f"library's weights: the variance over keys of log softmax equals the scores'); the notes' "
        f"'divides by 1/√head_size' multiplies by √d, variance d² = {HEAD**2}",
    )
    x, y = noisy_polynomial(n=1_000_000, coefficients=CUBIC, noise=NOISE, seed=ctx.seed_for("noise"))
    truth = np.polynomial.polynomial.polyval(x[:, 0].astype(np.float64), CUBIC)  # (n,): f(x), noise-free
    ctx.claim_exact(
        f"The noise term σ² = {NOISE**2:g} stays in the test error of the true function itself: "
        "no optimisation removes it",
        source="notes, Day 5 (bias–variance: σ² called an optimisation error)",
        notes="0",  # an optimisation error vanishes with perfect optimisation
        measured=round(float(np.mean((y - truth) ** 2)), 3),
        tolerance=0.005,
        exact=lambda: NOISE**2,
        computation="E[(y − f(x))²] = E[ε²] = σ² for the very function that made the data, the best any "
        "model and any optimiser can reach; an optimisation error would vanish with perfect optimisation",
    )


def step_costs(ctx, cfg) -> None:
    """The backward pass against the forward: in operations (counted) and in seconds (timed)."""
    gen = torch.Generator().manual_seed(ctx.seed_for("step-batch"))
    images = torch.randn(cfg.step_batch, 1, 28, 28, generator=gen)  # (B, 1, 28, 28)
    labels = torch.randint(0, 10, (cfg.step_batch,), generator=gen)
    models = {
        "MLP": ctx.init_model(lambda: MLP((784, 256, 10)), "step-mlp"),  # Day 1's 203,530 parameters
        "CNN": ctx.init_model(  # the Day 5 CNN
            lambda: CNN(1, (32, 64), 10, dims=2, pool="max", global_pool=None, input_size=28), "step-cnn"
        ),
    }
    rows, ratio = [], {}
    for name, model in models.items():
        model.to(ctx.device)
        batch = (images.to(ctx.device), labels.to(ctx.device))
        forward, backward = backward_operations(model, *batch, nn.functional.cross_entropy)
        seconds = time_forward_backward(model, *batch, nn.functional.cross_entropy, cfg.repeats)
        ratio[name] = backward / forward
        ctx.metric(**{f"{name.lower()}_backward_operations_ratio": ratio[name]})
        ctx.timing(**{f"{name.lower()}_backward_time_ratio": seconds[1] / seconds[0]})
        rows.append(
            [
                name,
                f"{forward:,}",
                f"{backward:,}",
                f"{ratio[name]:.3f}",
                f"{seconds[0] * 1e3:.2f}",
                f"{seconds[1] * 1e3:.2f}",
                f"{seconds[1] / seconds[0]:.2f}",
            ]
        )
    ctx.table(
        f"One training step's halves on a batch of {cfg.step_batch}: operations as torch's FlopCounterMode "
        "counts them, and the fastest of the timed passes",
        [
            "model",
            "forward operations",
            "backward operations",
            "ratio",
            "forward (ms)",
            "backward (ms)",
            "time ratio",
        ],
        rows,
        timing_columns=["forward (ms)", "backward (ms)", "time ratio"],
    )
    later = 256 * 10 / (784 * 256 + 256 * 10)  # the MLP's operations after its first layer, a share
    low, high = CNN_RATIO
    ctx.claim(
        "The backward pass costs about twice the forward (a training step about three times)",
        source="notes, Day 2 (the cost of backpropagation: backward ≈ 2–3x forward); Kaplan et al. 2020",
        expected=f"in operations: the CNN's ratio within [{low}, {high}] (each layer's gradients for its "
        "weights and for its input, but the first layer's input); the MLP's 1 + its later layers' share "
        f"= {1 + later:.4f}, exactly",
        measured=f"CNN {ratio['CNN']:.3f}, MLP {ratio['MLP']:.4f} (its first layer, {1 - later:.1%} of the "
        "work, needs no gradient for the pixels)",
        passed=low <= ratio["CNN"] <= high and math.isclose(ratio["MLP"], 1 + later, rel_tol=1e-9),
    )


def full_batch(ctx, cfg) -> None:
    """Full-batch gradient descent against minibatch SGD to the same training loss."""
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"), standardize=True)
    x, y = splits.x_train.to(ctx.device), splits.y_train.to(ctx.device)
    batches = {"minibatch": cfg.minibatch, "full batch": len(x)}
    rows, best = [], {}
    needed: dict[str, list[float]] = {name: [] for name in batches}  # examples to the target, per rate
    for name, size in batches.items():
        for lr in cfg.learning_rates:
            model = ctx.init_model(lambda: MLP((784, 256, 10)), "batch-mlp").to(ctx.device)  # one w₀
            run = time_to_loss(
                model,
                x,
                y,
                batch_size=size,
                lr=lr,
                target=cfg.target_loss,
                max_examples=cfg.max_examples,
                seed=ctx.seed_for("shuffle"),
            )
            rows.append(
                [
                    name,
                    size,
                    f"{lr:g}",
                    "yes" if run.reached else "no",
                    run.steps,
                    f"{run.examples:,}",
                    f"{run.seconds:.2f}",
                    f"{run.loss:.4f}",
                ]
            )
            needed[name].append(run.examples if run.reached else float("nan"))
            if run.reached and (name not in best or run.examples < best[name].examples):
                best[name] = run
    ctx.table(
        f"Plain SGD to a training loss of {cfg.target_loss:g} on {len(x):,} digits (the notes' 784-256-10 "
        "MLP, one initialisation): steps, gradients of single examples, and the seconds of the steps",
        ["batch", "size", "learning rate", "reached", "steps", "examples", "seconds", "last loss"],
        rows,
        timing_columns=["seconds"],
    )
    low, high = EXAMPLE_RATIO
    reached = len(best) == 2
    examples = best["full batch"].examples / best["minibatch"].examples if reached else float("nan")
    seconds = best["full batch"].seconds / best["minibatch"].seconds if reached else float("nan")
    ctx.metric(full_batch_examples_ratio=examples)
    ctx.timing(full_batch_time_ratio=seconds)
    ctx.claim(
        "Full-batch gradient descent is about 100x slower than minibatch SGD to the same loss",
        source="notes, Day 2 (stochastic gradient descent); biaslab's target",
        expected=f"gradients of single examples to the same training loss, each at its best learning rate of "
        f"the grid: full batch / minibatch within [{low}, {high}] (N/B = {len(x) // cfg.minibatch})",
        measured=f"{examples:.1f}x the examples; {seconds:.1f}x the seconds on this machine (a full batch "
        "uses the cores better per example)",
        passed=reached and low <= examples <= high,
        checked_in_quick=False,
    )
    ctx.figure(
        "examples_to_loss",
        plots.curves(
            list(cfg.learning_rates), needed, "learning rate", "examples to the loss", logx=True, log_y=True
        ),
        f"Gradients of single examples each run took to reach a training loss of {cfg.target_loss:g}, "
        f"against its learning rate (a gap: the run did not reach it within {cfg.max_examples:,}); "
        f"minibatches of {cfg.minibatch} against the full batch of {len(x):,}.",
    )
