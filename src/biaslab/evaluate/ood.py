"""Out-of-distribution (OOD) detection: post-hoc detectors and the metrics that compare them.

Each detector scores a sample from a trained classifier's outputs alone (its logits or its
penultimate features, passed as NumPy arrays or torch tensors), so it never needs the model.
Convention for every detector and metric here: **higher score = more out-of-distribution**.

* :class:`MSP`          — ``-max_c softmax(z)_c``  (Hendrycks & Gimpel 2017);
* :class:`MaxLogit`     — ``-max_c z_c``  (Hendrycks et al. 2022);
* :class:`Energy`       — the free energy ``-T logsumexp(z / T)``  (Liu et al. 2020);
* :class:`Mahalanobis`  — ``min_c (h - mu_c)^T S^+ (h - mu_c)`` with class means and one shared
  covariance of the features (Lee et al. 2018, without input preprocessing);
* :class:`KNN`          — distance to the k-th nearest training feature, features L2-normalised
  (Sun et al. 2022).

Detectors follow scikit-learn's estimator contract: ``__init__`` only stores its arguments,
``fit`` returns ``self``, learned state ends in ``_``, and ``score`` before ``fit`` raises
:class:`NotFittedError` (detectors that learn nothing have a no-op ``fit``). The class attribute
``uses`` says which array a detector reads: ``"logits"`` or ``"features"``.

Metrics treat in-distribution samples as negatives and OOD samples as positives:
:func:`auroc`, :func:`aupr` (average precision), :func:`fpr_at_95_tpr`, and :func:`ood_report`.

:func:`classifier_outputs` reads a trained classifier's logits and penultimate features (batched);
:func:`fit_detectors` fits all five on training features (kNN on a seeded subset);
:func:`choose_detector` picks the best AUROC on held-out data, to be measured on fresh data. The
metrics equal scikit-learn's.
"""

from __future__ import annotations

import numpy as np

from biaslab.checks import check_finite_array, check_integer, check_number
from biaslab.errors import NotFittedError
from biaslab.evaluate.metrics import roc_auc

_BLOCK_ELEMENTS = 2**23  # KNN: at most this many query x train distances (64 MiB float64) at once


def _matrix(x, name: str) -> np.ndarray:
    """A (N, D) float64 array of finite values, D >= 1, from an array or a torch tensor (detached,
    moved to the CPU): the input check of every detector. A NaN or infinite logit or feature is
    refused, since it would give a NaN score that no threshold flags."""
    x = check_finite_array(x, name, ndim=2)
    if x.shape[1] == 0:
        raise ValueError(f"{name} must be 2-D (N, D) with D >= 1, got shape {x.shape}")
    return x


def _logsumexp(z: np.ndarray) -> np.ndarray:
    """Row-wise ``log sum_c exp(z_c)``, shifted by the row maximum so it cannot overflow."""
    m = z.max(axis=1)
    return m + np.log(np.exp(z - m[:, None]).sum(axis=1))


class _Detector:
    uses = "logits"

    def fit(self, X=None, y=None):
        """Nothing to learn: returns ``self`` (accepts the same arguments as a learning detector)."""
        return self

    def _check_fitted(self, *attrs: str) -> None:
        if not all(hasattr(self, a) for a in attrs):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit on the training features first"
            )

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.endswith("_"))
        return f"{type(self).__name__}({args})"


class MSP(_Detector):
    """Negative maximum softmax probability: ``s(z) = -max_c exp(z_c) / sum_j exp(z_j)``, in [-1, -1/C]."""

    def score(self, logits) -> np.ndarray:
        """Shapes: logits (N, C); returns (N,) float64."""
        z = _matrix(logits, "logits")
        return -np.exp(z.max(axis=1) - _logsumexp(z))


class MaxLogit(_Detector):
    """Negative maximum logit: ``s(z) = -max_c z_c``."""

    def score(self, logits) -> np.ndarray:
        """Shapes: logits (N, C); returns (N,) float64."""
        return -_matrix(logits, "logits").max(axis=1)


class Energy(_Detector):
    """Free energy ``E(z) = -T log sum_c exp(z_c / T)``: low (very negative) for confident samples.

    Args:
        temperature: T > 0 (default 1.0); as T -> 0 the score tends to MaxLogit's ``-max_c z_c``.
    """

    def __init__(self, temperature: float = 1.0):
        self.temperature = temperature

    def score(self, logits) -> np.ndarray:
        """Shapes: logits (N, C); returns (N,) float64."""
        t = check_number(self.temperature, "temperature", 0.0, low_open=True)
        return -t * _logsumexp(_matrix(logits, "logits") / t)


class Mahalanobis(_Detector):
    """Smallest squared Mahalanobis distance to a class mean under one shared (tied) covariance.

    ``fit`` estimates the class means ``mu_c`` and the maximum-likelihood shared covariance
    ``S = (1/N) sum_i (h_i - mu_{y_i})(h_i - mu_{y_i})^T`` of the training features; ``score`` is
    ``min_c (h - mu_c)^T S^+ (h - mu_c)``. ``S^+`` is the Moore-Penrose pseudo-inverse (symmetric
    eigendecomposition, as ``sklearn.covariance.EmpiricalCovariance``), so a singular covariance —
    more dimensions than samples, dead ReLU units — still gives finite scores: directions with no
    training variance are ignored rather than blown up.

    Attributes (after ``fit``):
        classes_ (C,); means_ (C, D); covariance_ (D, D); precision_ (D, D): ``S^+``.
    """

    uses = "features"

    def fit(self, features, labels):
        """Shapes: features (N, D), labels (N,). Returns ``self``."""
        h = _matrix(features, "features")
        y = np.asarray(labels.detach().cpu() if hasattr(labels, "detach") else labels).ravel()
        if len(y) != len(h) or len(h) == 0:
            raise ValueError(
                f"features and labels need the same number N >= 1 of rows, got {len(h)} feature rows "
                f"and {len(y)} labels"
            )
        classes, idx = np.unique(y, return_inverse=True)
        counts = np.bincount(idx, minlength=len(classes)).astype(np.float64)
        sums = np.zeros((len(classes), h.shape[1]))
        np.add.at(sums, idx, h)
        means = sums / counts[:, None]  # (C, D)
        centred = h - means[idx]  # (N, D)
        self.covariance_ = centred.T @ centred / len(h)
        self.precision_ = np.linalg.pinv(self.covariance_, hermitian=True)
        self.classes_, self.means_ = classes, means
        return self

    def score(self, features) -> np.ndarray:
        """Shapes: features (N, D); returns (N,) float64."""
        self._check_fitted("means_", "precision_")
        h = _matrix(features, "features")
        best = np.full(len(h), np.inf)
        for mu in self.means_:  # one (N, D) difference at a time, not (N, C, D)
            d = h - mu
            best = np.minimum(best, np.einsum("nd,de,ne->n", d, self.precision_, d, optimize=True))
        return np.maximum(best, 0.0)  # a positive semi-definite form; clears rounding below 0


class KNN(_Detector):
    """Euclidean distance to the k-th nearest training feature (Sun et al. 2022).

    With ``normalize`` every feature is scaled to unit L2 norm first, so the distance is
    ``sqrt(2 - 2 cos)`` of the angle to the neighbour. Distances are computed in blocks of query
    rows (at most ``2**23`` query-train pairs, 64 MiB of float64, per block; about 200 MiB peak
    with temporaries), so memory does not grow with the number of queries. A query equal to a
    training point counts that point as its own neighbour (score 0 for k = 1).

    Args:
        k: which neighbour (default 50); must not exceed the number of training features.
        normalize: L2-normalise training and query features (default True).

    Attributes (after ``fit``):
        train_features_ (N, D): the (normalised) training features; train_sq_norms_ (N,).
    """

    uses = "features"

    def __init__(self, k: int = 50, normalize: bool = True):
        self.k = k
        self.normalize = normalize

    def _prepare(self, features) -> np.ndarray:
        h = _matrix(features, "features")
        if self.normalize:
            h = h / np.maximum(np.linalg.norm(h, axis=1, keepdims=True), 1e-12)
        return h

    def fit(self, features, labels=None):
        """Store the training features (labels are ignored). Shapes: features (N, D). Returns self."""
        h = self._prepare(features)
        check_integer(self.k, "k", 1, max(1, len(h)), why=" (the number of training features)")
        if len(h) == 0:
            raise ValueError("features needs at least one training row, got none")
        self.train_features_ = h
        self.train_sq_norms_ = np.einsum("nd,nd->n", h, h)
        return self

    def score(self, features) -> np.ndarray:
        """Shapes: features (M, D); returns (M,) float64."""
        self._check_fitted("train_features_")
        q = self._prepare(features)
        train, k = self.train_features_, int(self.k)
        rows = max(1, _BLOCK_ELEMENTS // max(1, len(train)))
        out = np.empty(len(q))
        for start in range(0, len(q), rows):
            block = q[start : start + rows]
            sq = np.einsum("md,md->m", block, block)[:, None] + self.train_sq_norms_ - 2.0 * block @ train.T
            out[start : start + rows] = np.partition(sq, k - 1, axis=1)[:, k - 1]
        return np.sqrt(np.maximum(out, 0.0))


def ood_scores(detector, *, logits=None, features=None) -> np.ndarray:
    """``detector.score`` of whichever array it uses (``detector.uses``): logits or features."""
    x = logits if detector.uses == "logits" else features
    if x is None:
        raise ValueError(f"{type(detector).__name__} scores {detector.uses}; pass {detector.uses}=...")
    return detector.score(x)


def classifier_outputs(model, x, features: str = "hidden", head=None) -> dict[str, np.ndarray]:
    """What the detectors read from a trained classifier, ``{"logits": (N, C), "features": (N, D)}``
    as NumPy arrays, computed in eval mode without gradients, in batches, on the model's device.

    Args:
        model: a classifier (a ``torch.nn.Module``).
        x: its inputs (N, ...).
        features: the model's method giving the penultimate features: ``"hidden"`` for
            :class:`biaslab.nn.MLP` (default), ``"embedding"`` for :class:`biaslab.nn.CNN`.
        head: the module that turns those features into the logits, when the model's forward is
            ``head(features(x))`` (a :class:`biaslab.nn.CNN`'s ``model.head``): the network then
            runs once, not twice, and the logits are the same bits (the same batches).
    """
    from biaslab.train.recipes import predict

    hidden = predict(model, x, features)  # on the model's device
    logits = predict(head, hidden) if head is not None else predict(model, x)
    return {"logits": logits.cpu().numpy(), "features": hidden.cpu().numpy()}


def fit_detectors(train_features, train_labels, knn_k: int = 50, knn_train=None, seed: int = 0) -> dict:
    """Every detector of this module, fitted on a classifier's training features.

    Args:
        train_features: (N, D) penultimate features of the training inputs.
        train_labels: (N,) their labels (Mahalanobis' class means).
        knn_k: the kNN detector's neighbour (default 50).
        knn_train: the kNN detector searches this many training features, drawn without
            replacement with ``seed`` (default None: all of them).

    Returns:
        ``{"MSP", "max logit", "energy", "Mahalanobis", "kNN"}`` -> fitted detector.
    """
    h = _matrix(train_features, "train_features")
    rows = np.arange(len(h))
    if knn_train is not None:
        knn_train = check_integer(knn_train, "knn_train", 1)
    if knn_train is not None and knn_train < len(h):
        rows = np.random.default_rng(seed).choice(len(h), knn_train, replace=False)
    return {
        "MSP": MSP(),
        "max logit": MaxLogit(),
        "energy": Energy(),
        "Mahalanobis": Mahalanobis().fit(h, train_labels),
        "kNN": KNN(k=knn_k).fit(h[rows]),
    }


def choose_detector(detectors: dict, inside: dict, outside: dict) -> tuple[str, dict[str, float]]:
    """The fitted detector whose scores separate ``inside`` from ``outside`` best (AUROC).

    Choose on held-out data (validation digits and one part of the OOD set) and measure the
    chosen detector on fresh data: the best of several AUROCs measured on the same data is an
    optimistic estimate of the one you would deploy.

    Args:
        detectors: name -> fitted detector.
        inside, outside: ``{"logits": ..., "features": ...}`` of in- and out-of-distribution
            samples (only the arrays the detectors use are needed).

    Returns:
        ``(name, {name: AUROC})``; the first listed wins a tie.
    """
    aurocs = {
        name: auroc(ood_scores(det, **inside), ood_scores(det, **outside)) for name, det in detectors.items()
    }
    return max(aurocs, key=aurocs.get), aurocs


# -- metrics: in-distribution = negatives (label 0), OOD = positives (label 1) --------------------


def _pair(scores_in, scores_out) -> tuple[np.ndarray, np.ndarray]:
    """Both score vectors as 1-D float64 arrays, each with at least one finite score (their
    lengths may differ). A 2-D array or a scalar is refused rather than flattened."""
    s_in, s_out = (
        check_finite_array(s, n, ndim=1) for s, n in ((scores_in, "scores_in"), (scores_out, "scores_out"))
    )
    if len(s_in) == 0 or len(s_out) == 0:
        raise ValueError(
            f"both scores_in and scores_out need at least one score, got {len(s_in)} and {len(s_out)}"
        )
    return s_in, s_out


def auroc(scores_in, scores_out) -> float:
    """P(an OOD score > an in-distribution score), ties counting 1/2 (average ranks).

    Equals ``sklearn.metrics.roc_auc_score`` with labels 0 for in, 1 for out. Shapes: (N,), (M,).
    """
    s_in, s_out = _pair(scores_in, scores_out)
    labels = np.concatenate([np.zeros(len(s_in)), np.ones(len(s_out))])
    return roc_auc(labels, np.concatenate([s_in, s_out]), pos_label=1)


def aupr(scores_in, scores_out) -> float:
    """Average precision with OOD as the positive class: ``AP = sum_n (R_n - R_{n-1}) P_n``.

    The sum runs over the distinct scores t in decreasing order, with precision ``P`` and recall
    ``R`` of the rule "OOD if score >= t" (a tied group enters at once), ``R_0 = 0``. Equals
    ``sklearn.metrics.average_precision_score``. Shapes: (N,), (M,).
    """
    s_in, s_out = _pair(scores_in, scores_out)
    scores = np.concatenate([s_in, s_out])
    is_out = np.concatenate([np.zeros(len(s_in)), np.ones(len(s_out))])
    order = np.argsort(-scores, kind="mergesort")
    scores, is_out = scores[order], is_out[order]
    last = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1]  # end of each tied group
    tp = np.cumsum(is_out)[last]
    precision, recall = tp / (last + 1.0), tp / len(s_out)
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))


def fpr_at_95_tpr(scores_in, scores_out, tpr: float = 0.95) -> float:
    """Fraction of in-distribution samples flagged when 95% of OOD samples are flagged.

    Rule: a sample is flagged OOD when its score is **at or above** a threshold ``t``. The
    threshold is the largest ``t`` whose true-positive rate ``#{out >= t} / M`` is ``>= tpr`` —
    the ``ceil(tpr M)``-th largest OOD score; the result is ``#{in >= t} / N``, so in-distribution
    scores tied with the threshold count as false positives. Since FPR only falls as ``t`` rises,
    this is the smallest FPR among all thresholds with TPR >= ``tpr`` (the value read off
    ``sklearn.metrics.roc_curve(..., drop_intermediate=False)``).

    Args:
        tpr: the true-positive rate to keep (default 0.95), in (0, 1].
    Shapes:
        scores_in (N,), scores_out (M,).
    """
    tpr = check_number(tpr, "tpr", 0.0, 1.0, low_open=True)
    s_in, s_out = _pair(scores_in, scores_out)
    m = len(s_out)
    need = int(np.argmax(np.arange(m + 1) / m >= tpr))  # fewest detections with rate >= tpr
    threshold = np.sort(s_out)[m - need]  # the need-th largest OOD score
    return float(np.mean(s_in >= threshold))


def ood_report(scores_in, scores_out) -> dict:
    """``{"auroc": ..., "aupr": ..., "fpr_at_95_tpr": ...}`` as floats (OOD = positive class)."""
    return {
        "auroc": auroc(scores_in, scores_out),
        "aupr": aupr(scores_in, scores_out),
        "fpr_at_95_tpr": fpr_at_95_tpr(scores_in, scores_out),
    }
