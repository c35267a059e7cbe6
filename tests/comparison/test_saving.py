"""Tests for biaslab.comparison.saving: every kind of candidate written without pickle and rebuilt
to the same outputs; a file truncated, edited or asking for an untrusted type is one line."""

import pickle

import numpy as np
import pytest
import torch

from biaslab.comparison.candidates import candidates_for, slug
from biaslab.comparison.fitting import Trial
from biaslab.comparison.protocol import fit_candidate, prepare
from biaslab.comparison.saving import candidate_files, read_estimator, rebuild_fitted
from biaslab.comparison.user_models import user_candidate
from biaslab.data.user_data import UserData
from biaslab.errors import DataFormatError
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup

QUIET = TrainSetup(progress=False)
CONFIG = TrainConfig(epochs=2, batch_size=32, lr=1e-2)


def table(task="classify", n=120, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    if task == "classify":
        y, classes = (x[:, 0] + x[:, 1] > 0).astype(np.int64), (0, 1)
    else:
        y, classes = (x[:, 0] - 2 * x[:, 2]).astype(np.float32), ()
    return UserData("table", task, x, y, classes=classes, feature_names=tuple(f"c{j}" for j in range(5)))


def images(n=90):
    rng = np.random.default_rng(1)
    return UserData(
        "image", "classify", rng.random((n, 1, 8, 8), dtype=np.float32), np.arange(n) % 3, (0, 1, 2)
    )


def sets(n=90):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(n, 6, 2)).astype(np.float32)
    mask = np.ones((n, 6), dtype=bool)
    mask[::2, 4:] = False
    x[~mask] = 0
    return UserData("set", "classify", x, np.arange(n) % 2, (0, 1), mask=mask)


def write(files, folder):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def builder(kind, task):
    guide = {c.name: c for c in candidates_for(kind, task=task)}
    return lambda meta: guide[meta["name"]].build(tuple(meta["input_shape"]), meta["n_outputs"], meta["task"])


CASES = [
    (table, "classify", "table"),
    (lambda: table("regress"), "regress", "table"),
    (images, "classify", "image"),
    (sets, "classify", "set"),
]


@pytest.mark.parametrize(("make", "task", "kind"), CASES, ids=["table", "table-regress", "image", "set"])
def test_every_candidate_is_rebuilt_to_the_same_outputs_without_unpickling(
    make, task, kind, tmp_path, monkeypatch
):
    data = make()
    prepared = prepare(data, seed=0)
    x, mask, _ = prepared.tensors("test")
    for candidate in candidates_for(kind, task=task):
        result = fit_candidate(Trial(candidate, prepared, CONFIG, QUIET))
        folder = write(
            candidate_files(result.fitted, candidate.name, prepared.input_shape),
            tmp_path / slug(candidate.name),
        )
        with monkeypatch.context() as patched:  # loading never unpickles
            for module, name in ((pickle, "loads"), (pickle, "load"), (torch, "load")):
                patched.setattr(module, name, lambda *a, **k: pytest.fail("unpickled"))
            fitted, meta = rebuild_fitted(folder, builder(kind, task))
        assert meta["name"] == candidate.name
        np.testing.assert_array_equal(
            fitted.outputs(x, mask), result.fitted.outputs(x, mask), err_msg=candidate.name
        )


def test_a_truncated_or_edited_file_is_one_line(tmp_path):
    prepared = prepare(table(), seed=0)
    mlp = next(c for c in candidates_for("table", task="classify") if c.name == "MLP")
    fitted = fit_candidate(Trial(mlp, prepared, CONFIG, QUIET)).fitted
    folder = write(candidate_files(fitted, "MLP", prepared.input_shape), tmp_path / "mlp")
    weights = folder / "weights.safetensors"
    whole = weights.read_bytes()
    weights.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataFormatError, match="not the file the run wrote") as truncated:
        rebuild_fitted(folder, builder("table", "classify"))
    assert "\n" not in str(truncated.value)
    weights.write_bytes(whole)
    (folder / "model.json").write_text('{"name": "MLP", ')
    with pytest.raises(DataFormatError, match="not valid JSON"):
        rebuild_fitted(folder, builder("table", "classify"))


def test_weights_that_do_not_fit_the_model_are_one_line(tmp_path):
    prepared = prepare(table(), seed=0)
    mlp = next(c for c in candidates_for("table", task="classify") if c.name == "MLP")
    fitted = fit_candidate(Trial(mlp, prepared, CONFIG, QUIET)).fitted
    folder = write(candidate_files(fitted, "MLP", prepared.input_shape), tmp_path / "mlp")
    wider = lambda meta: mlp.build((7,), 2, "classify")
    with pytest.raises(DataFormatError, match="does not fit MLP"):
        rebuild_fitted(folder, wider)


def test_an_estimator_asking_for_an_untrusted_type_is_refused_before_it_is_made(tmp_path):
    import skops.io
    from sklearn.preprocessing import FunctionTransformer

    data = skops.io.dumps(FunctionTransformer(func=print).fit(np.zeros((2, 2))))
    with pytest.raises(DataFormatError, match="does not trust: .*print"):
        read_estimator(data, tmp_path / "estimator.skops")


def test_a_users_model_file_changed_since_the_run_is_refused(tmp_path):
    source = tmp_path / "mine.py"
    source.write_text(
        "from torch import nn\n\ndef make(input_shape, n_outputs):\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(input_shape[0], n_outputs))\n"
    )
    spec = f"{source}:make"
    candidate = user_candidate(spec)
    prepared = prepare(table(), seed=0)
    result = fit_candidate(Trial(candidate, prepared, CONFIG, QUIET))
    folder = write(
        candidate_files(result.fitted, candidate.name, prepared.input_shape, factory=spec), tmp_path / "m"
    )
    rebuild = lambda meta: user_candidate(meta["factory"]).build(tuple(meta["input_shape"]), 2, "classify")
    x, _, _ = prepared.tensors("test")
    fitted, _ = rebuild_fitted(folder, rebuild)
    np.testing.assert_array_equal(fitted.outputs(x), result.fitted.outputs(x))
    source.write_text(source.read_text() + "# edited\n")
    with pytest.raises(DataFormatError, match="changed since the run"):
        rebuild_fitted(folder, rebuild)
