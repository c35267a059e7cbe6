"""A run request checked in one place (biaslab.request): every field proven before anything is
written, a resume's recorded fields reused, and messages that name options spelled by the
caller (argument names from Python, flags on the command line)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import biaslab
from biaslab import runner
from biaslab.cli import main
from biaslab.config import flat_values
from biaslab.errors import BiaslabError, CheckpointError, OptionError, literal
from biaslab.hardware import resolve_device
from biaslab.request import KEPT_BY_RESUME, RUN_OPTIONS, RunRequest, check
from biaslab.runs import read_json
from tests.stderr import message_lines

pytestmark = pytest.mark.usefixtures("in_tmp")


def test_the_request_holds_every_argument_of_run():
    fields = [f.name for f in dataclasses.fields(RunRequest)]
    parameters = list(inspect.signature(runner.run).parameters)
    assert fields == ["experiment", *parameters[1:]] and parameters[0] == "name"
    assert set(RUN_OPTIONS) == set(parameters) - {"overrides"}  # every run option but the config


def test_a_checked_request_resolves_the_machine_and_writes_nothing(in_tmp):
    plan = check(RunRequest("xor", {"epochs": "2"}, profile="quick", seed=3, threads=1))
    assert plan.experiment.name == "xor" and flat_values(plan.config)["epochs"] == 2 and plan.seed == 3
    assert plan.machine.threads == 1 and plan.machine.device == resolve_device("auto")
    assert plan.machine.executor_record == {"name": "serial", "workers": None, "address": None}
    assert plan.command == "biaslab run xor --quick --seed 3 --set epochs=2"
    assert plan.resume is None and plan.log == ()
    assert list(in_tmp.iterdir()) == []


def test_an_option_error_is_spelled_by_its_caller():
    error = OptionError("{seed}/{out} cannot be combined with {resume} in " + literal("{a}/b"))
    assert str(error) == "seed/out cannot be combined with resume in {a}/b"
    flags = {"seed": "--seed", "out": "--out", "resume": "--resume", "a": "--never"}
    assert error.spelled(flags) == "--seed/--out cannot be combined with --resume in {a}/b"


@pytest.mark.parametrize("option", KEPT_BY_RESUME)
def test_what_a_resume_keeps_is_refused_once_in_either_spelling(capsys, in_tmp, option):
    run = biaslab.run("xor", {"epochs": 1}, profile="quick", out="run", device="cpu").run_dir
    before = read_json(run / "config.json")
    value = {"profile": "quick", "seed": 1, "out": "x", "threads": 1, "device": "cpu", "log": "csv"}[option]
    with pytest.raises(OptionError, match=f"^{option} cannot be combined with resume "):
        biaslab.run(resume=run, **{option: value})
    flag = "--quick" if option == "profile" else RUN_OPTIONS[option]
    argv = ["run", "--resume", str(run), *([flag] if option == "profile" else [flag, str(value)])]
    assert main(argv) == 2
    lines = message_lines(capsys.readouterr().err)
    assert len(lines) == 1 and f"{flag} cannot be combined with --resume" in lines[0]
    assert read_json(run / "config.json") == before and not (in_tmp / "x").exists()


def test_config_values_with_resume_are_refused_by_name(capsys, in_tmp):
    run = biaslab.run("xor", {"epochs": 1}, profile="quick", out="run").run_dir
    with pytest.raises(OptionError, match="^overrides cannot be combined with resume"):
        biaslab.run(resume=run, overrides={"epochs": 2})
    assert main(["run", "--resume", str(run), "--set", "epochs=2"]) == 2
    assert "--set cannot be combined with --resume" in capsys.readouterr().err


def test_executor_options_name_their_flags(capsys):
    with pytest.raises(OptionError, match="^workers needs executor local"):
        check(RunRequest("xor", profile="quick", workers=2))
    assert main(["run", "xor", "--quick", "--address", "127.0.0.1:1"]) == 2
    assert "--address names a Ray cluster: it needs --executor ray" in capsys.readouterr().err


def test_a_resume_plan_reuses_what_the_run_recorded(in_tmp):
    run = biaslab.run("xor", {"epochs": 1}, profile="quick", seed=4, out="run", threads=1, log="csv").run_dir
    plan = check(RunRequest(resume=run))
    assert (plan.experiment.name, plan.profile, plan.seed, plan.log) == ("xor", "quick", 4, ("csv",))
    assert plan.machine.threads == 1 and plan.resume == run and flat_values(plan.config)["epochs"] == 1
    with pytest.raises(CheckpointError, match="is a run of 'xor', not 'vae'"):
        check(RunRequest("vae", resume=run))


def test_a_refused_request_never_reaches_the_run_folder(monkeypatch, in_tmp):
    def never(*args, **kwargs):
        raise AssertionError("a refused request reached the run folder")

    monkeypatch.setattr(runner.RunDir, "create", never)
    for bad in ({"seed": -1}, {"profile": "fast"}, {"threads": 0}, {"device": "tpu"}, {"log": "paper"}):
        with pytest.raises(BiaslabError):
            runner.run_request(RunRequest("xor", **bad))
