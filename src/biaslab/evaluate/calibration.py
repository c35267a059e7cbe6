"""Calibration: do the predicted confidences match the observed accuracies?

A classifier is calibrated when, among the predictions made with top-label confidence p, a
fraction p is correct. Bin the confidences into M equal-width bins B_1 .. B_M over [0, 1]; with
acc(B) the accuracy and conf(B) the mean confidence of the n_B predictions in bin B, N in all,

    ECE = Σ_B (n_B / N) · |acc(B) − conf(B)|          (Guo et al. 2017, eq. 3)
    MCE = max_B |acc(B) − conf(B)|  over the non-empty bins

Temperature scaling (Guo et al. 2017, §4.2) fixes over-confidence with one parameter learned on a
validation split: softmax(z / T) with T > 0 keeps the argmax and minimises the validation NLL.

Binning convention (torchmetrics' ``MulticlassCalibrationError``): bin b holds the confidences in
[b/M, (b+1)/M), so a confidence exactly on an edge falls into the bin that *starts* there, and a
confidence of exactly 1.0 (in float32) gets a bin of its own (index M) rather than sharing the top
bin. ECE and MCE equal torchmetrics' up to float32 rounding of the means (tests check 1e-6).

:func:`reliability_bins` -> :class:`ReliabilityDiagram`; :func:`expected_calibration_error`
(``norm`` l1, l2 or max), :func:`maximum_calibration_error`; :class:`TemperatureScaling` follows
scikit-learn's estimator contract and fits T by L-BFGS on the validation NLL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from biaslab.checks import check_integer, check_number
from biaslab.errors import NotFittedError

NORMS = ("l1", "l2", "max")
MAX_BINS = 10_000  # the most bins reliability_bins accepts
_BINS_WHY = (
    " (with more bins each holds too few predictions to measure an accuracy, and the bins'"
    " arrays grow with their count, not with the data)"
)


@dataclass(frozen=True)
class ReliabilityDiagram:
    """Per-bin counts, mean confidence and accuracy: the numbers of a reliability diagram.

    Shapes:
        counts, confidence, accuracy, edges: ``(M + 1,)`` for M bins. Entry b < M is the bin
        ``[edges[b], edges[b + 1])`` (edges ``b / M``, compared in float32); entry M holds the
        confidences exactly 1.0 (``edges[M] = 1``).
        ``confidence`` and ``accuracy`` are NaN in an empty bin (a plot then skips it).
    """

    counts: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    edges: np.ndarray

    def calibration_error(self, norm: str = "l1") -> float:
        """``"l1"``: ECE = Σ (n_b/N)|acc_b − conf_b|; ``"l2"``: √(Σ (n_b/N)(acc_b − conf_b)²);
        ``"max"``: MCE = max |acc_b − conf_b| over the non-empty bins."""
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
        full = self.counts > 0
        gap = np.abs(self.accuracy[full] - self.confidence[full])
        weight = self.counts[full] / self.counts.sum()
        if norm == "max":
            return float(gap.max())
        if norm == "l2":
            return float(math.sqrt(np.sum(weight * gap**2)))
        return float(np.sum(weight * gap))


def _numpy(x, name: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.is_floating_point() and x.dtype not in (torch.float32, torch.float64):
            x = x.float()  # float16 / bfloat16: NumPy has no bfloat16
        return x.numpy()
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array or tensor: {exc}") from None


def _top_label(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    """Validated (confidence (N,), correct (N,) bool) from (N, C) probabilities and labels (N,), or
    from a confidence vector (N,) and its correctness (N,) of 0/1 or bools."""
    p, y = _numpy(probs, "probs"), _numpy(labels, "labels")
    if p.ndim not in (1, 2) or p.shape[0] == 0 or (p.ndim == 2 and p.shape[1] == 0):
        raise ValueError(f"probs must have shape (N, C) or (N,) with N, C >= 1; got {p.shape}")
    if not np.issubdtype(p.dtype, np.floating):
        raise ValueError(f"probs must be floating-point probabilities; got dtype {p.dtype}")
    if y.shape != (p.shape[0],):
        raise ValueError(f"labels must have shape ({p.shape[0]},) to match probs {p.shape}; got {y.shape}")
    if not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1:
        raise ValueError("probs must be probabilities in [0, 1] (logits? apply softmax first)")
    if not (np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_):
        raise ValueError(f"labels must be integers; got dtype {y.dtype}")
    if p.ndim == 1:
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("with a confidence vector, labels must say correct (1) or wrong (0)")
        return p, y.astype(bool)
    sums = p.sum(axis=1, dtype=np.float64)
    if not np.allclose(sums, 1.0, rtol=0, atol=1e-4):
        worst = int(np.argmax(np.abs(sums - 1)))
        raise ValueError(f"each row of probs must sum to 1; row {worst} sums to {sums[worst]:.6g}")
    if y.min() < 0 or y.max() >= p.shape[1]:
        raise ValueError(f"labels must lie in [0, {p.shape[1]}); got values in [{y.min()}, {y.max()}]")
    return p.max(axis=1), p.argmax(axis=1) == y


def reliability_bins(probs, labels, n_bins: int = 15) -> ReliabilityDiagram:
    """Bin the top-label confidences into ``n_bins`` equal-width bins over [0, 1].

    Binned exactly as torchmetrics bins: the confidences rounded to float32 are placed among the
    float32 edges ``torch.linspace(0, 1, n_bins + 1)``. So a float64 confidence within float32
    rounding of 1.0 (a saturated softmax) counts as 1.0 whatever the input precision, and the bin
    counts do not depend on it; the means are taken in float64 from the unrounded confidences.

    Args:
        probs: probabilities ``(N, C)`` (rows sum to 1), tensor or array; or a confidence vector
            ``(N,)`` of the predicted labels' probabilities.
        labels: integer true labels ``(N,)`` in ``[0, C)``; with a confidence vector: 1 (or True)
            where the prediction was correct, else 0.
        n_bins: number of equal-width bins M (default 15), an integer in 1..``MAX_BINS`` (10000).
    Returns:
        A :class:`ReliabilityDiagram` with M + 1 entries (the last for confidences exactly 1.0).
    """
    n_bins = check_integer(n_bins, "n_bins", 1, MAX_BINS, why=_BINS_WHY)
    conf, correct = _top_label(probs, labels)
    edges = torch.linspace(0, 1, n_bins + 1, dtype=torch.float32).numpy()  # torchmetrics' edges
    index = np.searchsorted(edges, conf.astype(np.float32), side="right") - 1  # edge b -> bin b, 1.0 -> M
    counts = np.bincount(index, minlength=n_bins + 1)
    with np.errstate(invalid="ignore", divide="ignore"):  # empty bins -> NaN
        confidence = np.bincount(index, weights=conf.astype(np.float64), minlength=n_bins + 1) / counts
        accuracy = np.bincount(index, weights=correct.astype(np.float64), minlength=n_bins + 1) / counts
    return ReliabilityDiagram(counts, confidence, accuracy, np.arange(n_bins + 1) / n_bins)


def expected_calibration_error(probs, labels, n_bins: int = 15, norm: str = "l1") -> float:
    """ECE = Σ_b (n_b/N)·|acc_b − conf_b| over equal-width confidence bins (Guo et al. 2017, eq. 3).

    Equals ``torchmetrics``' ``MulticlassCalibrationError(num_classes=C, n_bins, norm)`` (and its
    binary version for a confidence vector); see :func:`reliability_bins` for the inputs.

    Args:
        norm: ``"l1"`` (ECE, default), ``"l2"`` (root-mean-square calibration error) or ``"max"``
            (MCE, as :func:`maximum_calibration_error`).
    Returns:
        The calibration error, a float in [0, 1].
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    return reliability_bins(probs, labels, n_bins).calibration_error(norm)


def maximum_calibration_error(probs, labels, n_bins: int = 15) -> float:
    """MCE = max_b |acc_b − conf_b| over the non-empty bins (Guo et al. 2017, eq. 5)."""
    return reliability_bins(probs, labels, n_bins).calibration_error("max")


def _logits(x, name: str = "logits") -> torch.Tensor:
    z = x.detach() if isinstance(x, torch.Tensor) else torch.as_tensor(_numpy(x, name))
    if z.ndim != 2 or z.shape[0] == 0 or z.shape[1] < 2:
        raise ValueError(f"{name} must have shape (N, C) with N >= 1 and C >= 2; got {tuple(z.shape)}")
    if not z.is_floating_point() or not torch.isfinite(z).all():
        raise ValueError(f"{name} must be finite floating-point numbers")
    return z


class TemperatureScaling:
    """Post-hoc calibration by one temperature: ``softmax(z / T)``, T fitted on a validation split.

    ``fit`` minimises the mean negative log-likelihood NLL(T) = −(1/N) Σ_i log softmax(z_i / T)_{y_i}
    over ``log T`` (so T = exp(log T) > 0) with full-batch L-BFGS and a strong-Wolfe line search in
    float64, starting from T = 1. ``log T`` is clamped to ``[log min_temperature, log
    max_temperature]``: on separable data the NLL keeps falling as T -> 0 and has no minimum.
    Deterministic: no random numbers are drawn. Dividing by T > 0 never changes the argmax.

    Args:
        min_temperature, max_temperature: the range T is searched in (default 0.01 .. 100).
    Attributes (after ``fit``):
        temperature_: the fitted T; nll_: the validation NLL at T; n_iter_: L-BFGS iterations;
        n_classes_: C, the number of logits per example.
    """

    def __init__(self, min_temperature: float = 1e-2, max_temperature: float = 1e2):
        self.min_temperature = min_temperature
        self.max_temperature = max_temperature

    def fit(self, logits, labels, max_iter: int = 100, tol: float = 1e-9) -> TemperatureScaling:
        """Learn T from validation logits ``(N, C)`` and integer labels ``(N,)``; returns self.

        Args:
            max_iter: the most L-BFGS iterations (default 100).
            tol: stop when |dNLL/dlog T| falls below this (default 1e-9).
        """
        check_number(self.min_temperature, "min_temperature", 0.0, 1.0, low_open=True)
        check_number(self.max_temperature, "max_temperature", 1.0)
        max_iter = check_integer(max_iter, "max_iter", 1)
        tol = check_number(tol, "tol", 0.0)
        # On the CPU, in float64 (which MPS lacks): one number, the same on every device.
        z = _logits(logits).cpu().to(torch.float64)
        y = labels.detach() if isinstance(labels, torch.Tensor) else torch.as_tensor(_numpy(labels, "labels"))
        if y.shape != (z.shape[0],) or y.is_floating_point() or y.dtype == torch.bool:
            raise ValueError(f"labels must be integers of shape ({z.shape[0]},); got {tuple(y.shape)}")
        if y.min() < 0 or y.max() >= z.shape[1]:
            raise ValueError(f"labels must lie in [0, {z.shape[1]})")
        y = y.to(z.device).long()
        lo, hi = math.log(self.min_temperature), math.log(self.max_temperature)
        log_t = torch.zeros((), dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS(
            [log_t], lr=1.0, max_iter=max_iter, tolerance_grad=tol, tolerance_change=1e-12,
            line_search_fn="strong_wolfe",
        )  # fmt: skip

        def nll() -> torch.Tensor:
            opt.zero_grad()
            loss = F.cross_entropy(z * torch.exp(-log_t.clamp(lo, hi)), y)
            loss.backward()
            return loss

        with torch.enable_grad():
            opt.step(nll)
        t = math.exp(min(max(log_t.item(), lo), hi))
        if not math.isfinite(t):
            raise ValueError("temperature scaling did not converge to a finite temperature")
        self.temperature_ = t
        self.nll_ = float(F.cross_entropy(z / t, y))
        self.n_iter_ = int(opt.state[log_t].get("n_iter", 0))
        self.n_classes_ = int(z.shape[1])
        return self

    def _check(self, logits) -> torch.Tensor:
        if not hasattr(self, "temperature_"):
            raise NotFittedError(
                "this TemperatureScaling is not fitted yet; call fit(logits_val, labels_val) first"
            )
        z = _logits(logits)
        if z.shape[1] != self.n_classes_:
            raise ValueError(f"fitted on {self.n_classes_} classes, got logits with {z.shape[1]}")
        return z

    def transform(self, logits):
        """The scaled logits ``z / T`` (a tensor for a tensor, an array for an array)."""
        out = self._check(logits) / self.temperature_
        return out if isinstance(logits, torch.Tensor) else out.numpy()

    def predict_proba(self, logits):
        """The calibrated probabilities ``softmax(z / T)`` over the last axis, shape ``(N, C)``."""
        out = torch.softmax(self._check(logits) / self.temperature_, dim=-1)
        return out if isinstance(logits, torch.Tensor) else out.numpy()
