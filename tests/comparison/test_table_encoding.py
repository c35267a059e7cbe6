"""A raw table (missing cells, categories) in a comparison: encoded on the training rows only for
the candidates that need numbers, read as it is by scikit-learn's trees."""

import numpy as np
import pytest
import torch

from biaslab.comparison.candidates import candidates_for
from biaslab.comparison.fitting import Trial
from biaslab.comparison.protocol import fit_candidate, prepare
from biaslab.comparison.table_encoding import TableEncoding
from biaslab.data.table_columns import ColumnSchema
from biaslab.data.user_data import UserData
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup

N = 300


def raw_table(seed=0, task="classify"):
    """Columns: a number with 20% missing, a category of 3 (10% missing), a clean number. The
    label depends on the category and the first number, so both must be read."""
    rng = np.random.default_rng(seed)
    size = rng.integers(0, 3, N).astype(np.float64)
    a = rng.normal(size=N)
    b = rng.normal(size=N)
    label = ((size == 1) ^ (a > 0)).astype(np.int64)
    size[rng.random(N) < 0.1] = np.nan
    a[rng.random(N) < 0.2] = np.nan
    x = np.c_[a, size, b].astype(np.float32)
    columns = (
        ColumnSchema("a", "numbers"),
        ColumnSchema("size", "categories", ("large", "medium", "small")),
        ColumnSchema("b", "numbers"),
    )
    y = label if task == "classify" else (label + 0.1 * b).astype(np.float32)
    classes = (0, 1) if task == "classify" else ()
    return UserData("table", task, x, y, classes, ("a", "size", "b"), columns=columns)


def reference_encoding(train: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The encoding written out in NumPy: median fill and a 'was missing' column for column 0
    (the only number with gaps in training), column 2 as it is, one-hot of column 1's codes
    seen in training (NaN its own category), in the transformer's order."""
    median = np.nanmedian(train[:, 0])
    a = np.where(np.isnan(x[:, 0]), median, x[:, 0])
    numbers = np.c_[a, x[:, 2], np.isnan(x[:, 0])]
    seen = [0.0, 1.0, 2.0, np.nan]
    one_hot = np.stack([np.isnan(x[:, 1]) if np.isnan(c) else x[:, 1] == c for c in seen], axis=1)
    return np.c_[numbers, one_hot].astype(np.float32)


def test_the_encoding_equals_the_numpy_reference_and_names_its_columns():
    data = raw_table()
    train, rest = data.x[:200], data.x[200:]
    categories = (data.columns[1].categories,)
    encoding = TableEncoding(data.categorical).fit(train, data.feature_names, categories)
    np.testing.assert_allclose(encoding.transform(rest), reference_encoding(train, rest), rtol=0, atol=0)
    assert encoding.feature_names_out_ == (
        "a", "b", "a was missing", "size = large", "size = medium", "size = small", "size = missing",
    )  # fmt: skip
    unseen = encoding.transform(np.array([[np.nan, 7.0, 0.5]]))  # a code training never saw
    assert unseen[0, 3:].tolist() == [0, 0, 0, 0] and np.isfinite(unseen).all()


def test_the_encoding_comes_from_the_training_rows_only():
    """Changing every validation and test row changes nothing fitted (rule 2: no leakage)."""
    data = raw_table()
    prepared = prepare(data, seed=0)
    x = data.x.copy()
    held_out = np.concatenate([prepared.rows["val"], prepared.rows["test"]])
    x[held_out, 0] = 1e3  # other values and no missing cells where the model is judged
    x[held_out, 1] = np.nan
    changed = prepare(UserData(**{**vars(data), "x": x}), seed=0)
    assert torch.equal(changed.splits.x_train, prepared.splits.x_train)
    np.testing.assert_array_equal(changed.x_mean, prepared.x_mean)
    assert changed.input_shape == prepared.input_shape == (7,)
    assert not torch.isnan(prepared.splits.x_val).any()


@pytest.mark.parametrize("task", ["classify", "regress"])
def test_trees_read_the_raw_rows_natively_and_equal_scikit_learns(task):
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    data = raw_table(task=task)
    prepared = prepare(data, seed=0)
    trees = candidates_for("table", task=task)[0]
    setup = TrainSetup(tag="trees", seed=0)
    result = fit_candidate(Trial(trees, prepared, TrainConfig(epochs=1), setup))
    assert result.fitted.native
    assert result.fitted.model.get_params()["categorical_features"].tolist() == [False, True, False]
    # The same estimator fitted by hand on the raw training rows: the same predictions.
    estimator = HistGradientBoostingClassifier if task == "classify" else HistGradientBoostingRegressor
    reference = estimator(random_state=0, categorical_features=[False, True, False])
    train, test = prepared.rows["train"], prepared.rows["test"]
    y_train = prepared.splits.y_train.numpy()
    reference.fit(data.x[train].astype(np.float64), y_train)
    ours = result.fitted.outputs_on(prepared, "test")
    if task == "classify":
        np.testing.assert_allclose(np.exp(ours), reference.predict_proba(data.x[test].astype(np.float64)))
        # Reading both columns, the best possible is about 0.86 (a row missing either is a coin
        # flip: 28% of rows); ignoring either column caps it at 2/3.
        assert result.test["accuracy"] > 0.75
    else:
        np.testing.assert_allclose(ours, reference.predict(data.x[test].astype(np.float64)))


def test_the_mlp_trains_on_the_encoded_rows_and_new_rows_go_through_the_same_encoding():
    data = raw_table()
    prepared = prepare(data, seed=0)
    mlp = candidates_for("table", task="classify")[-1]
    result = fit_candidate(Trial(mlp, prepared, TrainConfig(epochs=3), TrainSetup(tag="mlp", seed=0)))
    assert not result.fitted.native and result.parameters is not None
    inputs = prepared.standardize(data.x[prepared.rows["test"]])  # as an OOD set would be
    assert inputs.raw is not None and torch.equal(inputs.x, prepared.splits.x_test)
    np.testing.assert_array_equal(
        result.fitted.outputs_of(inputs), result.fitted.outputs_on(prepared, "test")
    )


def test_a_clean_table_is_prepared_as_before():
    """No missing cell and no category: no encoding, no raw rows (results stay as they were)."""
    data = raw_table()
    x = np.nan_to_num(data.x[:, [0, 2]])
    clean = UserData(
        "table", "classify", x, data.y, (0, 1), ("a", "b"), columns=(data.columns[0], data.columns[2])
    )
    prepared = prepare(clean, seed=0)
    assert prepared.encoding is None and prepared.native is None and prepared.input_shape == (2,)
