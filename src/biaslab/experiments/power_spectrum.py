"""Day 4 - the power spectrum as a summary statistic: translation-invariant, blind to phases.

Lecture notes §1 (Modeling unknown functions), "Summary statistics as projections": the power
spectrum P(k) says "how much structure exists at each spatial scale"; it keeps "the amplitude of
fluctuations at each scale" and discards "the phases—where exactly the structures are located";
"Many different data points can map to the same summary"; "The power spectrum is
translation-invariant by construction"; "But summaries have limits."

The summary is the radially averaged spectrum P(|k|): the mean of |F(k)|² / (H W) over annuli of
|k| one mode wide, 21 numbers for a 28 x 28 digit (``evaluate.power_spectrum``). The full 2-D
spectrum P(k) (784 numbers, the directions kept, the phases still dropped) is reported beside it
as a variant. Shifts are circular (``np.roll``): the shift under which the DFT's amplitudes are
exactly unchanged. A digit whose ink stays inside the frame moves alike under a zero-filled shift
(blank pixels entering); the run reports the share of the shifted test digits for which it does.

1. Invariance (a check, an identity of the DFT): the spectra of every test digit, circularly
   shifted, and of Gaussian random fields shifted anywhere, against the unshifted ones.
2. One summary, many images (a check): each test digit and each field beside its random-phase
   twin (the same |F(k)|, new Hermitian-symmetric phases): equal spectra, distant pixels.
3. Classifying digits from the summary: three MLPs of one width, on pixels, on
   log P(|k|) and on log P(k), trained on centred digits and tested on centred, shifted and
   random-phase digits. The spectra keep their accuracy under any shift (a check: their inputs
   are unchanged), the pixels lose it (a finding); but on centred digits the pixels beat
   P(|k|), which has thrown the phases away; and the pixel classifier finds no digit in the
   random-phase twins, whose spectra are the digits' own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from biaslab.comparison.preparation import feature_stats, standardized
from biaslab.config import check_batch_fits, check_range
from biaslab.data.mnist import QUICK_SIZES, MnistSizes, mnist_splits_for
from biaslab.data.splits import Splits
from biaslab.data.transforms import translate_each
from biaslab.evaluate.power_spectrum import (
    gaussian_random_field,
    power_spectrum_2d,
    radial_power_spectrum,
    random_phases,
    random_rolls,
    summary_features,
)
from biaslab.nn import MLP
from biaslab.records import measure
from biaslab.registry import experiment
from biaslab.report import plots, plots_spectra
from biaslab.train.config import ClassifierTraining
from biaslab.train.recipes import fit_classifier

NOTES = "lecture notes §1 (Modeling unknown functions)"  # "Summary statistics as projections"
ROUNDING = 1e-9  # biaslab's target for "unchanged to rounding": float64 FFTs agree to ~1e-15
KEPT_POINTS = 1.0  # biaslab's target: a spectrum classifier within 1 point of itself under shifts
LOST_POINTS = 10.0  # biaslab's target: the pixel classifier loses >= 10 points under shifts
COST_POINTS = 5.0  # biaslab's target: pixels beat P(|k|) on centred digits by >= 5 points
TWIN_DISTANCE = 0.5  # biaslab's target: a twin lies >= 0.5 of the image's norm away (median)
NO_DIGIT = 0.2  # biaslab's target: on random-phase twins the pixel classifier scores <= 20%
CLASSIFIERS = {"pixels": "pixels", "radial": "P(|k|)", "2d": "2-D P(k)"}
TEST_SETS = {
    "centred": "centred digits",
    "shifted": "circularly shifted digits",
    "twins": "random-phase twins",
}


@dataclass(frozen=True)
class PowerSpectrumConfig:
    """The digits, the classifiers' training and width, the shifts, and the random fields."""

    data: MnistSizes = MnistSizes(n_train=10_000, n_val=2000)
    train: ClassifierTraining = ClassifierTraining(epochs=15, batch_size=128, lr=2e-3, schedule="onecycle")
    hidden: int = 128  # each classifier: inputs-hidden-10
    max_shift: int = 4  # each test digit rolls by (dx, dy) in -max_shift..max_shift
    fields: int = 32  # Gaussian random fields for the invariance and the twins
    field_size: int = 64  # pixels per side
    field_slope: float = 3.0  # E[P(k)] ∝ |k|^-slope

    def __post_init__(self):
        check_range(self, "hidden", 1, 100_000)
        check_range(self, "max_shift", 1, 27, "pixels of a 28-pixel digit; 0 would not shift it")
        check_range(self, "fields", 1, 256, "random fields")
        check_range(self, "field_size", 8, 256, "pixels per side of a random field")
        check_range(self, "field_slope", 0, 6, "the power-law index of P(k) ∝ |k|^-slope")
        check_batch_fits(self)


# The words of this lab's metric labels (biaslab.records): what it means by its names.
WORDS = {
    "radial": "P(|k|)",
    "2d": "2-D P(k)",
    "centred": "centred digits",
    "shifted": "circularly shifted digits",
    "twins": "random-phase twins of the digits",
    "digits": "MNIST test digits",
    "fields": "Gaussian random fields",
    "invariance": measure("largest change of the spectrum under shifts, relative to its peak"),
    "twin_spectrum": measure("largest difference to the random-phase twin's spectrum, relative to its peak"),
    "unwrapped": measure("share of the shifted digits whose ink did not wrap around"),
    "twin_distance": measure("median pixel distance to the random-phase twin, relative to the image's norm"),
}


def _relative_change(before: np.ndarray, after: np.ndarray) -> float:
    """max |after − before| over each row, over the row's largest value: the worst row."""
    rows = len(before)
    before, after = before.reshape(rows, -1), after.reshape(rows, -1)
    return float(np.max(np.abs(after - before).max(1) / before.max(1)))


@experiment(
    name="power-spectrum",
    words=WORDS,
    day=4,
    step=12,
    config=PowerSpectrumConfig,
    requires=("mnist",),
    title="The power spectrum: a translation-invariant summary that drops the phases",
    summary="P(|k|) of MNIST digits and random fields: unchanged by shifts, shared by random-phase twins; "
    "classifiers on pixels and on spectra tested on shifted digits",
    quick={**QUICK_SIZES, "epochs": 3, "fields": 4, "field_size": 32},
)
def run(ctx) -> None:
    cfg: PowerSpectrumConfig = ctx.cfg
    splits = mnist_splits_for(cfg.data, ctx.seed_for("split"), flatten=False)  # pixels in [0, 1]
    digits = {
        name: getattr(splits, f"x_{name}").squeeze(1).numpy().astype(np.float64)
        for name in ("train", "val", "test")
    }
    shifted, offsets = random_rolls(digits["test"], cfg.max_shift, ctx.seed_for("shifts"))
    twins = random_phases(digits["test"], ctx.seed_for("phases"))
    fields = gaussian_random_field(cfg.fields, cfg.field_size, cfg.field_slope, ctx.seed_for("fields"))
    invariance(ctx, cfg, digits["test"], shifted, offsets, fields)
    one_summary(ctx, digits["test"], twins, fields)
    accuracy = classified(
        ctx, cfg, splits, digits, {"centred": digits["test"], "shifted": shifted, "twins": twins}
    )
    judged(ctx, cfg, accuracy)
    by_class(ctx, digits["test"], splits.y_test.numpy())


def invariance(ctx, cfg: PowerSpectrumConfig, test, shifted, offsets, fields) -> None:
    """1. The spectra of shifted digits (``offsets`` (N, 2): each one's (dx, dy)) and fields against
    the unshifted ones; and how many of the digits' circular shifts a zero-filled shift (blank
    pixels entering the frame) matches."""
    moved_fields, _ = random_rolls(fields, cfg.field_size - 1, ctx.seed_for("field-shifts"))
    pairs = {"digits": (test, shifted), "fields": (fields, moved_fields)}
    changes = {}
    for what, (images, moved) in pairs.items():
        changes[what, "2d"] = _relative_change(power_spectrum_2d(images), power_spectrum_2d(moved))
        changes[what, "radial"] = _relative_change(
            radial_power_spectrum(images)[1], radial_power_spectrum(moved)[1]
        )
    for (what, spectrum), change in changes.items():
        ctx.metric("invariance", change, data=what, spectrum=spectrum, better="lower")
    filled = translate_each(torch.from_numpy(test), torch.from_numpy(offsets), fill=0.0).numpy()
    unwrapped = float(np.mean(np.all(filled == shifted, axis=(1, 2))))
    ctx.metric("unwrapped", unwrapped)
    worst = max(changes.values())
    # lecture notes §1: "The power spectrum is translation-invariant by construction—shifting the
    # field doesn't change P(k)." An identity of the DFT (a circular shift multiplies F(k) by a
    # phase); what is measured is that the code computes it, to rounding.
    ctx.claim(
        "The power spectrum is unchanged by shifts: circularly shifted digits and random fields keep "
        "P(k) and P(|k|) to rounding (an identity of the DFT: a shift multiplies F(k) by a phase)",
        source=f"{NOTES}; biaslab's target (largest change <= {ROUNDING:g} of the spectrum's peak)",
        printed="The power spectrum is translation-invariant by construction",
        kind="check",
        expected=f"largest relative change <= {ROUNDING:g}",
        measured=f"{len(test):,} digits shifted by up to {cfg.max_shift} px ({unwrapped:.1%} of them "
        f"without ink wrapping around): 2-D {changes['digits', '2d']:.1e}, P(|k|) "
        f"{changes['digits', 'radial']:.1e}; {len(fields)} fields shifted anywhere: "
        f"2-D {changes['fields', '2d']:.1e}, P(|k|) {changes['fields', 'radial']:.1e}",
        passed=worst <= ROUNDING,
    )


def one_summary(ctx, test: np.ndarray, twins: np.ndarray, fields: np.ndarray) -> None:
    """2. Each image beside its random-phase twin: one spectrum, two images."""
    field_twins = random_phases(fields, ctx.seed_for("field-phases"))
    pairs = {"digits": (test, twins), "fields": (fields, field_twins)}
    spectrum_gap, distance = {}, {}
    for what, (images, other) in pairs.items():
        spectrum_gap[what] = _relative_change(power_spectrum_2d(images), power_spectrum_2d(other))
        norms = np.linalg.norm(images.reshape(len(images), -1), axis=1)
        distance[what] = float(
            np.median(np.linalg.norm((images - other).reshape(len(images), -1), axis=1) / norms)
        )
        ctx.metric("twin_spectrum", spectrum_gap[what], data=what, better="lower")
        ctx.metric("twin_distance", distance[what], data=what, better="higher")
    apart = np.linalg.norm((test[1:] - test[:-1]).reshape(len(test) - 1, -1), axis=1)
    between = float(np.median(apart / np.linalg.norm(test[:-1].reshape(len(test) - 1, -1), axis=1)))
    # lecture notes §1: "Many different data points can map to the same summary. Infinitely many
    # cosmological fields share the same power spectrum—they differ only in their phases."
    ctx.claim(
        "Many images share one power spectrum: each digit and each random field has a random-phase "
        "twin with the same P(k) to rounding and very different pixels",
        source=f"{NOTES}; biaslab's target (spectra within {ROUNDING:g} of the peak; median pixel distance "
        f">= {TWIN_DISTANCE:g} of the image's norm)",
        printed="Many different data points can map to the same summary",
        kind="check",
        expected=f"spectrum difference <= {ROUNDING:g}, median distance >= {TWIN_DISTANCE:g}",
        measured=f"digits: spectrum {spectrum_gap['digits']:.1e}, distance {distance['digits']:.2f} "
        f"(two consecutive test digits: {between:.2f}); fields: spectrum {spectrum_gap['fields']:.1e}, "
        f"distance {distance['fields']:.2f}",
        passed=max(spectrum_gap.values()) <= ROUNDING and min(distance.values()) >= TWIN_DISTANCE,
    )
    shown = {}
    for label, (image, twin) in {
        "a test digit": (test[0], twins[0]),
        "a random field": (fields[0], field_twins[0]),
    }.items():
        k, (power, twin_power) = radial_power_spectrum(np.stack([image, twin]))
        shown[label] = (image, twin, k[1:], power[1:], twin_power[1:])  # |k| >= 1: a field has no mean
    ctx.figure(
        "twins",
        plots_spectra.spectrum_twins(shown),
        "A test digit and a Gaussian random field (P(k) ∝ |k|^-slope), each beside its random-phase twin: "
        "the same Fourier amplitudes with new phases. Their radial power spectra P(|k|) (from |k| = 1: the "
        "mean left out) lie on top of each other; the pictures share nothing a reader would call a digit.",
        lead=True,
    )


def _scaling(summary: str, train: np.ndarray):
    """The scaling of a classifier's inputs, from its training rows: pixels by one mean and one
    scale (as every MNIST lab standardizes them), a spectrum per feature (log P at each |k| spans
    its own range; ``comparison.preparation``). Returns features (N, F) -> a float32 tensor."""
    if summary == "pixels":
        mean, std = float(train.mean()), float(train.std())
        return lambda x: torch.from_numpy(((x - mean) / std).astype(np.float32))
    mean, std = feature_stats(train, None, 1, np.arange(len(train)))
    return lambda x: torch.from_numpy(standardized(x, None, mean, std, "table"))


def classified(ctx, cfg: PowerSpectrumConfig, splits, digits: dict, tests: dict) -> dict:
    """3. An MLP per summary, trained on centred digits: its accuracy on each test set."""
    accuracy: dict[str, dict[str, float]] = {}
    histories = {}
    for summary, label in CLASSIFIERS.items():
        inputs = _scaling(summary, summary_features(digits["train"], summary))
        train, val, test = (inputs(summary_features(digits[n], summary)) for n in ("train", "val", "test"))
        features = Splits(train, splits.y_train, val, splits.y_val, test, splits.y_test)
        width = train.shape[1]
        model = ctx.init_model(partial(MLP, (width, cfg.hidden, 10)), summary)
        fit = fit_classifier(model, features, cfg.train, ctx.training(summary))
        histories[label] = fit.history
        accuracy[summary] = {}
        for test_set, images in tests.items():
            x = inputs(summary_features(images, summary))
            accuracy[summary][test_set] = fit.trainer.evaluate((x, splits.y_test))["accuracy"]
            ctx.metric("accuracy", accuracy[summary][test_set], model=summary, digits=test_set)
    ctx.table(
        f"Test accuracy of an MLP ({cfg.hidden} hidden units) per summary, trained on centred digits",
        ["classifier's input", *TEST_SETS.values()],
        [[label, *(round(accuracy[s][t], 4) for t in TEST_SETS)] for s, label in CLASSIFIERS.items()],
        lead=True,
    )
    ctx.figure(
        "accuracy",
        plots.grouped_bars(
            {TEST_SETS[t]: [accuracy[s][t] for s in CLASSIFIERS] for t in TEST_SETS},
            list(CLASSIFIERS.values()),
            ylabel="test accuracy",
        ),
        f"Test accuracy of three MLPs trained on centred digits, each seeing one summary: the pixels, the "
        f"radial power spectrum P(|k|) or the 2-D P(k), on centred digits, on digits circularly shifted by "
        f"up to {cfg.max_shift} pixels, and on the digits' random-phase twins (chance: 0.1).",
    )
    ctx.figure(
        "learning_curves",
        plots.learning_curves(histories, keys=("train_loss", "val_loss", "val_accuracy")),
        "Training of the three classifiers on centred digits.",
    )
    return accuracy


def judged(ctx, cfg: PowerSpectrumConfig, accuracy: dict) -> None:
    """The findings of 3, each judged against biaslab's target."""
    points = {s: {t: 100 * a for t, a in accuracy[s].items()} for s in accuracy}
    kept = {s: abs(points[s]["shifted"] - points[s]["centred"]) for s in ("radial", "2d")}
    ctx.claim(
        "A classifier on the power spectrum keeps its accuracy under shifts: the summary cannot see them "
        "(a consequence of the identity above: its inputs do not change)",
        source=f"{NOTES}; biaslab's target (within {KEPT_POINTS:g} point of its accuracy on centred digits)",
        printed="The symmetry is built into the summary, so downstream models don't have to learn it.",
        kind="check",
        expected=f"|shifted − centred| <= {KEPT_POINTS:g} point, for P(|k|) and the 2-D P(k)",
        measured=f"P(|k|) {accuracy['radial']['centred']:.4f} → {accuracy['radial']['shifted']:.4f}; "
        f"2-D P(k) {accuracy['2d']['centred']:.4f} → {accuracy['2d']['shifted']:.4f}",
        passed=max(kept.values()) <= KEPT_POINTS,
    )
    lost = points["pixels"]["centred"] - points["pixels"]["shifted"]
    ctx.claim(
        f"A classifier on the pixels, trained on centred digits, loses accuracy when the digits shift "
        f"(by up to {cfg.max_shift} px): it was never given the symmetry",
        source=f"{NOTES}; biaslab's target (at least {LOST_POINTS:g} points lost)",
        kind="finding",
        expected=f"centred − shifted >= {LOST_POINTS:g} points",
        measured=f"{accuracy['pixels']['centred']:.4f} → {accuracy['pixels']['shifted']:.4f} "
        f"({-lost:+.1f} points)",
        passed=lost >= LOST_POINTS,
        checked_in_quick=False,
    )
    cost = points["pixels"]["centred"] - points["radial"]["centred"]
    ctx.claim(
        "But summaries have limits: on centred digits the pixels beat P(|k|), which has discarded the phases",
        source=f"{NOTES}; biaslab's target (pixels ahead by at least {COST_POINTS:g} points)",
        printed="But summaries have limits.",
        kind="finding",
        expected=f"pixels − P(|k|) >= {COST_POINTS:g} points on centred digits",
        measured=f"pixels {accuracy['pixels']['centred']:.4f}, P(|k|) {accuracy['radial']['centred']:.4f} "
        f"({cost:+.1f} points); the 2-D P(k), directions kept: {accuracy['2d']['centred']:.4f}",
        passed=cost >= COST_POINTS,
        checked_in_quick=False,
    )
    twin_kept = abs(points["radial"]["twins"] - points["radial"]["centred"])
    ctx.claim(
        "The phases hold where the structure is: the pixel classifier finds no digit in the random-phase "
        "twins, while the spectrum classifier, seeing the same P(|k|), scores them as the digits",
        source=f"{NOTES}; biaslab's target (pixels <= {NO_DIGIT:g} on the twins, chance 0.1; P(|k|) within "
        f"{KEPT_POINTS:g} point of its centred accuracy)",
        printed="discarding other information (the phases—where exactly the structures are located)",
        kind="finding",
        expected=f"pixels on twins <= {NO_DIGIT:g}; P(|k|) |twins − centred| <= {KEPT_POINTS:g} point",
        measured=f"pixels {accuracy['pixels']['twins']:.4f}; P(|k|) {accuracy['radial']['twins']:.4f} "
        f"(centred {accuracy['radial']['centred']:.4f})",
        passed=accuracy["pixels"]["twins"] <= NO_DIGIT and twin_kept <= KEPT_POINTS,
    )


def by_class(ctx, test: np.ndarray, labels: np.ndarray) -> None:
    """What P(|k|) shows a classifier: each digit's mean log spectrum."""
    k, power = radial_power_spectrum(test)
    log_power = np.log(power)
    means = {f"digit {d}": np.exp(log_power[labels == d].mean(0)) for d in range(10) if np.any(labels == d)}
    ctx.figure(
        "spectra_by_digit",
        plots_spectra.spectra_by_class(k, means),
        "The radial power spectrum P(|k|) of the test digits, the geometric mean per digit: how much "
        "structure each digit has at each scale, all that the P(|k|) classifier is given.",
    )
