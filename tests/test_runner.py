"""Running an experiment: the run directory it writes, determinism, and exact resume after a kill."""

import dataclasses
import inspect
import itertools
import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

import biaslab
from biaslab import registry, runner
from biaslab.cli import main
from biaslab.config import field_types
from biaslab.errors import BiaslabError
from biaslab.runner import Result
from biaslab.runs import MetricsLog, RunDir, read_json, reproducible, reproducible_record
from biaslab.train import TrainConfig
from tests.processes import kill_when, records_of
from tests.stderr import message_lines

SCRIPT = Path(sys.executable).parent / "biaslab"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


pytestmark = pytest.mark.usefixtures("in_tmp")  # each test in its own empty folder


# -- helpers ----------------------------------------------------------------------------------


def comparable_results(run: Path) -> dict:
    """The part of results.json that the seed fixes (runs.reproducible: no timings)."""
    return reproducible(read_json(run / "results.json"))


def comparable_metrics(run: Path) -> list[dict]:
    """metrics.jsonl records without their time stamps and epoch timings."""
    return [reproducible_record(r) for r in RunDir(run).metrics.read()]


def model_states(run: Path) -> dict:
    return {
        p.stem: torch.load(p, weights_only=True)["model"] for p in sorted((run / "checkpoints").glob("*.pt"))
    }


def assert_same_run(run: Path, ref: Path) -> None:
    """Bit-identical results, metrics log, figures and final weights (wall-clock times aside)."""
    assert (run / "COMPLETE").is_file() and (ref / "COMPLETE").is_file()
    assert comparable_results(run) == comparable_results(ref)
    records = comparable_metrics(run)
    keys = Counter((r.get("tag"), r.get("epoch")) for r in records)
    assert max(keys.values()) == 1, "metrics.jsonl repeats a (tag, epoch) record"
    assert records == comparable_metrics(ref)
    figures = sorted(p.name for p in (ref / "figures").iterdir())
    assert sorted(p.name for p in (run / "figures").iterdir()) == figures
    for name in figures:  # the learning curves are drawn from the (restored) history
        assert (run / "figures" / name).read_bytes() == (ref / "figures" / name).read_bytes()
    a, b = model_states(run), model_states(ref)
    assert a.keys() == b.keys() and a
    for tag in a:
        for name in a[tag]:
            assert torch.equal(a[tag][name], b[tag][name]), f"{tag}.{name} differs"


def script(*args, timeout=120):
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=timeout)


# -- the Python API ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("api") / "xor-seed3"
    return biaslab.run("xor", {"epochs": 5}, profile="quick", seed=3, out=out), out


def test_python_api_writes_a_complete_run(api_run):
    result, out = api_run
    assert isinstance(result, Result) and result.run_dir == out

    cfg = read_json(out / "config.json")
    assert cfg["experiment"] == "xor" and cfg["profile"] == "quick" and cfg["seed"] == 3
    assert cfg["config"]["epochs"] == 5  # the override
    assert cfg["config"]["n_train"] == 200  # the quick profile
    assert cfg["versions"]["torch"] == torch.__version__
    assert cfg["versions"]["biaslab"] == biaslab.__version__
    assert cfg["command"] == "biaslab run xor --quick --seed 3 --set epochs=5"

    records = RunDir(out).metrics.read()
    assert [(r["tag"], r["epoch"]) for r in records] == [
        (t, e) for t in ("perceptron", "mlp") for e in range(1, 6)
    ]
    assert all({"train_loss", "val_loss", "val_accuracy", "step", "time"} <= set(r) for r in records)

    res = read_json(out / "results.json")
    assert res == json.loads(json.dumps(result.results))
    assert res["experiment"] == "xor" and res["seed"] == 3 and res["profile"] == "quick"
    assert res["day"] == 1 and res["title"] and res["summary"]
    assert isinstance(res["elapsed_s"], float)
    assert {"perceptron_test_accuracy", "mlp_test_accuracy"} <= set(res["metrics"])
    assert res["metrics"] == result.metrics and res["claims"] == result.claims
    assert len(res["claims"]) == 2
    for claim in res["claims"]:
        assert {"claim", "expected", "measured", "passed", "source"} <= set(claim)
        assert isinstance(claim["passed"], bool) and isinstance(claim["measured"], float)
    assert result.passed == all(c["passed"] for c in res["claims"])

    listed = {f["file"] for f in res["figures"]}
    assert listed == {f"figures/{p.name}" for p in (out / "figures").glob("*.png")}
    assert len(listed) == 2
    for name in listed:
        assert (out / name).read_bytes()[:8] == PNG_MAGIC

    report = (out / "report.html").read_text()
    assert report.count("data:image/png;base64,") == 2
    assert all(c["claim"] in report for c in res["claims"])

    complete = out / "COMPLETE"
    assert complete.is_file()
    # Every output is older than COMPLETE; .lock is not an output (released, emptied, after it).
    others = [p for p in out.rglob("*") if p.is_file() and p != complete and p.name != ".lock"]
    assert complete.stat().st_mtime_ns >= max(p.stat().st_mtime_ns for p in others)
    assert set(model_states(out)) == {"perceptron", "mlp"}  # loadable with weights_only=True


def test_string_overrides_are_parsed(in_tmp):
    result = biaslab.run("xor", {"epochs": "1", "hidden": "4"}, profile="quick", out=in_tmp / "run")
    cfg = read_json(result.run_dir / "config.json")["config"]
    assert cfg["epochs"] == 1 and cfg["hidden"] == 4


def test_python_api_errors_are_biaslab_errors(in_tmp):
    with pytest.raises(BiaslabError, match="did you mean 'xor'"):
        biaslab.run("xr")
    with pytest.raises(BiaslabError, match="did you mean 'epochs'"):
        biaslab.run("xor", {"epoch": 3})
    with pytest.raises(BiaslabError, match="unknown profile"):
        biaslab.run("xor", profile="fast")
    assert not (in_tmp / "runs").exists()


# -- determinism ------------------------------------------------------------------------------


def test_same_seed_same_numbers(api_run, in_tmp):
    _, first = api_run
    again = biaslab.run("xor", {"epochs": 5}, profile="quick", seed=3, out=in_tmp / "again").run_dir
    assert_same_run(again, first)


def test_different_seed_different_numbers(api_run, in_tmp):
    _, first = api_run
    other = biaslab.run("xor", {"epochs": 5}, profile="quick", seed=4, out=in_tmp / "seed4").run_dir
    assert comparable_results(other)["metrics"] != comparable_results(first)["metrics"]
    losses = [[r["train_loss"] for r in comparable_metrics(run)] for run in (first, other)]
    assert len(losses[0]) == len(losses[1]) and not np.any(np.equal(*losses))


# -- resume after a real SIGKILL --------------------------------------------------------------


def test_resume_after_sigkill_gives_identical_results(in_tmp):
    epochs = 400
    run = in_tmp / "killed"
    proc = subprocess.Popen(
        [str(SCRIPT), "run", "xor", "--quick", "--out", str(run), "--set", f"epochs={epochs}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Kill it in the middle of the second training (the MLP), with checkpoints on disk.
    kill_when(
        proc, lambda: (run / "checkpoints" / "mlp.pt").exists() and records_of(run, "mlp") >= epochs // 4
    )
    assert proc.returncode == -signal.SIGKILL
    assert not (run / "COMPLETE").exists()
    assert not (run / "results.json").exists()
    assert epochs // 4 <= records_of(run, "mlp") < epochs

    resumed = script("run", "--resume", run)
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert read_json(run / "config.json")["command"].endswith(f"--set epochs={epochs}")

    ref = biaslab.run("xor", {"epochs": epochs}, profile="quick", out=in_tmp / "reference").run_dir
    assert_same_run(run, ref)


# -- resume after an exception at an arbitrary point (in-process) -----------------------------


class Crash(Exception):
    """Stands in for a kill: raised from inside the run, never caught by biaslab."""


EPOCHS = 6  # quick xor: 200 examples, batch 32 -> 7 steps per epoch, 42 per training


@pytest.fixture(scope="module")
def reference6(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "xor"
    return biaslab.run("xor", {"epochs": EPOCHS}, profile="quick", out=out).run_dir


def _crash_at_step(monkeypatch, n):
    """Raise Crash after the n-th optimizer step of the run (counted over both trainings), as
    the progress display hears of it: before the step's checkpoint, if it has one."""
    from biaslab.train import recipes

    counter = itertools.count(1)

    class Bar:
        def on_step_end(self, trainer):
            if next(counter) == n:
                raise Crash(f"step {n}")

    monkeypatch.setattr(recipes, "TrainingProgress", lambda *a, **k: Bar())


def _crash_in_checkpoint_write(monkeypatch, n):
    """The n-th checkpoint write dies half-way through writing its bytes."""
    from biaslab.train import checkpoint as checkpoint_module

    real = checkpoint_module.atomic_write
    counter = itertools.count(1)

    def atomic_write(path, write):
        if next(counter) != n:
            return real(path, write)

        def half(f):
            import io

            buf = io.BytesIO()
            write(buf)
            f.write(buf.getvalue()[: len(buf.getvalue()) // 2])
            raise Crash(f"checkpoint write {n}")

        return real(path, half)

    monkeypatch.setattr(checkpoint_module, "atomic_write", atomic_write)


def _crash_after_log(monkeypatch, n):
    """Die right after the n-th metrics record is written, before its checkpoint is saved."""
    real = MetricsLog.log
    counter = itertools.count(1)

    def log(self, record):
        real(self, record)
        if next(counter) == n:
            raise Crash(f"after record {n}")

    monkeypatch.setattr(MetricsLog, "log", log)


@pytest.mark.parametrize(
    "how, n",
    [
        ("step", 10),  # perceptron, epoch 2, mid-epoch
        ("step", 43),  # first step of the MLP
        ("step", 74),  # MLP, epoch 5, mid-epoch
        ("checkpoint", 3),  # perceptron's third checkpoint, half written
        ("checkpoint", 10),  # the MLP's third checkpoint
        ("log", 4),  # perceptron epoch 4 logged, not yet checkpointed
        ("log", 12),  # MLP epoch 6 logged, not yet checkpointed
    ],
)
def test_resume_after_exception_gives_identical_results(monkeypatch, in_tmp, reference6, how, n):
    run = in_tmp / "run"
    with monkeypatch.context() as m:
        {"step": _crash_at_step, "checkpoint": _crash_in_checkpoint_write, "log": _crash_after_log}[how](m, n)
        with pytest.raises(Crash):
            biaslab.run("xor", {"epochs": EPOCHS}, profile="quick", out=run)
    assert not (run / "COMPLETE").exists() and (run / "config.json").is_file()
    assert not [p for p in (run / "checkpoints").iterdir() if p.suffix != ".pt"], "temp file left"
    result = biaslab.run(None, resume=run)
    assert result.run_dir == run
    assert_same_run(run, reference6)


def test_ctrl_c_then_resume_from_the_cli(monkeypatch, capsys, in_tmp, reference6):
    run = in_tmp / "run"
    from biaslab.train import recipes

    counter = itertools.count(1)

    class Bar:
        def on_step_end(self, trainer):
            if next(counter) == 50:
                raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(recipes, "TrainingProgress", lambda *a, **k: Bar())
        rc = main(["run", "xor", "--quick", "--out", str(run), "--set", f"epochs={EPOCHS}"])
    err = capsys.readouterr().err
    assert rc == 130 and "biaslab run --resume" in err and "Traceback" not in err
    assert not (run / "COMPLETE").exists()
    assert main(["run", "--resume", str(run)]) == 0
    assert_same_run(run, reference6)


# -- resuming a finished run ------------------------------------------------------------------


def test_resume_of_complete_run_does_not_rerun(monkeypatch, api_run):
    _, out = api_run
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def must_not_run(ctx):
        raise AssertionError("a complete run was run again")

    exp = registry.get("xor")
    monkeypatch.setitem(registry._REGISTRY, "xor", dataclasses.replace(exp, fn=must_not_run))
    result = biaslab.run(None, resume=out)
    assert result.run_dir == out and result.results == read_json(out / "results.json")
    assert main(["run", "--resume", str(out)]) == 0
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


# -- runs that fail ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FailConfig:
    fail_at: int = 3  # the step that raises
    kind: str = "biaslab"  # biaslab | bug | diverge


def _failing(ctx):
    cfg = ctx.cfg
    if cfg.kind == "diverge":
        calls = itertools.count()

        def loss_fn(out, y):
            loss = torch.nn.functional.cross_entropy(out, y)
            return loss * float("nan") if next(calls) >= cfg.fail_at else loss

        torch.manual_seed(0)
        x, y = torch.randn(16, 2), torch.randint(0, 2, (16,))
        trainer = ctx.training("lin").trainer(
            torch.nn.Linear(2, 2), TrainConfig(epochs=5, batch_size=4), loss_fn=loss_fn
        )
        trainer.fit((x, y))
        return
    for step in range(1, 10):
        if step == cfg.fail_at:
            if cfg.kind == "bug":
                raise ValueError("a programming error")
            raise BiaslabError(f"test experiment gave up at step {step}")
        ctx.run.metrics.log({"tag": "t", "step": step, "value": float(step)})  # as a training's logger does
    ctx.metric(done=True)


@pytest.fixture
def failing(monkeypatch):
    exp = registry.Experiment(
        "test-failing",
        1,
        "fails on purpose",
        "failing",
        FailConfig,
        _failing,
        {"quick": {}, "default": {}, "full": {}},
    )
    monkeypatch.setitem(registry._REGISTRY, "test-failing", exp)
    return exp


def _one_line(err: str) -> str:
    lines = message_lines(err)
    assert len(lines) == 1 and lines[0].startswith("biaslab: error: ") and "Traceback" not in err
    return lines[0]


def test_experiment_error_midway(capsys, in_tmp, failing):
    run = in_tmp / "run"
    rc = main(["run", "test-failing", "--out", str(run), "--set", "fail_at=4"])
    assert rc == 2
    assert "gave up at step 4" in _one_line(capsys.readouterr().err)
    assert not (run / "COMPLETE").exists()
    assert not (run / "results.json").exists() and not (run / "report.html").exists()
    assert [r["step"] for r in RunDir(run).metrics.read()] == [1, 2, 3]  # kept: work was done


def test_experiment_error_before_any_work_leaves_nothing(capsys, in_tmp, failing):
    rc = main(["run", "test-failing", "--runs-dir", str(in_tmp / "runs"), "--set", "fail_at=1"])
    assert rc == 2 and "gave up at step 1" in _one_line(capsys.readouterr().err)
    assert not (in_tmp / "runs").exists()  # nor the runs folder made for it


def test_divergence_midway(capsys, in_tmp, failing):
    run = in_tmp / "run"
    rc = main(
        ["run", "test-failing", "--out", str(run), "--set", "kind=diverge", "--set", "fail_at=9"]
    )  # 4 steps per epoch: NaN in epoch 3
    assert rc == 2
    line = _one_line(capsys.readouterr().err)
    assert "diverged" in line and "epoch 3" in line and "lin" in line
    assert not (run / "COMPLETE").exists() and not (run / "results.json").exists()
    assert (run / "checkpoints" / "lin.pt").is_file()


def test_divergence_with_huge_learning_rate(capsys, in_tmp):
    rc = main(["run", "xor", "--quick", "--out", str(in_tmp / "run"), "--set", "lr=inf"])
    assert rc == 2
    line = _one_line(capsys.readouterr().err)
    assert "diverged" in line or "lr" in line
    assert not list(in_tmp.rglob("COMPLETE"))


def test_bug_in_experiment_is_one_line_with_the_traceback_saved(capsys, in_tmp, failing):
    run = in_tmp / "run"
    assert main(["run", "test-failing", "--out", str(run), "--set", "kind=bug"]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    details = run / "traceback.txt"
    assert lines[0] == f"biaslab: internal error: ValueError: a programming error; details in {details}"
    saved = details.read_text()
    assert (
        saved.startswith("Traceback (most recent call last):") and "ValueError: a programming error" in saved
    )
    assert (run / "config.json").is_file() and not (run / "COMPLETE").exists()


def test_bug_in_the_python_api_raises_itself_with_the_traceback_path(in_tmp, failing):
    with pytest.raises(ValueError, match="programming error") as info:
        biaslab.run("test-failing", {"kind": "bug"}, out=in_tmp / "run")
    assert info.value.details_path == in_tmp / "run" / "traceback.txt"
    assert info.value.details_path.is_file()


@pytest.mark.parametrize("option", sorted(runner.RUN_OPTIONS))
def test_a_run_option_given_as_a_config_key_is_one_line_naming_the_option(capsys, in_tmp, option):
    """``--set seed=3`` once ended in "run() got multiple values for keyword argument 'seed'"."""
    rc = main(["run", "xor", "--quick", "--set", f"{option}=3"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert f"'{option}' is a run option, not a config key" in err
    flag = runner.RUN_OPTIONS[option]
    assert (flag or f"{option}=... to biaslab.run") in err
    with pytest.raises(BiaslabError, match=f"'{option}' is a run option"):
        biaslab.run("xor", {option: 3}, profile="quick")
    assert list(in_tmp.iterdir()) == []


def test_no_config_key_is_named_like_a_run_option():
    for exp in registry.all_experiments():
        clash = set(field_types(exp.config)) & set(runner.RUN_OPTIONS)
        assert not clash, f"{exp.name}'s config has keys named like run options: {clash}"


def test_help_shows_the_run_signature_with_its_docstring():
    """``help(biaslab.run)`` shows the signature the runner implements, and documents it."""
    assert inspect.signature(biaslab.run) == inspect.signature(runner.run)
    documented = biaslab.run.__doc__
    for name in inspect.signature(biaslab.run).parameters:
        assert f"{name}:" in documented, f"biaslab.run's docstring does not describe {name}"


def test_the_background_imports_end_before_the_experiment_starts(monkeypatch, in_tmp):
    """No lab can time anything while the runner's warm-up imports hold a core: the runner
    waits for them, whether or not the lab remembers to."""
    import threading

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        n: int = 1

    seen = []

    def looks(ctx):
        seen.append([t.name for t in threading.enumerate() if t.name == "biaslab-warm-imports"])

    exp = registry.Experiment("test-imports", 1, "looks", "looks", Cfg, looks, {})
    monkeypatch.setitem(registry._REGISTRY, "test-imports", exp)
    biaslab.run("test-imports", out=in_tmp / "run")
    assert seen == [[]]
