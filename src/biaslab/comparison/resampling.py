"""Repeated validation splits: how sure a comparison's ranking is on small data.

One validation split of a few hundred rows ranks candidates by a handful of rows: on breast
cancer (85 validation rows) one error against seven decides. The protocol's test rows stay as
they are (read once, after every choice); the remaining rows are drawn anew into training and
validation ``repeats`` times (each class split on its own, as the first split), every statistic
refitted on each draw's training rows, and each candidate trained and validated on every draw
(repeated hold-out validation; Kohavi 1995 compares it with cross-validation). The mean of the
validation scores ranks the candidates; their standard error, ``std / sqrt(repeats)``, says which
are tied (within one standard error of the best: Hastie, Tibshirani & Friedman 2009, §7.10's
one-standard-error rule, the simpler model first).

On one split (``repeats`` 1) the standard error comes from the validation rows themselves: an
accuracy's ``sqrt(p(1 − p) / n)``, an MAE's ``sqrt((RMSE² − MAE²) / n)``
(:func:`biaslab.comparison.judged.score_and_error`, what the ranking reads).

:func:`repeats_for` decides how many splits: ``REPEATS`` (5) below ``SMALL_DATA_ROWS`` (2,000)
examples, 1 for graphs and molecules (or as asked); :func:`resplit` draws one, keeping the test
rows and refitting every statistic (:func:`~biaslab.comparison.protocol.prepared_rows`). The
ranking is :func:`biaslab.comparison.judged.recommended`'s: among the candidates that ship when
any do, the best mean validation score; within one standard error of it, the simpler prior
(``judged.SIMPLER_FIRST``, then fewer parameters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from biaslab.comparison.preparation import SPLITS
from biaslab.comparison.protocol import prepared_rows
from biaslab.train.seed import derive_seed

if TYPE_CHECKING:
    from biaslab.comparison.prepared import Prepared
    from biaslab.data.user_data import UserData

__all__ = ["SMALL_DATA_ROWS", "repeats_for", "resplit"]

SMALL_DATA_ROWS = 2000  # below this many examples a comparison repeats its validation split
REPEATS = 5  # validation splits on small data (the first is the protocol's own)


def repeats_for(n_rows: int, kind: str, asked: int = 0) -> int:
    """How many validation splits: 1 for graphs and molecules (their splits are the graph
    preparation's, random or by scaffold: not redrawn here yet); else ``asked`` when given (>= 1),
    or :data:`REPEATS` for data of fewer than :data:`SMALL_DATA_ROWS` examples and 1 otherwise."""
    if kind in ("graph", "molecule"):
        return 1
    if asked >= 1:
        return asked
    return REPEATS if n_rows < SMALL_DATA_ROWS else 1


def resplit(data: UserData, prepared: Prepared, repeat: int) -> Prepared:
    """``prepared``'s test rows kept, its training and validation rows drawn anew (``repeat`` >= 1
    seeds the draw), each class in the same proportion as the first split; prepared again from
    the new training rows (:func:`~biaslab.comparison.protocol.prepared_rows`).

    Shapes:
        the same number of training, validation and test rows as ``prepared``.
    """
    rng = np.random.default_rng(derive_seed(prepared.seed, "compare-resplit", repeat))
    rest = np.concatenate([prepared.rows["train"], prepared.rows["val"]])
    n_val = len(prepared.rows["val"])
    if data.task == "classify":  # as many validation rows of each class as the first split has
        val = [
            rng.permutation(rest[data.y[rest] == c])[: int(np.sum(data.y[prepared.rows["val"]] == c))]
            for c in range(data.n_classes)
        ]
        val_rows = np.concatenate(val)
    else:
        val_rows = rng.permutation(rest)[:n_val]
    train_rows = np.setdiff1d(rest, val_rows)
    rows = dict(zip(SPLITS, (rng.permutation(train_rows), rng.permutation(val_rows), prepared.rows["test"])))
    return prepared_rows(data, rows, prepared.seed)
