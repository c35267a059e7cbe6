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

from biaslab.comparison.judged import Judged, Requirements, leaderboard, recommendation
from biaslab.comparison.protocol import fit_candidate, learning_curve, prepare
from biaslab.comparison.symmetry_report import explain, symmetry_report, symmetry_table
from biaslab.config import check_range
from biaslab.data.demo_sets import demo_set, is_demo_set, load_data
from biaslab.errors import ConfigError, DivergenceError
from biaslab.evaluate.decision import Evidence, RegressionEvidence, decide
from biaslab.evaluate.ood import MSP, auroc
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining, training_without

CHECK_ROWS = 4  # rows a user's factory is tried on before any training
SPLIT_WORDS = {
    "random": "random, stratified by class",
    "scaffold": "by Murcko scaffold: no scaffold in two splits (Bemis & Murcko 1996)",
}

CompareTraining = training_without(
    "CompareTraining",
    ClassifierTraining,
    monitor="the protocol keeps the epoch of the best validation accuracy (classify) or loss (regress)",
    restore_best="the protocol always keeps the best validation epoch",
)


@dataclass(frozen=True)
class CompareConfig:
    """The data, the candidates, the shared training and the use's requirements."""

    data: str = "sklearn:digits"  # a file or folder, or a demo set: sklearn:digits, ...
    target: str = ""  # a table's label column
    task: Literal["auto", "classify", "regress"] = "auto"
    kind: Literal["auto", "table", "image", "sequence", "set", "graph", "molecule"] = "auto"
    split: Literal["random", "scaffold"] = "random"  # random: stratified by class; scaffold: molecules
    models: tuple[str, ...] | None = None  # the guide's candidates to keep; None: all it offers
    model: tuple[str, ...] | None = None  # your own models, module:factory or file.py:factory
    ood: str = ""  # an .npz of inputs the models were not made for (x, as DATA's): can they flag them?
    train: CompareTraining = CompareTraining(epochs=30, lr=1e-3, batch_size=64)  # noqa: RUF009
    require: Requirements = Requirements()  # noqa: RUF009 - frozen: one shared default is safe
    curve_points: int = 4  # training-set sizes N/2**k of each learning curve
    curve_seeds: int = 2  # subsets and trainings per size
    symmetries: bool = True  # probe the data's symmetries: one more MLP training per probe

    def __post_init__(self):
        check_range(self, "curve_points", 1, 10)
        check_range(self, "curve_seeds", 1, 10)
        plain = self.task == self.kind == "auto" and self.split == "random"
        plain = plain and not (self.models or self.model or self.ood)
        if is_demo_set(self.data) and plain:
            demo_set(self.data)  # a known demo set is good data: nothing read yet (fast config)
            return
        data = read(self)  # read now: bad data is one line before any folder is written
        if self.split == "scaffold" and data.kind != "molecule":
            raise ConfigError(f"split=scaffold groups molecules by their scaffold; this is {data.kind} data")
        candidates(self, data)
        read_ood(self, data)


def read(cfg: CompareConfig):
    """The data set the config names (read once: the config's check and the run share it)."""
    auto = lambda value: None if value in ("", "auto") else value  # noqa: E731
    return load_data(cfg.data, target=auto(cfg.target), task=auto(cfg.task), kind=auto(cfg.kind))


def read_ood(cfg: CompareConfig, data):
    """The OOD inputs the config names (None without), checked against the data: a classifier's
    confidence is what flags them, so a regression takes none."""
    if not cfg.ood:
        return None
    if data.task != "classify":
        raise ConfigError(
            "ood: OOD inputs are flagged by a classifier's confidence (max softmax probability); "
            "this data is a regression"
        )
    from biaslab.data.user_ood import load_ood_inputs

    return load_ood_inputs(cfg.ood, data)


def candidates(cfg: CompareConfig, data) -> list:
    """The guide's candidates for the data (those ``models`` names), then the user's models,
    each user model tried on a few rows."""
    from biaslab.comparison.candidates import candidates_for
    from biaslab.comparison.user_models import check_candidate, check_graph_candidate, user_candidate

    offered = candidates_for(data.kind, task=data.task, has_positions=data.positions is not None)
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
    mask = None if data.mask is None else data.mask[:CHECK_ROWS]
    own = [user_candidate(spec) for spec in cfg.model or ()]
    if data.x is None:  # graphs and molecules: a user's model reads a batch of graphs
        from biaslab.comparison.graph_store import UNREADABLE_ADVICE, sample_batch, unreadable_molecule

        graph_models = [c.name for c in chosen if c.reads in ("graph", "geometry")] + [c.name for c in own]
        unreadable = unreadable_molecule(data) if data.kind == "molecule" and graph_models else None
        if unreadable:
            raise ConfigError(
                f"{unreadable}; {', '.join(graph_models)} read the notes' atom features (H, C, N, O, F): "
                f"{UNREADABLE_ADVICE}"
            )

        reads = "geometry" if data.positions is not None else "graph"
        own = [replace(candidate, reads=reads) for candidate in own]
        batch = sample_batch(data, CHECK_ROWS) if own else None
        for candidate in own:
            check_graph_candidate(candidate, batch, data.n_outputs, data.task)
        return chosen + own
    for candidate in own:
        check_candidate(candidate, data.x[:CHECK_ROWS], data.n_outputs, data.task, mask)
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
    _data_table(ctx, data, chosen, cfg.split)

    prepared = prepare(data, seed=ctx.seed_for("split"), split=cfg.split)
    ood = read_ood(cfg, data)
    ood_x = None if ood is None else prepared.standardize(ood.x, ood.mask)
    config = cfg.train.training()
    seeds = tuple(range(cfg.curve_seeds))
    judged: dict[str, Judged] = {}
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
            judged[candidate.name] = Judged(candidate, diverged=str(exc))
            ctx.echo(f"{candidate.name}: diverged")
            continue
        ood_auroc = None if ood_x is None else _ood_auroc(result, prepared, *ood_x)
        decision = decide(_evidence(task, result, curve, ood_auroc), **cfg.require.for_task(task))
        judged[candidate.name] = Judged(candidate, result, curve, decision, ood_auroc=ood_auroc)
        _metrics(ctx, tag, task, result, curve)
        if ood_auroc is not None:
            ctx.metric(**{f"{tag}_ood_auroc": round(ood_auroc, 6)})
        ctx.echo(f"{candidate.name}: {_headline(task, result)}; {decision.verdict}")

    ctx.table("Leaderboard", *leaderboard(task, judged, len(seeds)), timing_columns=["train seconds"])
    _curves_figure(ctx, task, judged, cfg.require)
    probed = cfg.symmetries and data.x is not None  # graph models are permutation invariant by build
    symmetries = _symmetries(ctx, prepared, config, judged) if probed else None
    _claims(ctx, task, judged, cfg.require, ood is not None)
    sentence = recommendation(task, judged, symmetries)
    ctx.table("Recommendation", ["recommendation"], [[sentence]])
    ctx.echo(f"recommended: {sentence}")


def _symmetries(ctx, prepared, config, judged):
    """The data's own symmetries (Day 4: a prior fits when the data have the symmetry it
    assumes): for each transformation a prior of this kind could assume, does the label survive
    it (the guide's MLP trained with it as augmentation), and which trained candidate is
    invariant to it (the symmetry verifier)? The MLP trained as a candidate is reused."""
    from biaslab.comparison.candidates import candidates_for
    from biaslab.comparison.probes import probes_for

    probes = probes_for(prepared.kind, prepared.input_shape)
    if not probes:  # tables: none that can tell
        return None
    reference = next(c for c in candidates_for("table", task=prepared.task) if c.name == "MLP")
    trained = {name: j.result.fitted for name, j in judged.items() if j.result is not None}
    mlp = judged.get(reference.name)
    reused = mlp is not None and mlp.candidate.build is reference.build and mlp.result is not None
    tag = slug(reference.name) if reused else "symmetry-reference"
    setup = ctx.training(tag)
    ctx.echo("symmetries: the label under each transformation, each model's invariance")
    report = symmetry_report(
        prepared, reference, trained, config, setup, probes=probes,
        plain=mlp.result if reused else None,
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


def _ood_auroc(result, prepared, x, mask) -> float:
    """How well the candidate's confidence flags the OOD inputs among the test rows: the AUROC of
    the max-softmax-probability detector (Hendrycks & Gimpel 2017), the one every classifier has."""
    detector = MSP()
    inside = detector.score(result.fitted.outputs_on(prepared, "test"))
    outside = detector.score(result.fitted.outputs(x, mask))
    return auroc(inside, outside)


def _evidence(task, result, curve, ood_auroc=None):
    if task == "classify":
        return Evidence(
            train_sizes=curve.sizes,
            val_errors=curve.val_errors,
            accuracy=result.test["accuracy"],
            ece=result.test["ece_after_temperature"],
            ood_auroc=ood_auroc,
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


def _data_table(ctx, data, chosen, split) -> None:
    task = f"classify into {data.n_classes} classes" if data.task == "classify" else "regress"
    rows = [
        ["data", data.source],
        ["kind", data.kind],
        ["task", task],
        ["examples", len(data)],
        ["candidates", ", ".join(c.name for c in chosen)],
        ["split", SPLIT_WORDS[split] if data.task == "classify" or split != "random" else "random"],
        *(["note", note] for note in data.notes),
    ]
    ctx.table("Your data", ["", "value"], rows)


def _curves_figure(ctx, task, judged, require) -> None:
    fitted = {name: j for name, j in judged.items() if j.result is not None}
    if not fitted:
        return
    lines = {}
    for name, j in fitted.items():
        curve = j.curve
        measured = [(n, e) for n, e in zip(curve.sizes, curve.val_errors) if e > 0]
        lines[name] = {"": tuple(zip(*measured))} if measured else {}
        if curve.power_law is not None:
            sizes = [*curve.sizes, *curve.extrapolated]
            lines[name]["power law, to 4x the data"] = (sizes, list(curve.power_law(sizes)))
    if task == "classify":
        target = 1 - require.min_accuracy
    else:  # the requirement as an MAE: a share of the mean predictor's
        baseline = next(iter(fitted.values())).result.test["baseline_mae"]
        target = require.max_relative_error * baseline
    unit = "error rate (1 - accuracy)" if task == "classify" else "MAE"
    ctx.figure(
        "learning_curves",
        plots.error_vs_data({n: v for n, v in lines.items() if v}, target=target),
        f"Validation {unit} against training examples, log-log, with each candidate's power law "
        "extended dashed to 4x the training set; the grey line is the requirement.",
    )


def _claims(ctx, task, judged, require, ood=False) -> None:
    expected = f"ship: {require.text(task, ood)}"
    for name, j in judged.items():
        decision = j.decision
        measured = f"diverged: {j.diverged}" if j.result is None else (
            f"{decision.verdict} (rule {decision.rule}): {decision.reason}"
        )  # fmt: skip
        ctx.claim(
            f"{name} meets the use's requirements",
            expected=expected,
            measured=measured,
            passed=j.result is not None and decision.verdict == "ship",
            source="lab design: Day 5's decision rules on the protocol's evidence",
            checked_in_quick=False,
        )


def compare(
    data: str,
    *,
    target: str | None = None,
    task: str | None = None,
    kind: str | None = None,
    models=(),
    model=(),
    ood: str | None = None,
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
        ood: an ``.npz`` of inputs the models were not made for (``x`` shaped as the data's):
            each classifier's OOD AUROC joins its verdict.
        profile, seed, out, device: as for :func:`biaslab.run`; ``overrides`` any other config key
            (``{"epochs": 50}``), ``run_options`` the rest of :func:`biaslab.run`'s keywords.

    Returns:
        The run's :class:`~biaslab.report.display.Result`.
    """
    from biaslab.runner import run as run_lab

    keys = {"data": data, "target": target, "task": task, "kind": kind, "ood": ood}
    keys = {k: v for k, v in keys.items() if v is not None}
    keys |= {"models": tuple(models)} if models else {}
    keys |= {"model": tuple(model)} if model else {}
    return run_lab(
        "compare", {**(overrides or {}), **keys}, profile=profile, seed=seed, out=out, device=device,
        **run_options,
    )  # fmt: skip
