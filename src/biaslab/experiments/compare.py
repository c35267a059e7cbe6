"""Benchmark - your own data: which prior fits it? (``biaslab compare DATA``)

The decision guide (the workshop book's Day 4, §4.7 "Choosing an architecture: the matching
exercise") offers the architectures whose priors can fit the data's kind (a table:
gradient-boosted trees and an MLP; images: MLP, CNN, CNN + augmentation; sequences; sets), your
own models join them (``--model module:factory``), and one protocol judges them all alike (the
workshop book's Day 5, ``biaslab.comparison.protocol``): one seeded split, statistics from the
training rows only, the epoch and the temperature chosen on validation, the test rows read once,
a learning curve per candidate with its power law. ``decide`` then turns each candidate's
evidence into a verdict (ship, collect more data, redesign: the workshop book §5.7) against the
use's requirements, whose default thresholds are biaslab's (no document prints them), and the
candidate with the best validation score is recommended, never the best on test.

The lab holds its config and its report; the fits are the tasks of
:mod:`biaslab.comparison.study_fits`, and the trained candidates are saved for
:class:`~biaslab.comparison.study.Comparison` (``biaslab predict``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from biaslab.comparison import study_fits as fits
from biaslab.comparison.candidates import slug
from biaslab.comparison.judged import (
    LEADERBOARD,
    PREDICT_COLUMN,
    RECOMMENDATION,
    Judged,
    Requirements,
    headline,
    leaderboard,
    recommendation,
    recommended,
)
from biaslab.comparison.seeds import over_seeds
from biaslab.comparison.symmetry_report import explain, symmetry_table
from biaslab.config import check_range
from biaslab.data.demo_sets import demo_set, is_demo_set
from biaslab.errors import ConfigError
from biaslab.formatting import parse_duration
from biaslab.registry import experiment
from biaslab.report import plots
from biaslab.train.config import ClassifierTraining, training_without

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
    time_limit: str = ""  # the study's wall-clock budget (90s, 10m, 1h) shared by its trainings; "": none
    val_splits: int = 0  # validation splits each candidate is scored on; 0: 5 below 2,000 examples, else 1

    def __post_init__(self):
        check_range(self, "curve_points", 1, 10)
        check_range(self, "curve_seeds", 1, 10)
        check_range(self, "val_splits", 0, 20)
        if self.time_limit:
            try:
                parse_duration(self.time_limit)
            except ValueError as exc:
                raise ConfigError(f"time_limit: {exc}") from None
        plain = self.task == self.kind == "auto" and self.split == "random"
        plain = plain and not (self.models or self.model or self.ood)
        if is_demo_set(self.data) and plain:
            demo_set(self.data)  # a known demo set is good data: nothing read yet (fast config)
            return
        from biaslab.comparison import study_fits  # torch: not for a demo set's fast config

        data = study_fits.read(self)  # read now: bad data is one line before any folder is written
        if self.split == "scaffold" and data.kind != "molecule":
            raise ConfigError(f"split=scaffold groups molecules by their scaffold; this is {data.kind} data")
        study_fits.candidates(self, data)
        study_fits.read_ood(self, data)

    def val_splits_of(self) -> int:
        """The validation splits of this comparison (:func:`~biaslab.comparison.resampling.repeats_for`)."""
        from biaslab.comparison.resampling import repeats_for
        from biaslab.comparison.study_fits import read

        data = read(self)
        return repeats_for(len(data), data.kind, self.val_splits)

    def input_files(self) -> dict[str, str]:
        """The files this comparison reads, by label: the data (not a demo set), each model given as
        a file (an installed module is fixed by its package), the OOD set. A run records their
        digests and ``--resume`` refuses one that changed (``biaslab.inputs``)."""
        from biaslab.comparison.user_models import factory_file  # torch: at a run's start only

        files = {} if is_demo_set(self.data) else {"data": self.data}
        for spec in self.model or ():
            path = factory_file(spec)
            if path is not None:
                files[f"model {spec}"] = str(path)
        if self.ood:
            files["OOD set"] = self.ood
        return files


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {"shift": "small shift"}


@experiment(
    name="compare",
    words=WORDS,
    day=6,
    step=2,
    config=CompareConfig,
    title="Your own data: which prior fits it?",
    summary="The decision guide's architectures and your own models on your data: one protocol, verdicts",
    quick={"epochs": 6, "curve_points": 2, "curve_seeds": 1, "val_splits": 2},
    full={"epochs": 100, "patience": 15, "curve_points": 5, "curve_seeds": 3},
    sweep_tables=over_seeds,  # biaslab compare DATA --seeds 0-4: one leaderboard over the seeds
)
def run(ctx) -> None:
    cfg: CompareConfig = ctx.cfg
    data, prepared, chosen = fits.study(cfg, ctx.seed_for("split"))
    task = data.task

    # Each candidate (its fit and learning curve) a task, and each probe's augmented reference.
    probes, (_, _, reused) = fits.probes_of(cfg, data, prepared), fits.reference_of(chosen)
    splits = cfg.val_splits_of()
    jobs = {
        fits.fit_compare: list(chosen),
        fits.fit_augmented: [("augmented", p.name) for p in probes],
        fits.fit_splits: [("splits", name) for name in chosen] if splits > 1 else [],
    }
    if probes and not reused:
        jobs[fits.fit_reference] = [("reference",)]
    ctx.echo(f"{len(chosen)} candidates, {len(probes)} symmetry probes: training and learning curves")
    outcomes = ctx.tasks(jobs)

    judged = fits.judged_of(cfg, task, chosen, outcomes, splits)
    for name, j in judged.items():
        if j.result is None:
            ctx.echo(f"{name}: diverged")
            continue
        tag = slug(name)
        _metrics(ctx, tag, task, j.result, j.curve)
        if j.ood_auroc is not None:
            ctx.metric("ood_auroc", round(j.ood_auroc, 6), model=tag)
        budget = "; stopped at the time budget" if j.result.stopped_at_budget else ""
        ctx.metric("stopped_at_budget", j.result.stopped_at_budget, model=tag)
        ctx.echo(f"{name}: {headline(task, j.result)}; {j.decision.verdict}{budget}")

    # The report answers first (the lead: recommendation, leaderboard, learning curves), then the
    # data's symmetries, then what the data and protocol were.
    symmetries = None
    if probes:
        symmetries = fits.symmetry_findings(prepared, probes, outcomes, judged)
        _symmetries(ctx, symmetries)
    _claims(ctx, task, judged, cfg.require, bool(cfg.ood))  # the config checked the OOD file
    sizes = (len(prepared.rows["train"]), len(prepared.rows["val"]))
    pick = recommended(task, judged, sizes[1])  # the one the recommendation's sentence names
    if task == "regress" and pick is not None:
        _interval_claim(ctx, judged[pick.name], pick.name, len(prepared.rows["test"]))
    sentence = recommendation(task, judged, symmetries, sizes)
    ctx.table(
        RECOMMENDATION, ["model", "recommendation"], [[pick.name if pick else "-", sentence]], lead=True
    )
    board = leaderboard(task, judged, cfg.curve_seeds)
    ctx.table(LEADERBOARD, *board, timing_columns=["train seconds", PREDICT_COLUMN], lead=True)
    _curves_figure(ctx, task, judged, cfg.require)
    if pick is not None and judged[pick.name].result.reliability is not None:
        diagram = judged[pick.name].result.reliability_diagram()
        ctx.figure(
            "reliability",
            plots.reliability_diagrams({f"{pick.name}, test rows": diagram}),
            f"The recommended model ({pick.name}): accuracy per confidence bin on the test rows after "
            "temperature scaling, against the diagonal of perfect calibration (Day 5: calibration).",
        )
    for path, content in fits.saved_files(data, prepared, outcomes, pick and pick.name).items():
        ctx.save_file(path, content)  # models/: what biaslab predict reads
    if pick is not None and outcomes[pick.name].get("importance"):
        _importance_table(ctx, task, pick.name, outcomes[pick.name]["importance"])
    share = fits.time_share(cfg, chosen, probes)
    _data_table(ctx, data, chosen.values(), cfg.split, share, cfg.time_limit)
    if splits > 1:
        n_test = len(prepared.rows["test"])
        ctx.table("Validation splits", ["splits", "training rows", "validation rows", "test rows"],
                  [[splits, sizes[0], sizes[1], n_test]])  # fmt: skip
    ctx.echo(f"recommended: {sentence}")
    if pick is not None:
        ctx.echo(f"predict new rows with it: biaslab predict {shlex.quote(str(ctx.run_dir))} NEW_DATA")


def _symmetries(ctx, report) -> None:
    """The data's own symmetries (:func:`~biaslab.comparison.study_fits.symmetry_findings`) as
    metrics and two tables."""
    for finding in report.findings:
        probe = slug(finding.probe.name)
        if finding.survival is not None:
            fate = finding.survival
            ctx.metric(**{f"label_survives_{probe}": fate.outcome == "survives"})
            ctx.metric(**{f"label_changes_{probe}": fate.outcome == "changes"})
            ctx.metric(**{f"augmentation_cost_{probe}": round(fate.cost, 4)})
            ctx.metric(**{f"augmentation_cost_low_{probe}": round(fate.low, 4)})
            ctx.metric(**{f"augmentation_cost_high_{probe}": round(fate.high, 4)})
        ctx.metric(
            **{f"{slug(n)}_invariance_{probe}": float(f"{e:.3g}") for n, e in finding.invariance.items()}
        )
    columns, rows = symmetry_table(report)
    ctx.table("Symmetries of your data", columns, rows)
    ctx.table("Which prior fits, and why", ["finding"], [[sentence] for sentence in explain(report)])


def _metrics(ctx, tag, task, result, curve) -> None:
    if task == "classify":
        measures = ("accuracy", "ece", "ece_after_temperature")
    else:
        measures = ("mae", "rmse", *(k for k in ("interval_coverage", "interval_width") if k in result.test))
    for measured in measures:
        ctx.metric(measured, round(result.test[measured], 6), model=tag, split="test")
    for measured, value in result.val.items():
        ctx.metric(measured, round(value, 6), model=tag, split="val")
    if task == "regress":
        ctx.metric(test_baseline_mae=round(result.test["baseline_mae"], 6))
    if curve.power_law is not None:
        ctx.metric("curve_exponent", round(curve.power_law.exponent, 4), model=tag)
    ctx.timing(**{f"{tag}_train": result.train_seconds})


RAW_TABLE_WORDS = (
    "gradient-boosted trees read missing cells and categories as they are (scikit-learn's native "
    "support); the other candidates read each missing cell as the training rows' median plus a "
    "'was missing' column, and each category as a 0/1 column (one-hot; a category the training rows "
    "never held is all zeros), fitted on the training rows only"
)


def _importance_table(ctx, task, name, importance) -> None:
    """The recommended model's permutation importance per column, largest first (Breiman 2001)."""
    drop = "drop in test accuracy" if task == "classify" else "rise in test MAE"
    rows = sorted(
        zip(importance["names"], importance["mean"], importance["std"], strict=True), key=lambda r: -r[1]
    )
    ctx.table(
        f"Which columns {name} reads (permutation importance on the test rows)",
        ["column", f"{drop} when the column is shuffled (mean ± std over 5 shuffles)"],
        [[column, f"{mean:.4g} ± {std:.2g}"] for column, mean, std in rows],
    )


def _data_table(ctx, data, chosen, split, share=None, time_limit="") -> None:
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
    if data.is_raw_table:
        rows.append(["encoding", RAW_TABLE_WORDS])
    if share is not None:
        rows.append([
            "time limit",
            f"{time_limit}: {share:.3g} s per candidate and validation split, or probe: half to its "
            "fit, and a candidate's other half to its learning curve; a training past its part stops "
            "after that epoch, keeping its best epoch "
            "(scikit-learn's fits are not stopped); with a time limit the run depends on the machine's "
            "speed, not on its seed alone",
        ])  # fmt: skip
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
        lead=True,
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
            # "Ship. Test performance is acceptable on the relevant population, calibration is
            # adequate for the downstream use, and the failure modes you have measured are
            # tolerable" (workshop book §5.7); the thresholds are the use's, by default biaslab's
            source="workshop book §5.7 (The decision framework: ship, collect, or redesign); "
            "workshop book §4.7 (Choosing an architecture: the matching exercise); "
            "biaslab's target (the use's thresholds: biaslab's defaults, or those given)",
            kind="finding",
            checked_in_quick=False,
        )


INTERVAL_MARGIN = 0.03  # biaslab's target: the test coverage within 3 points of the nominal 90%
INTERVAL_MIN_TEST_ROWS = 200  # below this, the test coverage's own noise (±2 points at 200) rules


def _interval_claim(ctx, chosen: Judged, name: str, n_test: int) -> None:
    """The recommended model's split-conformal 90% intervals hold 90% of the test targets."""
    test = chosen.result.test
    coverage = test.get("interval_coverage")
    if coverage is None:
        measured, passed = "no finite interval: fewer than 9 validation rows", False
    else:
        measured = f"{100 * coverage:.1f}% of {n_test:,} test rows (mean width {test['interval_width']:.4g})"
        passed = abs(coverage - 0.9) <= INTERVAL_MARGIN if n_test >= INTERVAL_MIN_TEST_ROWS else None
        if passed is None:
            measured += f"; not judged below {INTERVAL_MIN_TEST_ROWS} test rows"
    ctx.claim(
        f"{name}'s 90% prediction intervals hold 90% of new targets",
        expected=(
            f"test coverage 90% ± {100 * INTERVAL_MARGIN:.0f} points, "
            f"on {INTERVAL_MIN_TEST_ROWS} or more test rows"
        ),
        measured=measured,
        passed=passed,
        # Split conformal prediction: coverage >= 1 - alpha for exchangeable rows, whatever the model.
        source="Lei et al. 2018; biaslab's target (within 3 points of 90% on 200 or more test rows)",
        kind="finding",
    )
