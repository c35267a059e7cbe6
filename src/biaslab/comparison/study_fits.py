"""A comparison study's fits, as tasks any executor can run (``biaslab compare``; the workshop
book's Day 4 question, "which prior fits my data?", under Day 5's protocol).

For the data a config names (its ``data``, ``target``, ``task``, ``kind``, ``split``, ``models``,
``model``, ``ood``, ``train``, ``curve_points``, ``curve_seeds``, ``symmetries``, ``time_limit``,
``val_splits``: the compare lab's config), each of these is one task (``ctx.tasks``), seeded by
its key, its result plain data:

    fit_compare    a candidate by the protocol, its learning curve, its OOD AUROC, its invariance
                   under each probe, its predict time, a table's permutation importance, and its
                   fitted state as files (:func:`~biaslab.comparison.saving.fitted_files`,
                   written under ``models/`` when its result arrives)
    fit_splits     a candidate trained and validated on each other draw of the training and
                   validation rows (:mod:`~biaslab.comparison.resampling`): how sure the ranking
                   is (the draws' trainings fitted together where they can be)
    fit_reference  the symmetry probes' MLP as is, when it is no candidate
    fit_augmented  that MLP trained with one probe as augmentation, from the same initial weights

and what the driver makes of them: :func:`judged_of` (a verdict per candidate, ``decide``
against the requirements), :func:`symmetry_findings` (does the label survive each probe; which
candidate is invariant to it) and :func:`saved_files` (the run's ``models/`` folder). The data,
its split and the candidates are read once per process (:func:`study`, a run cache).

:func:`read`, :func:`read_ood` and :func:`candidates` read what a config names;
:func:`time_share` divides a ``--time-limit`` between the candidates and the probes' trainings,
and :func:`fit_share` gives a fit half a share (a candidate's other half goes to its learning
curve).
"""

from __future__ import annotations

import time
from dataclasses import replace

from biaslab.caches import run_cache
from biaslab.comparison.candidates import slug
from biaslab.comparison.curves import Curve, fit_with_curve
from biaslab.comparison.judged import Judged, evidence_of
from biaslab.comparison.protocol import (
    CandidateResult,
    Trial,
    fit_candidate,
    fit_candidates_together,
    ood_auroc,
    prepare,
    scored,
)
from biaslab.comparison.saving import fitted_files, preparation_files
from biaslab.comparison.symmetry_probes import invariances, survival, with_probe
from biaslab.comparison.symmetry_report import Finding, SymmetryReport
from biaslab.data.demo_sets import load_data
from biaslab.errors import ConfigError, DivergenceError
from biaslab.evaluate.decision import decide
from biaslab.formatting import parse_duration

__all__ = [
    "INVARIANCE_ROWS",
    "candidates",
    "fit_augmented",
    "fit_compare",
    "fit_reference",
    "fit_splits",
    "judged_of",
    "read",
    "read_ood",
    "reference_of",
    "saved_files",
    "study",
    "symmetry_findings",
    "time_share",
]

INVARIANCE_ROWS = 256  # validation rows each candidate's invariance is measured on


def read(cfg):
    """The data set the config names (read once: the config's check and the run share it)."""
    auto = lambda value: None if value in ("", "auto") else value  # noqa: E731
    return load_data(cfg.data, target=auto(cfg.target), task=auto(cfg.task), kind=auto(cfg.kind))


def read_ood(cfg, data):
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


def candidates(cfg, data) -> list:
    """The guide's candidates for the data (those ``models`` names), then the user's models,
    each user model tried on a few rows."""
    from biaslab.comparison.user_models import chosen_candidates  # torch: not at a config's check

    return chosen_candidates(data, cfg.models, cfg.model or ())


@run_cache
def study(cfg, split_seed: int):
    """The data, its split and the candidates, made once per process (the driver's and each
    worker's) and shared by its tasks."""
    data = read(cfg)
    prepared = prepare(data, seed=split_seed, split=cfg.split)
    return data, prepared, {c.name: c for c in candidates(cfg, data)}


@run_cache
def ood_inputs(cfg, split_seed: int):
    """The OOD inputs standardized as the data (None without): read once per process."""
    data, prepared, _ = study(cfg, split_seed)
    ood = read_ood(cfg, data)
    return None if ood is None else prepared.standardize(ood.x, ood.mask)


def probes_of(cfg, data, prepared) -> list:
    """The transformations a prior of this kind could assume (workshop book §4.7: a prior fits
    when the data have the symmetry it assumes); none for tables, graphs (invariant by build) or when off."""
    from biaslab.comparison.probes import probes_for

    if not cfg.symmetries or data.x is None:
        return []
    return probes_for(prepared.kind, prepared.input_shape)


def reference_of(chosen: dict):
    """The guide's MLP, which the symmetry probes train as is and augmented; its tag, and whether
    it is a candidate already (then its plain training is reused)."""
    from biaslab.comparison.candidates import candidates_for

    reference = next(c for c in candidates_for("table", task="classify") if c.name == "MLP")
    mlp = chosen.get(reference.name)
    reused = mlp is not None and mlp.build is reference.build
    return reference, slug(reference.name) if reused else "symmetry-reference", reused


def time_share(cfg, chosen, probes) -> float | None:
    """Each training's share of ``time_limit`` (None without one): the budget divided between
    the candidates and the probes' trainings (the reference MLP's when it is no candidate)."""
    if not cfg.time_limit:
        return None
    reference = 1 if probes and not reference_of(chosen)[2] else 0
    return parse_duration(cfg.time_limit) / (len(chosen) * cfg.val_splits_of() + len(probes) + reference)


def fit_share(cfg, data, prepared, chosen) -> float | None:
    """One fit's time limit: half a training's share (a candidate's fit on a validation split, a
    probe's training; a candidate's other half goes to its learning curve)."""
    share = time_share(cfg, chosen, probes_of(cfg, data, prepared))
    return None if share is None else share / 2


def limited(setup, seconds: float | None):
    """``setup`` with a time limit (a Trainer stops after the epoch that passes it)."""
    return setup if seconds is None else replace(setup, time_limit_s=seconds)


def fit_compare(task, name: str) -> dict:
    """One candidate by the protocol, its learning curve, its OOD AUROC and its invariance error
    under each probe: a task (``ctx.tasks``). With a time limit, the candidate's share goes half
    to its fit and half to its learning curve's fits, shared equally."""
    cfg = task.cfg
    data, prepared, chosen = study(cfg, task.seed_for("split"))
    candidate, tag, config = chosen[name], slug(name), cfg.train.training()
    probes = probes_of(cfg, data, prepared)
    share = fit_share(cfg, data, prepared, chosen)
    curve_share = None if share is None else share / (cfg.curve_points * cfg.curve_seeds)
    try:
        own = Trial(candidate, prepared, config, limited(task.training(tag), share))
        fitted, curve = fit_with_curve(  # its fit and its curve's, together where they can be
            own,
            lambda size, seed: limited(task.training(f"{tag}-{size}-{seed}"), curve_share),
            points=cfg.curve_points, seeds=tuple(range(cfg.curve_seeds)),
        )  # fmt: skip
        result = scored(own, fitted)
    except DivergenceError as exc:
        return {"diverged": str(exc)}
    ood = ood_inputs(cfg, task.seed_for("split"))
    start = time.perf_counter()  # the test rows predicted once more, for the time it takes
    result.fitted.outputs_on(prepared, "test")
    predict_seconds = (time.perf_counter() - start) * 1000 / max(len(prepared.rows["test"]), 1)
    importance = None
    if data.kind == "table":  # which columns the fitted model reads, shuffled one at a time
        from biaslab.comparison.importance import permutation_importance

        x_test = data.x[prepared.rows["test"]]
        importance = permutation_importance(
            result.fitted, prepared, x_test, data.feature_names, task.seed_for("importance")
        )
    for path, content in fitted_files(result, candidate, prepared).items():
        task.save_file(path, content)  # in the run's models/ when this fit's result arrives
    return {
        "predict_seconds_per_1000": predict_seconds,
        "importance": importance,
        "scores": result.scores(),
        "curve": curve.as_dict(),
        "ood_auroc": None if ood is None else ood_auroc(result, prepared, ood),
        "invariance": invariances(
            result.fitted, prepared, probes, task.seed_for(reference_of(chosen)[1]), INVARIANCE_ROWS
        ),
    }


@run_cache
def resplit_of(cfg, split_seed: int, repeat: int):
    """The study's data with its training and validation rows drawn anew (the test rows kept)."""
    from biaslab.comparison.resampling import resplit

    data, prepared, _ = study(cfg, split_seed)
    return resplit(data, prepared, repeat)


def fit_splits(task, _: str, name: str) -> dict:
    """One candidate trained and validated on each other draw of the training and validation rows
    (:mod:`~biaslab.comparison.resampling`; repeats 1 .. splits − 1, the first split being the
    protocol's own): its validation scores, for how sure the ranking is. The draws' trainings are
    of one candidate on data of one shape: fitted together where they can be
    (:func:`~biaslab.comparison.protocol.fit_candidates_together`)."""
    from biaslab.comparison.resampling import repeats_for

    cfg = task.cfg
    data, _, chosen = study(cfg, task.seed_for("split"))
    trials = []
    for repeat in range(1, repeats_for(len(data), data.kind, cfg.val_splits)):  # the study's data, read once
        prepared = resplit_of(cfg, task.seed_for("split"), repeat)
        setup = limited(task.training(f"{slug(name)}-split{repeat}"), fit_share(cfg, data, prepared, chosen))
        trials.append(Trial(chosen[name], prepared, cfg.train.training(), setup))
    try:
        return {"vals": [result.val for result in fit_candidates_together(trials)]}
    except DivergenceError as exc:
        return {"diverged": str(exc)}


def fit_reference(task, _: str) -> dict:
    """The symmetry probes' MLP trained as is, when it is not a candidate: a task."""
    cfg = task.cfg
    data, prepared, chosen = study(cfg, task.seed_for("split"))
    reference, tag, _ = reference_of(chosen)
    setup = limited(task.training(tag), fit_share(cfg, data, prepared, chosen))
    return {"val": fit_candidate(Trial(reference, prepared, cfg.train.training(), setup)).val}


def fit_augmented(task, _: str, probe_name: str) -> dict:
    """The symmetry probes' MLP trained with one probe as augmentation, from the plain training's
    initial weights (its seed): does the label survive the transformation? A task."""
    cfg = task.cfg
    data, prepared, chosen = study(cfg, task.seed_for("split"))
    reference, tag, _ = reference_of(chosen)
    probe = next(p for p in probes_of(cfg, data, prepared) if p.name == probe_name)
    seed = task.seed_for(tag)  # the plain training's: both start from the same weights
    setup = replace(task.training(f"{tag}-{slug(probe.name)}"), seed=seed)
    setup = limited(setup, fit_share(cfg, data, prepared, chosen))  # as the plain MLP's: a fair pair
    moved = fit_candidate(Trial(with_probe(reference, probe, seed), prepared, cfg.train.training(), setup))
    return {"val": moved.val}


def judged_of(cfg, task: str, chosen: dict, outcomes: dict, splits: int) -> dict[str, Judged]:
    """Each candidate's verdict from its tasks' outcomes: ``decide`` on its evidence against the
    config's requirements (the workshop book §5.7), with its scores on every validation split."""
    judged: dict[str, Judged] = {}
    for name, candidate in chosen.items():
        out = outcomes[name]
        if "diverged" in out:
            judged[name] = Judged(candidate, diverged=out["diverged"])
            continue
        result, curve = CandidateResult.from_scores(out["scores"]), Curve.from_dict(out["curve"])
        decision = decide(evidence_of(task, result, curve, out["ood_auroc"]), **cfg.require.for_task(task))
        others = outcomes["splits", name].get("vals", []) if splits > 1 else []  # [] if diverged
        vals = (result.val, *others) if splits > 1 else ()
        judged[name] = Judged(
            candidate, result, curve, decision, ood_auroc=out["ood_auroc"], val_scores=vals,
            predict_seconds=out.get("predict_seconds_per_1000"),
        )  # fmt: skip
    return judged


def symmetry_findings(prepared, probes, outcomes: dict, judged: dict) -> SymmetryReport:
    """The data's own symmetries: for each probe, does the label survive it (the reference MLP's
    validation score as is and augmented) and which trained candidate is invariant to it (each
    candidate's task measured it with the symmetry verifier)?"""
    plain = outcomes.get(("reference",)) or outcomes.get("MLP")
    plain_val = None if plain is None or "diverged" in plain else plain.get("val") or plain["scores"]["val"]
    findings = []
    for probe in probes:
        moved = outcomes["augmented", probe.name]["val"]
        survived = None if plain_val is None else survival(
            probe.name, "MLP", prepared.task, plain_val, moved, len(prepared.rows["val"])
        )  # fmt: skip
        invariance = {
            name: outcomes[name]["invariance"][probe.name]
            for name, j in judged.items()
            if j.result is not None
        }
        findings.append(Finding(probe, survived, invariance))
    return SymmetryReport(prepared.kind, tuple(findings))


def saved_files(data, prepared, outcomes: dict, recommended: str | None) -> dict[str, bytes]:
    """The data's preparation as the run's ``models/`` files, naming the candidates whose fits
    saved theirs (:func:`fit_compare`), without pickle (:mod:`biaslab.comparison.saving`): with
    them, what ``biaslab predict`` and ``load_comparison`` read."""
    from biaslab.data.input_schema import InputSchema

    schema = InputSchema.of(data).as_dict()
    saved = [n for n, o in outcomes.items() if isinstance(n, str) and "diverged" not in o]
    return preparation_files(prepared, schema, data.classes, saved, recommended)
