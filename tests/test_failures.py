"""Every failure is one line, and no run is ever lost or mixed (issue 8).

Storage failures (a full disk, a read-only folder) are injected where they would strike: the
checkpoint, figure, report, results and metrics writes. Each must give one line naming the
file, exit 2, leave the run unfinished, and ``--resume`` must complete it to the same results
as an uninterrupted run. Bugs give one line and a saved traceback (exit 1); a second writer of a
run directory is turned away; leftovers of another run are refused.
"""

import errno
import inspect
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import biaslab
from biaslab import registry
from biaslab.cli import main
from biaslab.config import to_dict
from biaslab.errors import BiaslabError, DivergenceError
from biaslab.runs import RUN_MARKER, MetricsLog, RunDir, read_json, run_fingerprint
from biaslab.runs import metrics_log as metrics_log_module
from tests.stderr import message_lines
from tests.test_runner import assert_same_run, comparable_metrics, comparable_results

EPOCHS = 3  # quick xor with 3 epochs per training: seconds per run


pytestmark = pytest.mark.usefixtures("in_tmp")  # each test in its own empty folder


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "xor"
    return biaslab.run("xor", {"epochs": EPOCHS}, profile="quick", out=out).run_dir


def one_line_error(capsys, rc: int, status: int = 2) -> str:
    err = capsys.readouterr().err
    assert rc == status, err
    lines = message_lines(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    prefix = "biaslab: error: " if status == 2 else "biaslab: internal error: "
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


def run_xor(out: Path, *extra: str) -> int:
    return main(
        ["run", "xor", "--quick", "--no-progress", "--out", str(out), "--set", f"epochs={EPOCHS}", *extra]
    )


# -- 2. storage failures ----------------------------------------------------------------------


def fail_fsync_of(monkeypatch, fragment: str, code: int = errno.ENOSPC):
    """Make the atomic write whose temporary file's path contains ``fragment`` fail in fsync."""
    real = os.fsync

    def fsync(fd):
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            name = ""
        if fragment in name:
            raise OSError(code, os.strerror(code))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def fail_metrics_append(monkeypatch, after: int = 2):
    """The metrics log's ``after``-th append finds the disk full."""
    calls = {"n": 0}

    def fake_open(file, mode="r", *args, **kwargs):
        if str(file).endswith("metrics.jsonl") and "a" in mode:
            calls["n"] += 1
            if calls["n"] >= after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return open(file, mode, *args, **kwargs)

    monkeypatch.setattr(metrics_log_module, "open", fake_open, raising=False)


@pytest.mark.parametrize(
    "where, fragment, named, code",
    [
        ("checkpoint", "/checkpoints/.mlp.pt.", "checkpoints/mlp.pt", errno.ENOSPC),
        ("figure", "/figures/.", "figures/", errno.ENOSPC),
        ("results", "/.results.json.", "results.json", errno.ENOSPC),
        ("report", "/.report.html.", "report.html", errno.ENOSPC),
        ("read-only", "/checkpoints/.perceptron.pt.", "checkpoints/perceptron.pt", errno.EROFS),
        ("metrics", None, "metrics.jsonl", errno.ENOSPC),
    ],
)
def test_storage_failure_is_one_line_and_resume_completes(
    capsys, monkeypatch, in_tmp, reference, where, fragment, named, code
):
    run = in_tmp / "run"
    with monkeypatch.context() as m:
        if fragment is None:
            fail_metrics_append(m)
        else:
            fail_fsync_of(m, fragment, code)
        line = one_line_error(capsys, run_xor(run))
    assert str(run) in line and named in line, line
    advice = "disk is full" if code == errno.ENOSPC else "read-only"
    assert advice in line and f"biaslab run --resume {run}" in line, line
    assert (run / "config.json").is_file() and not (run / "COMPLETE").exists()
    assert not list(run.rglob("*.tmp")), "a temporary file survived the failed write"

    assert main(["run", "--resume", str(run), "--no-progress"]) == 0
    assert_same_run(run, reference)


def test_cache_path_that_is_a_directory(capsys, monkeypatch, in_tmp):
    data = in_tmp / "data"
    (data / "mnist-raw.npz").mkdir(parents=True)
    monkeypatch.setenv("BIASLAB_DATA", str(data))
    line = one_line_error(capsys, main(["run", "mnist-mlp", "--quick", "--out", str(in_tmp / "r")]))
    assert str(data / "mnist-raw.npz") in line and "directory is in the way" in line
    assert not (in_tmp / "r").exists()


@pytest.mark.parametrize(
    "damage, needle",
    [
        (b'{"tag": "mlp", "step": 1}\n\xff\xfe not utf-8\n', "line {n+2} is not UTF-8 text"),
        (b'{"tag": "mlp", "step": 1}\n{"broken": \n', "line {n+2} is not a JSON object"),
        (b"[1, 2]\n", "line {n+1} is not a JSON object"),
    ],
)
def test_corrupt_metrics_log_is_one_line_and_resume_completes_once_fixed(
    capsys, in_tmp, reference, damage, needle
):
    run = in_tmp / "run"
    with pytest.raises(KeyboardInterrupt):  # a Ctrl-C in the second training
        _interrupt_after_records(run, 4)
    good = (run / "metrics.jsonl").read_bytes()
    (run / "metrics.jsonl").write_bytes(good + damage)
    n = good.count(b"\n")
    needle = needle.replace("{n+1}", str(n + 1)).replace("{n+2}", str(n + 2))
    line = one_line_error(capsys, main(["run", "--resume", str(run), "--no-progress"]))
    assert str(run / "metrics.jsonl") in line and needle in line and "--resume" in line, line
    assert not (run / "COMPLETE").exists()
    (run / "metrics.jsonl").write_bytes(good)  # the cause fixed
    assert main(["run", "--resume", str(run), "--no-progress"]) == 0
    assert_same_run(run, reference)


def test_a_line_cut_short_by_a_kill_is_dropped_on_resume(in_tmp, reference):
    run = in_tmp / "run"
    with pytest.raises(KeyboardInterrupt):
        _interrupt_after_records(run, 4)
    with open(run / "metrics.jsonl", "ab") as f:
        f.write(b'{"tag": "mlp", "epo')  # no newline: the kill struck mid-write
    assert main(["run", "--resume", str(run), "--no-progress"]) == 0
    assert_same_run(run, reference)


def _interrupt_after_records(run: Path, n: int) -> None:
    real = MetricsLog.log

    def log(self, record):
        real(self, record)
        if len(self.read()) >= n:
            raise KeyboardInterrupt

    try:
        MetricsLog.log = log
        biaslab.run("xor", {"epochs": EPOCHS}, profile="quick", out=run)
    finally:
        MetricsLog.log = real


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda s: s.pop("history"), "lacks or has malformed history"),
        (lambda s: s.update(step="7"), "lacks or has malformed step"),
        (lambda s: s.update(finished=1), "lacks or has malformed finished"),
        (lambda s: s.update(model={"weight": 1}), "incomplete or mismatched"),
    ],
)
def test_checkpoint_with_missing_keys_or_wrong_types(capsys, in_tmp, reference, edit, needle):
    import torch

    run = in_tmp / "run"
    with pytest.raises(KeyboardInterrupt):
        _interrupt_after_records(run, 2)
    ckpt = run / "checkpoints" / "perceptron.pt"
    state = torch.load(ckpt, weights_only=True)
    edit(state)
    torch.save(state, ckpt)
    line = one_line_error(capsys, main(["run", "--resume", str(run), "--no-progress"]))
    assert str(ckpt) in line and needle in line and "delete it" in line, line
    ckpt.unlink()  # what the message says to do
    assert main(["run", "--resume", str(run), "--no-progress"]) == 0
    assert_same_run(run, reference)


@pytest.mark.parametrize("forgery", ["legacy format", "a directory declaring 4 GiB"])
def test_a_checkpoint_that_cannot_be_bounded_is_refused_before_loading(
    capsys, in_tmp, reference, monkeypatch, forgery
):
    import torch

    import biaslab.config

    run = in_tmp / "run"
    with pytest.raises(KeyboardInterrupt):
        _interrupt_after_records(run, 2)
    ckpt = run / "checkpoints" / "perceptron.pt"
    state = torch.load(ckpt, weights_only=True)
    if forgery == "legacy format":
        torch.save(state, ckpt, _use_new_zipfile_serialization=False)
        needle = "not torch's zip format"
    else:  # the zip's directory claims a member of 4 GiB (torch.load would allocate it)
        data = bytearray(ckpt.read_bytes())
        end = data.rindex(b"PK\x05\x06")  # end of central directory -> its offset
        central = int.from_bytes(data[end + 16 : end + 20], "little")
        data[central + 24 : central + 28] = (0xFFFFFFF0).to_bytes(4, "little")  # uncompressed size
        ckpt.write_bytes(bytes(data))
        monkeypatch.setattr(biaslab.config, "available_memory", lambda: 2 << 30)  # a 2 GiB machine
        needle = "more than the free memory"
    line = one_line_error(capsys, main(["run", "--resume", str(run), "--no-progress"]))
    assert str(ckpt) in line and needle in line and "delete it" in line, line
    ckpt.unlink()
    assert main(["run", "--resume", str(run), "--no-progress"]) == 0
    assert_same_run(run, reference)


def test_a_resume_refused_after_taking_the_lock_leaves_the_lock_file_as_it_was(capsys, in_tmp):
    """The checkpoint is judged once the lock is held; its refusal gives the lock back with the
    note the file held (here a killed holder's), not the refused attempt's own or none."""
    import torch

    run = in_tmp / "run"
    with pytest.raises(KeyboardInterrupt):
        _interrupt_after_records(run, 2)
    note = b"process 99999 on elsewhere since 2026-11-28T10:00:00\n"
    (run / ".lock").write_bytes(note)
    ckpt = run / "checkpoints" / "perceptron.pt"
    state = torch.load(ckpt, weights_only=True)
    state.pop("history")
    torch.save(state, ckpt)
    line = one_line_error(capsys, main(["run", "--resume", str(run), "--no-progress"]))
    assert str(ckpt) in line, line
    assert (run / ".lock").read_bytes() == note


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda c: c.pop("seed"), "lacks seed"),
        (lambda c: c.update(seed="zero"), "seed='zero'"),
        (lambda c: c.update(profile="fast"), "profile 'fast'"),
        (lambda c: c.update(config=[1]), "'config' an object"),
        (lambda c: c["config"].update(epochs="many"), "epochs='many'"),
        (lambda c: c["config"].update(lr=None), "lr=None"),
        (lambda c: c["config"].pop("hidden"), "lacks config key(s) hidden"),
    ],
)
def test_config_json_with_missing_keys_or_wrong_types(capsys, in_tmp, edit, needle):
    run = in_tmp / "run"
    with pytest.raises(KeyboardInterrupt):
        _interrupt_after_records(run, 2)
    cfg = read_json(run / "config.json")
    edit(cfg)
    # Resealed, as if biaslab had written it: what is refused is the value, not the edit
    # (an edit alone is refused as such: tests/test_untrusted_input.py).
    cfg[RUN_MARKER] = run_fingerprint(cfg)
    (run / "config.json").write_text(json.dumps(cfg))
    line = one_line_error(capsys, main(["run", "--resume", str(run)]))
    assert str(run / "config.json") in line and needle in line, line
    assert not (run / "COMPLETE").exists()


# -- 3. a bug is reported as a bug ------------------------------------------------------------


def test_bug_outside_a_run_saves_its_traceback_in_the_data_dir(capsys, monkeypatch, in_tmp):
    import biaslab.cli as cli

    monkeypatch.setenv("BIASLAB_DATA", str(in_tmp / "data"))
    monkeypatch.setattr(cli, "cmd_list", lambda: {}["no such key"])
    line = one_line_error(capsys, main(["list"]), status=1)
    assert line.startswith("biaslab: internal error: KeyError: 'no such key'; details in ")
    saved = Path(line.rsplit("details in ", 1)[1])
    assert saved.parent == in_tmp / "data" / "errors"
    assert "KeyError: 'no such key'" in saved.read_text()


def test_bug_in_a_lab_is_exit_1_never_2(capsys, monkeypatch, in_tmp):
    from biaslab.report import plots

    monkeypatch.setattr(plots, "learning_curves", lambda *a, **k: 1 / 0)
    line = one_line_error(capsys, run_xor(in_tmp / "run"), status=1)
    assert "ZeroDivisionError" in line and str(in_tmp / "run" / "traceback.txt") in line
    assert not (in_tmp / "run" / "COMPLETE").exists()


# -- 4. divergence is the same everywhere -------------------------------------------------------


def test_numpy_loop_divergence_is_the_trainers_message(capsys, in_tmp):
    run = in_tmp / "run"
    line = one_line_error(
        capsys,
        main(["run", "manual-backprop", "--quick", "--no-progress", "--out", str(run), "--set", "lr=1e6"]),
    )
    assert "training 'numpy-sgd' diverged: loss is" in line
    assert "with learning rate 1e+06; lower it (e.g. lr=100000)" in line
    assert not (run / "COMPLETE").exists()


def test_divergence_messages_share_one_form():
    import torch
    from torch import nn

    from biaslab.scratch import SGD, TwoLayerMLP
    from biaslab.scratch.loop import fit
    from biaslab.train import TrainConfig, Trainer

    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    nan_loss = lambda out, target: out.sum() * float("nan")
    trainer = Trainer(nn.Linear(4, 2), nan_loss, TrainConfig(epochs=1, lr=1e30), tag="t")
    with pytest.raises(DivergenceError) as torch_side:
        trainer.fit((x, y))
    model = TwoLayerMLP(4, 8, 2, seed=0)
    with pytest.raises(DivergenceError) as numpy_side:
        fit(
            model,
            SGD(model.params, lr=1e30),
            (x.numpy(), y.numpy()),
            None,
            5,
            16,
            on_divergence="raise",
            tag="t",
        )
    pattern = (
        r"^training 't' diverged: loss is \S+ at epoch \d+(, step \d+)? with learning rate 1e\+30; lower it"
    )
    for info in (torch_side, numpy_side):
        assert __import__("re").match(pattern, str(info.value)), str(info.value)


def test_nonfinite_data_is_never_blamed_on_the_learning_rate():
    import torch
    from torch import nn

    from biaslab.scratch import SGD, TwoLayerMLP
    from biaslab.scratch.loop import fit
    from biaslab.train import TrainConfig, Trainer

    x = torch.randn(32, 4)
    x[3, 1] = float("inf")
    y = torch.zeros(32, dtype=torch.long)
    with pytest.raises(ValueError, match="the data are at fault, not the learning rate"):
        Trainer(nn.Linear(4, 2), config=TrainConfig(epochs=1)).fit((x, y))
    model = TwoLayerMLP(4, 8, 2, seed=0)
    with pytest.raises(ValueError, match="the data are at fault, not the learning rate"):
        fit(model, SGD(model.params, lr=0.1), (x.numpy(), y.numpy()), None, 1, 32, on_divergence="raise")


# -- 5. one writer per run directory ----------------------------------------------------------

HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from biaslab.runs import RunDir
    run = RunDir.create("xor", 0, out=sys.argv[1])
    print("locked", flush=True)
    time.sleep(120)
    """
)


def _holder(out: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_second_writer_is_turned_away_naming_the_holder(capsys, in_tmp):
    out = in_tmp / "run"
    proc = _holder(out)
    try:
        line = one_line_error(capsys, run_xor(out))
        assert f"{out} is in use by process {proc.pid}" in line, line
        assert not (out / "config.json").exists()
        # Even a resume of a valid run must wait.
        RunDir(out).write_config("xor", "quick", 0, to_dict(registry.get("xor").make_config("quick")), "cmd")
        line = one_line_error(capsys, main(["run", "--resume", str(out)]))
        assert f"process {proc.pid}" in line
    finally:
        proc.kill()
        proc.wait()


def test_two_runs_into_one_out_never_mix(in_tmp):
    """Started together, one run writes the directory and the other is refused."""
    out = in_tmp / "run"
    script = Path(sys.executable).parent / "biaslab"
    procs = [
        subprocess.Popen(
            [str(script), "run", "xor", "--quick", "--no-progress", "--out", str(out), "--seed", str(seed)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    codes = sorted(p.wait(timeout=300) for p in procs)
    assert codes == [0, 2], [p.stderr.read() for p in procs]
    records = [(r.get("tag"), r.get("epoch")) for r in RunDir(out).metrics.read()]
    assert records and len(records) == len(set(records)), "two runs' records mixed in one log"
    assert (out / "COMPLETE").is_file()


def test_stale_lock_of_a_killed_process_is_taken_over(capsys, in_tmp, reference):
    out = in_tmp / "run"
    proc = _holder(out)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert "process" in (out / ".lock").read_text()  # its note stays; the lock does not
    assert run_xor(out) == 0
    assert_same_run(out, reference)


# -- 6. nothing stale survives ----------------------------------------------------------------


@pytest.mark.parametrize("leftover", ["COMPLETE", "results.json", "report.html", "checkpoints/mlp.pt"])
def test_leftovers_of_another_run_are_refused(capsys, in_tmp, leftover):
    out = in_tmp / "run"
    (out / leftover).parent.mkdir(parents=True, exist_ok=True)
    (out / leftover).write_text("old")
    line = one_line_error(capsys, run_xor(out))
    assert "holds files of another run" in line and leftover.split("/")[0] in line
    assert not (out / "config.json").exists() and (out / leftover).read_text() == "old"


def test_temporary_files_of_an_interrupted_write_are_removed_on_resume(in_tmp, reference):
    run = in_tmp / "run"
    with pytest.raises(KeyboardInterrupt):
        _interrupt_after_records(run, 4)
    strays = [
        run / ".results.json.pid99999999.abcd1234.tmp",
        run / "checkpoints" / ".mlp.pt.pid1.x_y.tmp",
        run / "figures" / ".curves.png.pid4242.zzzz.tmp",
    ]
    for stray in strays:
        stray.write_bytes(b"half a file")
    assert main(["run", "--resume", str(run), "--no-progress"]) == 0
    assert not any(s.exists() for s in strays)
    assert_same_run(run, reference)


def test_data_dir_temporary_files_of_dead_writers_are_removed(monkeypatch, in_tmp):
    from biaslab import fileio

    data = in_tmp / "data"
    data.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = data / f".mnist.npz.pid{int(dead.stdout)}.abc.tmp"
    live = data / f".mnist.npz.pid{os.getppid()}.abc.tmp"  # a live writer's: kept
    stale.write_bytes(b"x")
    live.write_bytes(b"x")
    monkeypatch.setenv("BIASLAB_DATA", str(data))
    fileio.data_dir()
    assert not stale.exists() and live.exists()


# -- 7. resume never duplicates records (every lab with a NumPy loop) -------------------------

NUMPY_LABS = [
    e.name for e in registry.all_experiments() if "fit_scratch" in inspect.getsource(inspect.getmodule(e.fn))
]


def test_numpy_labs_are_found():
    assert {"manual-backprop", "adam-vs-sgd"} <= set(NUMPY_LABS)


@pytest.mark.parametrize("name", NUMPY_LABS)
def test_numpy_lab_killed_after_its_numpy_phase_resumes_without_duplicates(monkeypatch, in_tmp, name):
    """The process is SIGKILLed right after the NumPy loop logged its last epoch."""
    run = in_tmp / "killed"
    kill_after = textwrap.dedent(
        f"""
        import os, signal, sys
        from biaslab.train import recipes
        real = recipes.fit_scratch
        def fit_then_die(*args, **kwargs):
            real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        recipes.fit_scratch = fit_then_die
        import biaslab
        {_import_lab(name)}
        biaslab.run({name!r}, profile="quick", out=sys.argv[1], progress=False)
        """
    )
    proc = subprocess.run([sys.executable, "-c", kill_after, str(run)], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    # Logged to the run's metrics.jsonl, or, in a lab whose fits are tasks, to the task's own
    # record file, which reaches metrics.jsonl when the task ends (biaslab.scale.tasks).
    in_tasks = [
        json.loads(line) for f in run.glob("tasks/*/*.metrics.jsonl") for line in f.read_text().splitlines()
    ]
    logged = [r for r in RunDir(run).metrics.read() + in_tasks if r.get("tag") == "numpy-sgd"]
    assert logged and not (run / "COMPLETE").exists()

    assert main(["run", "--resume", str(run), "--no-progress"]) == 0
    ref = biaslab.run(name, profile="quick", out=in_tmp / "reference", progress=False).run_dir
    assert comparable_metrics(run) == comparable_metrics(ref)
    assert comparable_results(run) == comparable_results(ref)


def _import_lab(name: str) -> str:
    """Import the lab's module (so that its ``from ... import fit_scratch`` sees the patch)."""
    module = inspect.getmodule(registry.get(name).fn).__name__
    return f"import sys; sys.modules.pop({module!r}, None); import {module}"


# -- 9. the Python API raises the same clear errors -------------------------------------------


@pytest.mark.parametrize(
    "args, kwargs, needle",
    [
        ((123,), {}, "must be a string"),
        ((["xor"],), {}, "must be a string"),
        (("xor",), {"seed": "3"}, "seed='3'"),
        (("xor",), {"seed": 1.5}, "seed=1.5"),
        (("xor",), {"seed": True}, "seed=True"),
        (("xor",), {"seed": -1}, "seed=-1: must be in 0..18446744073709551615"),
        (("xor",), {"seed": 2**64}, "must be in 0..18446744073709551615"),
        (("xor",), {"profile": 3}, "profile"),
        (("xor",), {"profile": "fast"}, "unknown profile 'fast'"),
        (("xor", {"epochs": "many"}), {}, "epochs='many'"),
        (("xor", {"epochs": 0}), {}, "epochs=0"),
        (("xor", {"lr": float("nan")}), {}, "lr=nan"),
        (("xor", {"hiddn": 3}), {}, "did you mean 'hidden'"),
        (("xor", {"seed": 3}), {}, "'seed' is a run option, not a config key: give it as --seed"),
        (("xor", [("epochs", 3)]), {}, "overrides must be a mapping"),
        (("no-such-lab",), {}, "no-such-lab"),
    ],
)
def test_python_api_refuses_bad_input_and_writes_nothing(in_tmp, args, kwargs, needle):
    with pytest.raises(BiaslabError) as info:
        biaslab.run(*args, **kwargs)
    message = str(info.value)
    assert needle in message and "\n" not in message, message
    assert list(in_tmp.iterdir()) == []


def test_cli_seed_too_large_for_a_64_bit_generator(capsys, in_tmp):
    line = one_line_error(capsys, main(["run", "xor", "--quick", "--seed", "99999999999999999999999"]))
    assert "seed=99999999999999999999999: must be in 0..18446744073709551615" in line
    assert not (in_tmp / "runs").exists()


def test_the_largest_seed_runs(in_tmp):
    result = biaslab.run("xor", {"epochs": 1}, profile="quick", seed=2**64 - 1, out=in_tmp / "r")
    assert read_json(result.run_dir / "config.json")["seed"] == 2**64 - 1


def test_sequential_runs_release_their_locks(in_tmp, reference):
    """A run, a resume of it, then another run into a new directory: none is turned away."""
    out = in_tmp / "run"
    assert run_xor(out) == 0
    assert main(["run", "--resume", str(out)]) == 0
    assert run_xor(in_tmp / "again") == 0
    assert_same_run(out, reference)
