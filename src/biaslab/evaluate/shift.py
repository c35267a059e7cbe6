"""Distribution shift: what changed between the data a model learned from and the data it meets.

Three kinds (Quiñonero-Candela et al. 2009), each exposed by a different measurement:

* **covariate shift** — p(x) changes, p(y|x) stays: the inputs look different, which a *domain
  classifier* trained to tell source from target inputs detects (:func:`domain_auc` ≫ 0.5),
  without any target label.
* **label shift** — p(y) changes, p(x|y) stays: the mix of classes moves, which the model's own
  *predicted class frequencies* reveal (:func:`predicted_label_shift`, black-box shift
  detection; Lipton et al. 2018), again without target labels.
* **concept shift** — p(y|x) changes: the same inputs now mean something else. Inputs and
  predictions look exactly as before (domain AUC ≈ 0.5, no label shift); only *labelled* target
  data — the accuracy itself — exposes it.

:func:`shift_scenario` draws a small 2-D problem of each kind.
"""

from __future__ import annotations

import numpy as np

from biaslab.checks import check_integer

__all__ = ["SHIFT_KINDS", "domain_auc", "predicted_label_shift", "shift_scenario"]

SHIFT_KINDS = ("covariate", "label", "concept")


def _concept(x: np.ndarray, tilt: float = 0.0) -> np.ndarray:
    """The labelling rule y = 1[x₂ > 0.5·x₁² − 0.5 + tilt·x₁]: a curved boundary."""
    return (x[:, 1] > 0.5 * x[:, 0] ** 2 - 0.5 + tilt * x[:, 0]).astype(np.int64)


def shift_scenario(kind: str, n: int = 2000, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Source and target samples of one kind of shift: ``(x_source, y_source, x_target, y_target)``.

    * ``"covariate"``: the same rule y = 1[x₂ > 0.5x₁² − 0.5]; source x ~ N((−1, 0), 0.6²I),
      target x ~ N((1.5, 0.5), 0.6²I): a model that is right where it was trained is wrong where
      the curve bends the other way.
    * ``"label"``: x | y ~ N(μ_y, I) with μ_0 = (−1, 0), μ_1 = (1, 0); 50% class 1 in the source,
      10% in the target.
    * ``"concept"``: source x and target x ~ N(0, I); the target's rule is tilted,
      y = 1[x₂ > 0.5x₁² − 0.5 + 1.5x₁].

    Inputs float64 (n, 2), labels int64 (n,).
    """
    if kind not in SHIFT_KINDS:
        raise ValueError(f"kind must be one of {SHIFT_KINDS}, got {kind!r}")
    n = check_integer(n, "n", 1)
    rng = np.random.default_rng(seed)
    if kind == "covariate":
        x_s = rng.normal((-1.0, 0.0), 0.6, (n, 2))
        x_t = rng.normal((1.5, 0.5), 0.6, (n, 2))
        return x_s, _concept(x_s), x_t, _concept(x_t)
    if kind == "label":
        means = np.array([[-1.0, 0.0], [1.0, 0.0]])
        y_s = (rng.random(n) < 0.5).astype(np.int64)
        y_t = (rng.random(n) < 0.1).astype(np.int64)
        return means[y_s] + rng.normal(0, 1, (n, 2)), y_s, means[y_t] + rng.normal(0, 1, (n, 2)), y_t
    x_s, x_t = rng.normal(0, 1, (n, 2)), rng.normal(0, 1, (n, 2))
    return x_s, _concept(x_s), x_t, _concept(x_t, tilt=1.5)


def domain_auc(x_source, x_target, folds: int = 5, seed: int = 0) -> float:
    """Cross-validated AUROC of a classifier that tells target inputs from source inputs.

    0.5: the inputs are indistinguishable (no covariate shift it can see); near 1: they differ.
    A gradient-boosted tree ensemble (scikit-learn's ``HistGradientBoostingClassifier``) is fitted
    on ``folds - 1`` folds and scores the held-out fold, so the AUROC is an honest estimate.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    n_source, n_target = len(x_source), len(x_target)
    x = np.concatenate([np.asarray(x_source), np.asarray(x_target)]).reshape(n_source + n_target, -1)
    domain = np.r_[np.zeros(n_source), np.ones(n_target)]
    splitter = StratifiedKFold(folds, shuffle=True, random_state=seed)
    model = HistGradientBoostingClassifier(max_iter=100, random_state=seed)
    scores = cross_val_predict(model, x, domain, cv=splitter, method="predict_proba")[:, 1]
    return float(roc_auc_score(domain, scores))


def predicted_label_shift(pred_source, pred_target, n_classes: int) -> float:
    """Total-variation distance ½·Σ_c |q_s(c) − q_t(c)| between the frequencies of the predicted
    classes on source (held-out) and target inputs: 0 when the predicted mix is unchanged.

    Shapes: pred_source (N,), pred_target (M,), integer classes in ``[0, n_classes)``, N, M >= 1.
    """
    n_classes = check_integer(n_classes, "n_classes", 1)
    predictions = {"pred_source": np.asarray(pred_source), "pred_target": np.asarray(pred_target)}
    for name, p in predictions.items():
        if p.ndim != 1 or len(p) == 0 or not np.issubdtype(p.dtype, np.integer):
            raise ValueError(
                f"{name} must be a non-empty 1-D array of integer classes, got {p.dtype} {p.shape}"
            )
        if p.min() < 0 or p.max() >= n_classes:
            raise ValueError(f"{name} must hold classes in [0, {n_classes}), got [{p.min()}, {p.max()}]")
    q_s = np.bincount(predictions["pred_source"], minlength=n_classes) / len(pred_source)
    q_t = np.bincount(predictions["pred_target"], minlength=n_classes) / len(pred_target)
    return float(0.5 * np.abs(q_s - q_t).sum())
