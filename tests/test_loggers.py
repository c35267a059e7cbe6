"""``--log csv,tensorboard``: the same records as metrics.jsonl, read back by their own readers,
and still the same after a run is killed and resumed (a resume rewinds every sink)."""

import csv
import itertools
import json

import pytest

import biaslab
from biaslab import loggers
from biaslab.cli import main
from biaslab.errors import BiaslabError
from biaslab.runs import RunDir
from biaslab.train import checkpoint as checkpoint_module
from tests.stderr import message_lines

EPOCHS = 3


pytestmark = pytest.mark.usefixtures("in_tmp")  # each test in its own empty folder


def records(run) -> list[dict]:
    return RunDir(run).metrics.read()


def csv_rows(run) -> list[dict]:
    with open(run / "metrics.csv", newline="") as f:
        return list(csv.DictReader(f))


def tensorboard_scalars(run, tag: str, key: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tensorboard" / tag))
    events.Reload()
    return [(e.step, e.value) for e in events.Scalars(key)]


def mlflow_history(run, key: str) -> list[tuple[int, float]]:
    from mlflow.tracking import MlflowClient

    with loggers.allowed_file_store():
        client = MlflowClient(tracking_uri=(run / "mlruns").resolve().as_uri())
        experiment = client.get_experiment_by_name("biaslab").experiment_id
        (only,) = client.search_runs([experiment])  # one MLflow run per biaslab run, attempts aside
        assert only.data.params["epochs"] == str(EPOCHS)
        return sorted((m.step, m.value) for m in client.get_metric_history(only.info.run_id, key))


def assert_sinks_match_the_log(run) -> None:
    log = records(run)
    rows = csv_rows(run)
    assert [(r["tag"], int(r["epoch"]), int(r["step"])) for r in rows] == [
        (r["tag"], r["epoch"], r["step"]) for r in log
    ]
    assert [float(r["train_loss"]) for r in rows] == [r["train_loss"] for r in log]
    for tag in ("perceptron", "mlp"):
        mine = [(r["step"], r["val_loss"]) for r in log if r["tag"] == tag]
        scalars = tensorboard_scalars(run, tag, "val_loss")
        assert [s for s, _ in scalars] == [s for s, _ in mine]
        assert [v for _, v in scalars] == pytest.approx([v for _, v in mine], rel=1e-6)  # float32
        assert mlflow_history(run, f"{tag}/val_loss") == mine


def test_csv_and_tensorboard_hold_the_logs_records(in_tmp):
    run = biaslab.run(
        "xor", {"epochs": EPOCHS}, profile="quick", out=in_tmp / "run", log="csv,tensorboard,mlflow"
    ).run_dir
    assert json.loads((run / "config.json").read_text())["log"] == ["csv", "tensorboard", "mlflow"]
    assert csv_rows(run)[0].keys() >= {"tag", "epoch", "step", "train_loss", "val_accuracy"}
    assert list(csv_rows(run)[0])[:3] == ["tag", "epoch", "step"]
    assert_sinks_match_the_log(run)


class Crash(Exception):
    pass


def test_a_resume_rewinds_every_sink(in_tmp, monkeypatch):
    """Killed while the MLP's second checkpoint is written, after its epoch-2 record reached the
    log and TensorBoard: the resume rewinds to the epoch-1 checkpoint, TensorBoard purges the
    point past it, metrics.csv and the MLflow run are written anew: none holds a step twice."""
    run = in_tmp / "run"
    real, writes = checkpoint_module.atomic_write, itertools.count(1)

    def atomic_write(path, write):
        # the perceptron's epochs but its last (whose save is the final one), then the MLP's 2nd
        if next(writes) == EPOCHS - 1 + 1 + 2:
            raise Crash("killed")
        return real(path, write)

    with monkeypatch.context() as m:
        m.setattr(checkpoint_module, "atomic_write", atomic_write)
        with pytest.raises(Crash):
            biaslab.run("xor", {"epochs": EPOCHS}, profile="quick", out=run, log="csv,tensorboard,mlflow")
    assert [r["step"] for r in records(run) if r["tag"] == "mlp"] == [7, 14]  # 14: past the checkpoint
    assert [s for s, _ in tensorboard_scalars(run, "mlp", "val_loss")] == [7, 14]
    biaslab.run(resume=run)
    assert [r["step"] for r in records(run) if r["tag"] == "mlp"] == [7, 14, 21]
    assert_sinks_match_the_log(run)


def test_unknown_or_missing_loggers_are_one_line_before_anything_is_written(capsys, in_tmp, monkeypatch):
    assert main(["run", "xor", "--quick", "--log", "csv,wandb"]) == 2
    assert (
        "unknown logger 'wandb' (choose from csv, tensorboard, mlflow"
        in message_lines(capsys.readouterr().err)[0]
    )
    monkeypatch.setattr(loggers.importlib.util, "find_spec", lambda name: None)
    assert main(["run", "xor", "--quick", "--log", "tensorboard"]) == 2
    assert "pip install 'biaslab[tensorboard]'" in message_lines(capsys.readouterr().err)[0]
    assert list(in_tmp.iterdir()) == []
    with pytest.raises(BiaslabError, match="log must name loggers"):
        biaslab.run("xor", profile="quick", log=3)


def test_a_resume_keeps_the_runs_loggers(capsys, in_tmp):
    run = biaslab.run("xor", {"epochs": 1}, profile="quick", out=in_tmp / "run", log="csv").run_dir
    assert main(["run", "--resume", str(run), "--log", "tensorboard"]) == 2
    assert "--log cannot be combined with --resume" in capsys.readouterr().err
    with pytest.raises(BiaslabError, match="log cannot be combined with resume"):
        biaslab.run(resume=run, log="csv")


def test_metrics_table_puts_tag_epoch_step_first_and_leaves_missing_cells_empty():
    text = loggers.metrics_table([{"step": 1, "tag": "a", "epoch": 1, "b": 2}, {"tag": "c", "z": 0.5}])
    assert text.splitlines() == ["tag,epoch,step,b,z", "a,1,1,2,", "c,,,,0.5"]


def test_the_final_metrics_reach_every_logger_with_their_dimensions(in_tmp, monkeypatch):
    import dataclasses

    from biaslab import registry

    def lab(ctx) -> None:
        ctx.metric(plain=3)
        ctx.metric("accuracy", 0.75, model="tiny", n=20, split="test")

    exp = dataclasses.replace(registry.get("xor"), name="test-final", fn=lab)
    monkeypatch.setitem(registry._REGISTRY, "test-final", exp)
    run = biaslab.run("test-final", profile="quick", out="run", log="csv,tensorboard,mlflow").run_dir
    with open(run / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows == [
        {"key": "tiny_n20_test_accuracy", "name": "accuracy", "value": "0.75", "better": "higher",
         "model": "tiny", "n": "20", "split": "test"},
        {"key": "plain", "name": "plain", "value": "3", "better": "higher",
         "model": "", "n": "", "split": ""},
    ]  # fmt: skip
    assert tensorboard_scalars(run, "results", "accuracy/model:tiny/n:20/split:test") == [(0, 0.75)]
    assert tensorboard_scalars(run, "results", "plain") == [(0, 3.0)]
    from mlflow.tracking import MlflowClient

    with loggers.allowed_file_store():
        client = MlflowClient(tracking_uri=(run / "mlruns").resolve().as_uri())
        (only,) = client.search_runs([client.get_experiment_by_name("biaslab").experiment_id])
        assert only.data.metrics["accuracy/model:tiny/n:20/split:test"] == 0.75
