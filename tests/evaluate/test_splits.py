"""Tests for biaslab.evaluate.splits: disjoint, covering, stratified like scikit-learn promises."""

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from biaslab.evaluate.splits import k_fold, stratified_split


def imbalanced_labels(seed=0):
    return np.random.default_rng(seed).choice(4, size=503, p=[0.6, 0.25, 0.1, 0.05])


def test_stratified_split_is_a_partition_with_the_class_shares_of_the_whole():
    y = imbalanced_labels()
    parts = stratified_split(y, val=0.1, test=0.2, seed=3)
    together = np.concatenate([parts.train, parts.val, parts.test])
    assert sorted(together.tolist()) == list(range(len(y)))
    for cls in range(4):
        n_c = int((y == cls).sum())
        assert int((y[parts.val] == cls).sum()) == round(0.1 * n_c)
        assert int((y[parts.test] == cls).sum()) == round(0.2 * n_c)
    again = stratified_split(y, val=0.1, test=0.2, seed=3)
    assert np.array_equal(again.val, parts.val) and not np.array_equal(
        stratified_split(y, val=0.1, test=0.2, seed=4).val, parts.val
    )


@pytest.mark.parametrize("stratified", [True, False])
def test_k_fold_validation_folds_partition_the_data(stratified):
    y = imbalanced_labels(1)
    folds = k_fold(y, k=5, seed=0, stratified=stratified)
    held_out = np.concatenate([val for _, val in folds])
    assert sorted(held_out.tolist()) == list(range(len(y)))
    for train, val in folds:
        assert not set(train.tolist()) & set(val.tolist()) and len(train) + len(val) == len(y)
        assert abs(len(val) - len(y) / 5) <= 4


def test_stratified_folds_hold_each_class_share_like_sklearns():
    y = imbalanced_labels(2)
    ours = [np.bincount(y[val], minlength=4) for _, val in k_fold(y, k=5, seed=0)]
    theirs = [
        np.bincount(y[val], minlength=4)
        for _, val in StratifiedKFold(5, shuffle=True, random_state=0).split(np.zeros(len(y)), y)
    ]
    for counts in (ours, theirs):  # every fold within one example of the class's even share
        spread = np.ptp(np.stack(counts), axis=0)
        assert (spread <= 1).all(), spread


@pytest.mark.parametrize("kwargs", [{"val": 0.6, "test": 0.5}, {"val": -0.1}])
def test_bad_fractions(kwargs):
    with pytest.raises(ValueError, match="fractions"):
        stratified_split(np.zeros(10), **kwargs)


def test_bad_k_and_labels():
    with pytest.raises(ValueError, match="k must be"):
        k_fold(np.zeros(3), k=4)
    with pytest.raises(ValueError, match="1-D"):
        k_fold(np.zeros((2, 2)), k=2)
