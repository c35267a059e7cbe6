"""The run directory: naming, refusal to overwrite, unwritable places, metrics log, JSON files."""

import json
import re
from datetime import datetime

import numpy as np
import pytest
import torch

from biaslab.errors import BiaslabError, CheckpointError
from biaslab.runs import COMPLETE, RunDir, folder, read_json, write_json


class _FixedClock:
    """Stands in for ``datetime`` in biaslab.runs: ``now()`` is always the same second."""

    @staticmethod
    def now():
        return datetime(2026, 1, 2, 3, 4, 5)


def _strict_loads(text: str):
    """json.loads that refuses NaN / Infinity (what other JSON readers do)."""

    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


# -- creation ---------------------------------------------------------------------------------


def test_create_names_run_after_experiment_time_and_seed(tmp_path):
    before = datetime.now().replace(microsecond=0)
    run = RunDir.create("mnist-mlp", seed=7, runs_dir=tmp_path / "runs")
    after = datetime.now()
    assert run.path.parent == tmp_path / "runs"
    m = re.fullmatch(r"mnist-mlp-(\d{8}-\d{6})-7", run.path.name)
    assert m, run.path.name
    assert before <= datetime.strptime(m.group(1), "%Y%m%d-%H%M%S") <= after
    assert run.figures_dir.is_dir() and run.checkpoints_dir.is_dir()
    assert not run.is_complete
    assert sorted(p.name for p in run.path.iterdir()) == [".lock", "checkpoints", "figures"]


def test_two_runs_in_the_same_second_get_distinct_dirs(tmp_path, monkeypatch):
    monkeypatch.setattr(folder, "datetime", _FixedClock)
    first = RunDir.create("xor", seed=0, runs_dir=tmp_path)
    second = RunDir.create("xor", seed=0, runs_dir=tmp_path)
    assert first.path.name == "xor-20260102-030405-0"
    assert second.path != first.path and second.path.name.startswith("xor-20260102-030405-0")


def test_create_with_out(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "a" / "b")
    assert run.path == tmp_path / "a" / "b" and run.figures_dir.is_dir()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert RunDir.create("xor", seed=0, out=empty).path == empty  # an empty dir is fine


@pytest.mark.parametrize("complete", [False, True])
def test_create_refuses_out_that_holds_a_run(tmp_path, complete):
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    run.write_config("xor", "quick", 0, {"epochs": 1}, "biaslab run xor")
    if complete:
        run.mark_complete()
    before = run.config_path.read_bytes()
    run.release()
    with pytest.raises(BiaslabError) as info:
        RunDir.create("xor", seed=0, out=tmp_path / "run")
    assert "already holds a run" in str(info.value) and info.value.resume == tmp_path / "run"
    assert run.config_path.read_bytes() == before


def test_unwritable_output_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a regular file, not a directory")
    with pytest.raises(BiaslabError) as info:
        RunDir.create("xor", seed=0, out=blocker / "run")
    assert "cannot write to output directory" in str(info.value)
    assert str(blocker / "run") in str(info.value)
    with pytest.raises(BiaslabError, match="cannot write to output directory"):
        RunDir.create("xor", seed=0, runs_dir=blocker)
    with pytest.raises(BiaslabError, match="is a file, not a folder"):
        RunDir.create("xor", seed=0, out=blocker)  # --out naming an existing file
    assert blocker.read_text() == "a regular file, not a directory"


def test_open(tmp_path):
    with pytest.raises(CheckpointError, match="is not a biaslab run"):
        RunDir.open(tmp_path)
    with pytest.raises(CheckpointError, match="does not exist"):
        RunDir.open(tmp_path / "missing")
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    run.write_config("xor", "quick", 0, {}, "cmd")
    run.release()
    (run.figures_dir).rmdir()
    opened = RunDir.open(run.path)
    assert opened.figures_dir.is_dir()  # recreated
    assert opened.read_config()["experiment"] == "xor"


def test_open_unwritable_run_directory(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    run.write_config("xor", "quick", 0, {}, "cmd")
    run.release()
    run.checkpoints_dir.rmdir()
    (run.path / "checkpoints").write_text("a file where the folder should be")
    with pytest.raises(BiaslabError, match="cannot write to run directory"):
        RunDir.open(run.path)


def test_write_config_records_versions(tmp_path):
    run = RunDir.create("xor", seed=3, out=tmp_path / "run")
    run.write_config("xor", "quick", 3, {"epochs": 2, "hidden": [4]}, "biaslab run xor")
    cfg = read_json(run.config_path)
    assert cfg["experiment"] == "xor" and cfg["profile"] == "quick" and cfg["seed"] == 3
    assert cfg["config"] == {"epochs": 2, "hidden": [4]}
    assert cfg["command"] == "biaslab run xor"
    assert {"biaslab", "torch", "numpy", "python"} <= set(cfg["versions"])
    datetime.fromisoformat(cfg["created"])


def test_mark_complete(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    assert not run.is_complete
    run.mark_complete()
    assert run.is_complete and (run.path / COMPLETE).is_file()


# -- discarding a run that failed before doing anything -----------------------------------------


def test_discard_if_unused_removes_fresh_dir(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "a" / "run")
    run.write_config("xor", "quick", 0, {}, "cmd")
    assert run.discard_if_unused()
    assert not run.path.exists() and (tmp_path / "a").is_dir()


def test_discard_keeps_runs_with_work_in_them(tmp_path):
    for what in ("metrics", "checkpoint", "figure", "other"):
        run = RunDir.create("xor", seed=0, out=tmp_path / what)
        run.write_config("xor", "quick", 0, {}, "cmd")
        if what == "metrics":
            run.metrics.log({"tag": "t", "step": 1})
        elif what == "checkpoint":
            (run.checkpoints_dir / "m.pt").write_bytes(b"x")
        elif what == "figure":
            (run.figures_dir / "f.png").write_bytes(b"x")
        else:
            (run.path / "labs").mkdir()
        assert not run.discard_if_unused()
        assert run.config_path.is_file()


def test_discard_only_removes_what_create_made(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    run = RunDir.create("xor", seed=0, out=out)
    run.write_config("xor", "quick", 0, {}, "cmd")
    assert run.discard_if_unused()
    assert out.is_dir() and list(out.iterdir()) == []  # the user's directory stays


def test_discard_never_touches_a_resumed_run(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    run.write_config("xor", "quick", 0, {}, "cmd")
    run.release()
    assert not RunDir.open(run.path).discard_if_unused()
    assert run.config_path.is_file()


# -- metrics log ------------------------------------------------------------------------------


def _records(run):
    return [{k: v for k, v in r.items() if k != "time"} for r in run.metrics.read()]


def test_log_and_read_metrics(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    assert run.metrics.read() == []
    run.metrics.log({"tag": "a", "step": 1, "loss": 0.5})
    run.metrics.log({"tag": "a", "step": 2, "loss": np.float32(0.25), "acc": float("nan")})
    lines = run.metrics_path.read_text().splitlines()
    assert len(lines) == 2 and all(_strict_loads(line) for line in lines)
    recs = run.metrics.read()
    assert all(isinstance(r["time"], float) for r in recs)
    assert _records(run) == [
        {"tag": "a", "step": 1, "loss": 0.5},
        {"tag": "a", "step": 2, "loss": 0.25, "acc": "nan"},
    ]


def test_read_metrics_skips_a_line_cut_off_by_a_kill(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    run.metrics.log({"tag": "a", "step": 1})
    with open(run.metrics_path, "a") as f:
        f.write('{"tag": "a", "step": 2, "lo')  # the process died mid-write
    assert _records(run) == [{"tag": "a", "step": 1}]


def test_rewind_metrics(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    for step in (1, 2, 3):
        run.metrics.log({"tag": "a", "step": step})
    run.metrics.log({"tag": "b", "step": 5})
    run.metrics.log({"note": "no tag"})
    run.metrics.log({"tag": "a", "step": 4})
    with open(run.metrics_path, "a") as f:
        f.write('{"tag": "a", "st')
    run.metrics.rewind("a", 2)
    assert _records(run) == [
        {"tag": "a", "step": 1},
        {"tag": "a", "step": 2},
        {"tag": "b", "step": 5},
        {"note": "no tag"},
    ]
    text = run.metrics_path.read_text()
    assert text.endswith("\n") and all(_strict_loads(line) for line in text.splitlines())
    run.metrics.log({"tag": "a", "step": 3})  # logging continues on a clean line
    assert _records(run)[-1] == {"tag": "a", "step": 3}
    run.metrics.rewind("a", 0)
    assert _records(run) == [{"tag": "b", "step": 5}, {"note": "no tag"}]


def test_rewind_without_log_is_a_no_op(tmp_path):
    run = RunDir.create("xor", seed=0, out=tmp_path / "run")
    run.metrics.rewind("a", 0)
    assert not run.metrics_path.exists()


# -- JSON files -------------------------------------------------------------------------------


def test_write_json_nan_inf_and_numpy(tmp_path):
    path = tmp_path / "results.json"
    write_json(
        path,
        {
            "nan": float("nan"),
            "inf": float("inf"),
            "ninf": -float("inf"),
            "list": [1.0, float("nan"), (2, float("inf"))],
            "np_nan": np.float32("nan"),
            "np_int": np.int64(3),
            "np_bool": np.bool_(True),
            "array": np.array([0.5, np.nan]),
            "tensor": torch.tensor([1.0, 2.0]),
            "scalar_tensor": torch.tensor(1.5),
            "nested": {1: {"x": float("nan")}},
        },
    )
    data = _strict_loads(path.read_text())
    assert data == {
        "nan": "nan",
        "inf": "inf",
        "ninf": "-inf",
        "list": [1.0, "nan", [2, "inf"]],
        "np_nan": "nan",
        "np_int": 3,
        "np_bool": True,
        "array": [0.5, "nan"],
        "tensor": [1.0, 2.0],
        "scalar_tensor": 1.5,
        "nested": {"1": {"x": "nan"}},
    }
    assert path.read_text().endswith("\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]  # no temp files left


def test_write_json_replaces_atomically(tmp_path):
    path = tmp_path / "results.json"
    write_json(path, {"a": 1})
    with pytest.raises(TypeError):
        write_json(path, {"a": object()})  # not serialisable: the old file must survive
    assert read_json(path) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_a_run_file_too_large_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """A forged results.json or metrics.jsonl of many GB is refused from its size, not parsed."""
    from biaslab import fileio

    monkeypatch.setattr(fileio, "MAX_RUN_FILE_BYTES", 1000)
    big = tmp_path / "results.json"
    big.write_text(json.dumps({"a": "x" * 2000}))
    with pytest.raises(BiaslabError, match="results.json holds .* more than the 0 MiB a run's file"):
        read_json(big)
    run = RunDir(tmp_path)
    run.metrics_path.write_text(json.dumps({"tag": "t", "step": 1, "pad": "x" * 2000}) + "\n")
    with pytest.raises(BiaslabError, match="metrics.jsonl holds"):
        run.metrics.read()
    monkeypatch.setattr(fileio, "MAX_RUN_FILE_BYTES", 10_000)  # within the bound: read as before
    assert read_json(big) == {"a": "x" * 2000} and len(run.metrics.read()) == 1


def test_read_json_errors(tmp_path):
    with pytest.raises(BiaslabError, match="does not exist"):
        read_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": ')
    with pytest.raises(BiaslabError, match="not valid JSON"):
        read_json(bad)
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(BiaslabError, match="not valid JSON"):
        read_json(bad)
