"""Benchmark - your own data: which prior fits it? (``biaslab compare DATA``)

The decision guide (Day 4) offers the architectures whose priors can fit the data's kind (a
table: gradient-boosted trees and an MLP; images: MLP, CNN, CNN + augmentation; sequences; sets),
your own models join them (``--model module:factory``), and one protocol judges them all alike
(Day 5, ``biaslab.comparison.protocol``): one seeded split, statistics from the training rows
only, the epoch and the temperature chosen on validation, the test rows read once, a learning
curve per candidate with its power law. ``decide`` then turns each candidate's evidence into a
verdict (ship, collect more data, redesign) against the use's requirements, and the candidate
with the best validation score is recommended, never the best on test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from biaslab.comparison.protocol import fit_candidate, learning_curve, prepare
from biaslab.comparison.symmetry_report import explain, fitting_symmetries, symmetry_report, symmetry_table
from biaslab.config import check_range
from biaslab.data.demo_sets import demo_set, is_demo_set, load_data
from biaslab.errors import ConfigError, DivergenceError
from biaslab.evaluate.decision import Evidence, RegressionEvidence, decide
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining, training_without

CHECK_ROWS = 4  # rows a user's factory is tried on before any training

CompareTraining = training_without(
    "CompareTraining",
    ClassifierTraining,
    monitor="the protocol keeps the epoch of the best validation accuracy (classify) or loss (regress)",
    restore_best="the protocol always keeps the best validation epoch",
)


@dataclass(frozen=True)
class Requirements:
    """What the use requires of a model, for ``decide``: a classifier's test accuracy and
    calibration (ECE after temperature scaling), a regression's test MAE as a share of the mean
    predictor's."""

    min_accuracy: float = 0.95
    max_ece: float = 0.05
    max_relative_error: float = 0.5

    def __post_init__(self):
        check_range(self, "min_accuracy", 0.0, 1.0)
        check_range(self, "max_ece", 0.0, 1.0)
        check_range(self, "max_relative_error", 0.0, 1.0)

    def for_task(self, task: str) -> dict[str, float]:
        """``decide``'s keyword arguments for ``task``."""
        if task == "classify":
            return {"min_accuracy": self.min_accuracy, "max_ece": self.max_ece}
        return {"max_relative_error": self.max_relative_error}

    def text(self, task: str) -> str:
        if task == "classify":
            return (
                f"test accuracy >= {self.min_accuracy:g}, ECE after temperature scaling <= {self.max_ece:g}"
            )
        return f"test MAE <= {self.max_relative_error:g} x the mean predictor's"


@dataclass(frozen=True)
class CompareConfig:
    """The data, the candidates, the shared training and the use's requirements."""

    data: str = "sklearn:digits"  # a file or folder, or a demo set: sklearn:digits, ...
    target: str = ""  # a table's label column
    task: Literal["auto", "classify", "regress"] = "auto"
    kind: Literal["auto", "table", "image", "sequence", "set"] = "auto"
    models: tuple[str, ...] | None = None  # the guide's candidates to keep; None: all it offers
    model: tuple[str, ...] | None = None  # your own models, module:factory or file.py:factory
    train: CompareTraining = CompareTraining(epochs=30, lr=1e-3, batch_size=64)  # noqa: RUF009
    require: Requirements = Requirements()
    curve_points: int = 4  # training-set sizes N/2**k of each learning curve
    curve_seeds: int = 2  # subsets and trainings per size
    symmetries: bool = True  # probe the data's symmetries: one more MLP training per probe

    def __post_init__(self):
        check_range(self, "curve_points", 1, 10)
        check_range(self, "curve_seeds", 1, 10)
        if is_demo_set(self.data) and self.task == self.kind == "auto" and not (self.models or self.model):
            demo_set(self.data)  # a known demo set is good data: nothing read yet (fast config)
            return
        candidates(self, read(self))  # read now: bad data is one line before any folder is written


def read(cfg: CompareConfig):
    """The data set the config names (read once: the config's check and the run share it)."""
    auto = lambda value: None if value in ("", "auto") else value  # noqa: E731
    return load_data(cfg.data, target=auto(cfg.target), task=auto(cfg.task), kind=auto(cfg.kind))


def candidates(cfg: CompareConfig, data) -> list:
    """The guide's candidates for the data (those ``models`` names), then the user's models,
    each user model tried on a few rows."""
    from biaslab.comparison.candidates import candidates_for, check_candidate, user_candidate

    offered = candidates_for(data.kind, task=data.task)
    chosen = offered
    if cfg.models:
        by_name = {slug(c.name): c for c in offered}
        unknown = [m for m in cfg.models if slug(m) not in by_name]
        if unknown:
            raise ConfigError(
                f"models={','.join(cfg.models)}: no candidate {', '.join(unknown)} for {data.kind} data; "
                f"choose from {', '.join(c.name for c in offered)}"
            )
        chosen = [by_name[slug(m)] for m in dict.fromkeys(cfg.models)]
    n_outputs = data.n_classes if data.task == "classify" else 1
    mask = None if data.mask is None else data.mask[:CHECK_ROWS]
    own = [user_candidate(spec) for spec in cfg.model or ()]
    for candidate in own:
        check_candidate(candidate, data.x[:CHECK_ROWS], n_outputs, data.task, mask)
    return chosen + own


def slug(name: str) -> str:
    """A candidate's name in metric keys and training tags: ``CNN + augmentation`` -> ``cnn-augmentation``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "model"


@experiment(
    name="compare",
    day=6,
    step=2,
    config=CompareConfig,
    title="Your own data: which prior fits it?",
    summary="The decision guide's architectures and your own models on your data: one protocol, verdicts",
    quick={"epochs": 8, "curve_points": 2, "curve_seeds": 1},
    full={"epochs": 100, "patience": 15, "curve_points": 5, "curve_seeds": 3},
)
def run(ctx) -> None:
    cfg: CompareConfig = ctx.cfg
    data = read(cfg)
    task = data.task
    chosen = candidates(cfg, data)
    _data_table(ctx, data, chosen)

    prepared = prepare(data, seed=ctx.seed_for("split"))
    config = cfg.train.training()
    seeds = tuple(range(cfg.curve_seeds))
    verdicts = {}
    for candidate in chosen:
        tag = slug(candidate.name)
        ctx.echo(f"{candidate.name}: training and learning curve")
        try:
            result = fit_candidate(candidate, prepared, task, config, ctx.training(tag))
            curve = learning_curve(
                candidate, prepared, task, config,
                lambda size, seed, tag=tag: ctx.training(f"{tag}-{size}-{seed}"),
                points=cfg.curve_points, seeds=seeds,
            )  # fmt: skip
        except DivergenceError as exc:
            verdicts[candidate.name] = (candidate, None, None, None, str(exc))
            ctx.echo(f"{candidate.name}: diverged")
            continue
        decision = decide(_evidence(task, result, curve), **cfg.require.for_task(task))
        verdicts[candidate.name] = (candidate, result, curve, decision, "")
        _metrics(ctx, tag, task, result, curve)
        ctx.echo(f"{candidate.name}: {_headline(task, result)}; {decision.verdict}")

    _leaderboard(ctx, task, verdicts, len(seeds))
    _curves_figure(ctx, task, verdicts, cfg.require)
    symmetries = _symmetries(ctx, prepared, config, verdicts) if cfg.symmetries else None
    _claims(ctx, task, verdicts, cfg.require)
    _recommend(ctx, task, verdicts, symmetries)


def _symmetries(ctx, prepared, config, verdicts):
    """The data's own symmetries (Day 4: a prior fits when the data have the symmetry it
    assumes): for each transformation a prior of this kind could assume, does the label survive
    it (the guide's MLP trained with it as augmentation), and which trained candidate is
    invariant to it (the symmetry verifier)? The MLP trained as a candidate is reused."""
    from biaslab.comparison.candidates import candidates_for

    reference = next(c for c in candidates_for("table", task=prepared.task) if c.name == "MLP")
    trained = {name: v[1] for name, v in verdicts.items() if v[1] is not None}
    mlp = verdicts.get(reference.name)
    reused = mlp is not None and mlp[0].build is reference.build and mlp[1] is not None
    tag = slug(reference.name) if reused else "symmetry-reference"
    setup = ctx.training(tag)
    ctx.echo("symmetries: the label under each transformation, each model's invariance")
    report = symmetry_report(
        prepared, reference, {name: r.fitted for name, r in trained.items()}, config, setup,
        plain=mlp[1] if reused else None,
        augmented_setup=lambda probe: replace(ctx.training(f"{tag}-{slug(probe.name)}"), seed=setup.seed),
    )  # fmt: skip
    for finding in report.findings:
        probe = slug(finding.probe.name)
        ctx.metric(**{f"label_survives_{probe}": finding.survival.survives})
        ctx.metric(**{f"augmentation_cost_{probe}": round(finding.survival.cost, 4)})
        ctx.metric(
            **{f"{slug(n)}_invariance_{probe}": float(f"{e:.3g}") for n, e in finding.invariance.items()}
        )
    columns, rows = symmetry_table(report)
    ctx.table("Symmetries of your data", columns, rows)
    ctx.table("Which prior fits, and why", ["finding"], [[sentence] for sentence in explain(report)])
    return report


def _evidence(task, result, curve):
    if task == "classify":
        return Evidence(
            train_sizes=curve.sizes,
            val_errors=curve.val_errors,
            accuracy=result.test["accuracy"],
            ece=result.test["ece_after_temperature"],
        )
    return RegressionEvidence(
        train_sizes=curve.sizes,
        val_errors=curve.val_errors,
        test_error=result.test["mae"],
        baseline_error=result.test["baseline_mae"],
        metric="MAE",
    )


def _headline(task, result) -> str:
    if task == "classify":
        return f"test accuracy {result.test['accuracy']:.3f}"
    return f"test MAE {result.test['mae']:.4g} (mean predictor {result.test['baseline_mae']:.4g})"


def _metrics(ctx, tag, task, result, curve) -> None:
    measures = ("accuracy", "ece", "ece_after_temperature") if task == "classify" else ("mae", "rmse")
    ctx.metric(**{f"{tag}_test_{k}": round(result.test[k], 6) for k in measures})
    ctx.metric(**{f"{tag}_val_{k}": round(v, 6) for k, v in result.val.items()})
    if task == "regress":
        ctx.metric(test_baseline_mae=round(result.test["baseline_mae"], 6))
    if curve.power_law is not None:
        ctx.metric(**{f"{tag}_curve_exponent": round(curve.power_law.exponent, 4)})
    ctx.timing(**{f"{tag}_train": result.train_seconds})


def _data_table(ctx, data, chosen) -> None:
    task = f"classify into {data.n_classes} classes" if data.task == "classify" else "regress"
    rows = [
        ["data", data.source],
        ["kind", data.kind],
        ["task", task],
        ["examples", len(data)],
        ["candidates", ", ".join(c.name for c in chosen)],
        *(["note", note] for note in data.notes),
    ]
    ctx.table("Your data", ["", "value"], rows)


def _score(task, result) -> tuple[float, ...]:
    """The validation score the recommendation ranks by (higher is better; a tie in accuracy
    goes to the lower validation loss)."""
    if task == "classify":
        return result.val["accuracy"], -result.val["loss"]
    return (-result.val["mae"],)


def _leaderboard(ctx, task, verdicts, n_seeds) -> None:
    if task == "classify":
        measures = ["validation accuracy", "test accuracy", "test ECE after temperature"]
    else:
        measures = ["validation MAE", "test MAE", "test MAE / mean predictor's"]
    curve_column = f"validation error, all rows ({n_seeds} seed{'s' * (n_seeds > 1)})"
    columns = ["model", "prior", "parameters", *measures, curve_column, "train seconds", "verdict"]
    rows = []
    for name, (candidate, result, curve, decision, diverged) in verdicts.items():
        if result is None:
            rows.append([name, candidate.prior, "-", "-", "-", "-", "-", "-", f"diverged: {diverged}"])
            continue
        val, test = result.val, result.test
        if task == "classify":
            values = [val["accuracy"], test["accuracy"], test["ece_after_temperature"]]
        else:
            values = [val["mae"], test["mae"], test["mae"] / test["baseline_mae"]]
        mean, std = curve.val_errors[-1], curve.val_errors_std[-1]
        spread = f"{mean:.4g} ± {std:.2g}" if n_seeds > 1 else f"{mean:.4g}"
        parameters = "-" if result.parameters is None else result.parameters
        verdict = f"{decision.verdict} (rule {decision.rule})"
        rows.append(
            [
                name,
                candidate.prior,
                parameters,
                *(round(v, 4) for v in values),
                spread,
                round(result.train_seconds, 2),
                verdict,
            ]
        )
    ctx.table("Leaderboard", columns, rows, timing_columns=["train seconds"])


def _curves_figure(ctx, task, verdicts, require) -> None:
    if all(result is None for _, result, *_ in verdicts.values()):
        return
    lines = {}
    for name, (_, result, curve, _, _) in verdicts.items():
        if result is None:
            continue
        measured = [(n, e) for n, e in zip(curve.sizes, curve.val_errors) if e > 0]
        lines[name] = {"": tuple(zip(*measured))} if measured else {}
        if curve.power_law is not None:
            sizes = [*curve.sizes, *curve.extrapolated]
            lines[name]["power law, to 4x the data"] = (sizes, list(curve.power_law(sizes)))
    if task == "classify":
        target = 1 - require.min_accuracy
    else:  # the requirement as an MAE: a share of the mean predictor's
        baseline = next(r.test["baseline_mae"] for _, r, *_ in verdicts.values() if r is not None)
        target = require.max_relative_error * baseline
    unit = "error rate (1 - accuracy)" if task == "classify" else "MAE"
    ctx.figure(
        "learning_curves",
        plots.error_vs_data({n: v for n, v in lines.items() if v}, target=target),
        f"Validation {unit} against training examples, log-log, with each candidate's power law "
        "extended dashed to 4x the training set; the grey line is the requirement.",
    )


def _claims(ctx, task, verdicts, require) -> None:
    expected = f"ship: {require.text(task)}"
    for name, (_, result, _, decision, diverged) in verdicts.items():
        measured = f"diverged: {diverged}" if result is None else (
            f"{decision.verdict} (rule {decision.rule}): {decision.reason}"
        )  # fmt: skip
        ctx.claim(
            f"{name} meets the use's requirements",
            expected=expected,
            measured=measured,
            passed=result is not None and decision.verdict == "ship",
            source="lab design: Day 5's decision rules on the protocol's evidence",
            checked_in_quick=False,
        )


def _recommend(ctx, task, verdicts, symmetries=None) -> None:
    fitted = {n: v for n, v in verdicts.items() if v[1] is not None}
    if not fitted:
        ctx.table("Recommendation", ["recommendation"], [["every candidate diverged: lower lr"]])
        return
    best = max(fitted, key=lambda n: _score(task, fitted[n][1]))
    result, decision = fitted[best][1], fitted[best][3]
    measure = "validation accuracy" if task == "classify" else "validation MAE"
    value = result.val["accuracy"] if task == "classify" else result.val["mae"]
    sentence = (
        f"{best}: the best {measure} ({value:.4g}); its verdict: {decision.verdict} ({decision.reason})"
    )
    fits = [] if symmetries is None else fitting_symmetries(symmetries, best)
    if fits:
        survives = " and ".join(fits)
        sentence += (
            f". Its prior fits your data: the label survives {survives}, and {best} is invariant to it"
        )
    ctx.table("Recommendation", ["recommendation"], [[sentence]])
    ctx.echo(f"recommended: {sentence}")


def compare(
    data: str,
    *,
    target: str | None = None,
    task: str | None = None,
    kind: str | None = None,
    models=(),
    model=(),
    profile: str = "default",
    seed: int = 0,
    out=None,
    device: str | None = None,
    overrides: dict | None = None,
    **run_options,
):
    """Compare the decision guide's architectures (and your own) on your data: ``biaslab compare``.

    Example::

        result = biaslab.compare("sklearn:digits", profile="quick")
        result.metrics["cnn_test_accuracy"]

    Args:
        data: a file or folder (CSV / TSV / Parquet table, NPZ arrays, a folder of class
            subfolders of images) or a demo set: ``sklearn:digits``, ``sklearn:digits-table``,
            ``sklearn:wine``, ``sklearn:diabetes``.
        target: a table's label column.
        task, kind: ``classify`` / ``regress``; ``table`` / ``image`` / ``sequence`` / ``set``
            (None: inferred, as the report's "Your data" table says).
        models: the guide's candidates to keep, by name (empty: all of them).
        model: your own models, ``"module:factory"`` or ``"file.py:factory"``.
        profile, seed, out, device: as for :func:`biaslab.run`; ``overrides`` any other config key
            (``{"epochs": 50}``), ``run_options`` the rest of :func:`biaslab.run`'s keywords.

    Returns:
        The run's :class:`~biaslab.report.display.Result`.
    """
    from biaslab.runner import run as run_lab

    keys = {"data": data, "target": target, "task": task, "kind": kind}
    keys = {k: v for k, v in keys.items() if v is not None}
    keys |= {"models": tuple(models)} if models else {}
    keys |= {"model": tuple(model)} if model else {}
    return run_lab(
        "compare", {**(overrides or {}), **keys}, profile=profile, seed=seed, out=out, device=device,
        **run_options,
    )  # fmt: skip
