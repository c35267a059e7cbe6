"""The data's symmetries in a comparison's report: for each probe of the data's kind, whether the
label survives it and which trained candidates are invariant to it, and, in sentences, which prior
therefore fits the data (Day 4: a prior fits when the data have the symmetry it assumes).

The two measurements are :func:`~biaslab.comparison.symmetry_probes.label_survival` and
:func:`~biaslab.comparison.symmetry_probes.candidate_invariance`; :func:`symmetry_report` runs them
for every probe and :func:`explain` words the findings.

:func:`symmetry_report` -> :class:`SymmetryReport`; :func:`symmetry_table` gives the report's
table, and :func:`fitting_symmetries` the symmetries a candidate's prior captures (the
recommendation names them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torch import nn

from biaslab.comparison.fitting import Fitted, Trial
from biaslab.comparison.probes import Probe, probes_for
from biaslab.comparison.protocol import fit_candidate
from biaslab.comparison.symmetry_probes import (
    NO_INVARIANCE,
    Survival,
    candidate_invariance,
    invariance_word,
    label_survival,
)
from biaslab.train.seed import derive_seed

if TYPE_CHECKING:
    from biaslab.comparison.protocol import CandidateResult
    from biaslab.train.recipes import TrainSetup

__all__ = ["Finding", "SymmetryReport", "explain", "fitting_symmetries", "symmetry_report", "symmetry_table"]


@dataclass(frozen=True)
class Finding:
    """One probe: whether the label survives it and how invariant each candidate is to it.

    Attributes:
        probe: the :class:`Probe`.
        survival: the :class:`Survival` (None when it was not measured).
        invariance: candidate name -> invariance error on validation inputs.
    """

    probe: Probe
    survival: Survival | None
    invariance: dict[str, float]


@dataclass(frozen=True)
class SymmetryReport:
    """The data's symmetries, probe by probe, for ``kind`` data."""

    kind: str
    findings: tuple[Finding, ...]


def symmetry_report(
    reference: Trial,
    trained: Mapping[str, nn.Module | Fitted],
    *,
    rows: int = 256,
    probes: Sequence[Probe] | None = None,
    plain: CandidateResult | None = None,
    augmented_setup: Callable[[Probe], TrainSetup] | None = None,
) -> SymmetryReport:
    """Every probe of the data's kind: the label's survival (the ``reference`` trial trained as is and
    augmented, :func:`label_survival`) and each trained candidate's invariance error on the first
    ``rows`` validation rows (:func:`candidate_invariance`, the draws seeded per probe).

    Args:
        trained: name -> a :class:`Fitted` (as ``fitting.fit`` returns), or a torch module
            called as ``model(x)`` (no mask).
        reference: the reference candidate on the prepared data, with its plain training's
            config and setup (trained once, shared by the probes, unless ``plain`` is given).
        probes: default :func:`probes_for` the data's kind and example shape.
        plain: the reference's result when it was trained already.
        augmented_setup: ``augmented_setup(probe)``, the setup of the reference's training
            augmented by ``probe`` (see :func:`label_survival`; default: none saved).
    """
    prepared, setup = reference.prepared, reference.setup
    probes = list(probes) if probes is not None else probes_for(prepared.kind, prepared.input_shape)
    x, mask, _ = prepared.tensors("val")
    x, mask = x[:rows], None if mask is None else mask[:rows]
    if plain is None and probes:
        plain = fit_candidate(reference)
    findings = []
    for probe in probes:
        moved_setup = None if augmented_setup is None else augmented_setup(probe)
        survival = label_survival(probe, reference, augmented_setup=moved_setup, plain=plain)
        seed = derive_seed(setup.seed, "invariance", probe.name)
        invariance = {
            name: candidate_invariance(model, probe, x, mask if isinstance(model, Fitted) else None, seed)
            for name, model in trained.items()
        }
        findings.append(Finding(probe, survival, invariance))
    return SymmetryReport(prepared.kind, tuple(findings))


def _error_text(error: float) -> str:
    return f"{error:.0e}" if error < 1e-3 else f"{error:.2g}"


def explain(report: SymmetryReport) -> list[str]:
    """One sentence per probe: does the label survive it, which candidate is invariant to it,
    and whether that prior fits the data.

    e.g. ``"The label survives a permutation of the elements (augmenting with it costs 0.3
    points), and Deep Sets is invariant to it (error 2e-07): its prior fits this data."`` or
    ``"A reversal of the sequence changes the label (augmenting with it costs 31.0 points): a
    prior that assumes it would not fit."``
    """
    sentences = []
    for finding in report.findings:
        probe, survival = finding.probe, finding.survival
        invariant = sorted(
            (error, name) for name, error in finding.invariance.items() if error < NO_INVARIANCE
        )
        named = ", ".join(
            f"{name} ({'exactly, ' if invariance_word(e) == 'exact' else 'approximately, '}"
            f"error {_error_text(e)})"
            for e, name in invariant
        )
        if survival is None:
            if invariant:
                sentences.append(f"Invariant to {probe.description}: {named}; the label was not probed.")
            continue
        if survival.outcome == "cannot tell":
            rows = survival.rows_to_decide
            more = f"; about {rows:,} validation rows would decide" if rows else ""
            held = ""
            if invariant:
                held = f" {named} {'is' if len(invariant) == 1 else 'are'} invariant to it, should it hold."
            sentences.append(
                f"Whether the label survives {probe.description} cannot be told from "
                f"{survival.n_val:,} validation rows (augmenting with it {survival.cost_text}; "
                f"{survival.interval_text}){more}.{held}"
            )
        elif survival.survives:
            head = f"The label survives {probe.description} (augmenting with it {survival.cost_text})"
            if invariant:
                which = invariant[0][1] if len(invariant) == 1 else named
                errors_ = f" (error {_error_text(invariant[0][0])})" if len(invariant) == 1 else ""
                verb = "is" if len(invariant) == 1 else "are"
                its = "its prior fits" if len(invariant) == 1 else "their prior fits"
                sentences.append(f"{head}, and {which} {verb} invariant to it{errors_}: {its} this data.")
            else:
                sentences.append(
                    f"{head}, but no candidate is invariant to it: a model with {probe.prior_it_supports}, "
                    "or training with it as augmentation, could help."
                )
        else:
            head = (
                f"{probe.description[0].upper()}{probe.description[1:]} changes the label "
                f"(augmenting with it {survival.cost_text}): a prior that assumes it would not fit"
            )
            if invariant:
                sentences.append(f"{head}, and {named} assume{'s' if len(invariant) == 1 else ''} it.")
            else:
                sentences.append(f"{head}.")
    return sentences


def symmetry_table(report: SymmetryReport) -> tuple[list[str], list[list[str]]]:
    """The report as a table: a row per probe, the label's fate and each candidate's invariance.

    Returns:
        ``(columns, rows)``: ``transformation``, ``the label`` (``survives``, ``changes`` or
        ``cannot tell``, with what augmenting the reference cost, its 95% interval and the
        margin), then per candidate its invariance error and :func:`invariance_word`.
    """
    names = list(dict.fromkeys(name for f in report.findings for name in f.invariance))
    columns = ["transformation", "the label", *(f"{name}: invariance" for name in names)]
    rows = []
    for finding in report.findings:
        survival = finding.survival
        if survival is None:
            label = "not probed"
        else:
            label = (
                f"{survival.outcome}: augmenting {survival.candidate} with it {survival.cost_text} "
                f"({survival.interval_text})"
            )
        cells = [
            f"{_error_text(e)} ({invariance_word(e)})"
            if (e := finding.invariance.get(name)) is not None
            else "-"
            for name in names
        ]
        rows.append([finding.probe.description, label, *cells])
    return columns, rows


def fitting_symmetries(report: SymmetryReport, name: str) -> list[str]:
    """The transformations the label survives and candidate ``name`` is invariant to (exactly or
    approximately): the symmetries of the data its prior captures, as noun phrases."""
    return [
        f.probe.description
        for f in report.findings
        if f.survival is not None and f.survival.survives and f.invariance.get(name, 1.0) < NO_INVARIANCE
    ]
