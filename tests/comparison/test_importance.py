"""Permutation importance of a fitted candidate (src/biaslab/comparison/importance.py)."""

import numpy as np
import pytest

from biaslab.comparison.candidates import candidates_for
from biaslab.comparison.fitting import Trial
from biaslab.comparison.importance import permutation_importance
from biaslab.comparison.protocol import fit_candidate, prepare
from biaslab.data.user_data import UserData
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup


@pytest.mark.parametrize("task", ["classify", "regress"])
def test_only_the_column_the_target_depends_on_matters_for_every_candidate(task):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) if task == "classify" else (3 * x[:, 0]).astype(np.float32)
    data = UserData("table", task, x, y, (0, 1) if task == "classify" else (), ("a", "b", "c", "d"))
    prepared = prepare(data, seed=0)
    for candidate in candidates_for("table", task=task):
        setup = TrainSetup(tag=candidate.name, progress=False)
        fitted = fit_candidate(Trial(candidate, prepared, TrainConfig(epochs=8), setup)).fitted
        found = permutation_importance(fitted, prepared, x[prepared.rows["test"]], data.feature_names, seed=0)
        assert found["names"] == ["a", "b", "c", "d"]
        a, *others = found["mean"]
        assert a > 0.2 and a > 10 * max(abs(v) for v in others), (candidate.name, found)
        again = permutation_importance(fitted, prepared, x[prepared.rows["test"]], data.feature_names, seed=0)
        assert again == found  # the seed fixes the shuffles
