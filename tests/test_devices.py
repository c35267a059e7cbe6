"""The device a run computes on: ``--device auto|cpu|cuda|mps``, checked before anything is written,
recorded in config.json and reused by a resume."""

from __future__ import annotations

import pytest
import torch

import biaslab
from biaslab.cli import main
from biaslab.errors import BiaslabError, ConfigError
from biaslab.hardware import resolve_device
from biaslab.runs import read_json
from tests.stderr import message_lines

pytestmark = pytest.mark.usefixtures("in_tmp")
HAS_CUDA = torch.cuda.is_available()
HAS_MPS = torch.backends.mps.is_available()


def test_auto_takes_cuda_then_mps_then_the_cpu():
    assert resolve_device("cpu") == "cpu"
    expected = "cuda" if HAS_CUDA else "mps" if HAS_MPS else "cpu"
    assert resolve_device("auto") == resolve_device(None) == resolve_device(" AUTO ") == expected
    with pytest.raises(ConfigError, match=r"device='tpu': choose one of auto, cpu, cuda, mps"):
        resolve_device("tpu")


@pytest.mark.skipif(HAS_CUDA, reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_is_one_line_and_exit_2_before_anything_is_written(capsys, in_tmp):
    assert main(["run", "xor", "--quick", "--device", "cuda", "--out", "run"]) == 2
    lines = message_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "device=cuda: no CUDA GPU is available here" in lines[0]
    assert list(in_tmp.iterdir()) == []


def test_a_precision_the_device_lacks_is_refused_before_anything_is_written(capsys, in_tmp):
    assert main(["run", "xor", "--quick", "--device", "cpu", "--set", "precision=fp16"]) == 2
    lines = message_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "precision=fp16: runs on CUDA, not on this cpu" in lines[0]
    assert list(in_tmp.iterdir()) == []


def test_the_device_is_recorded_and_a_resume_keeps_it(capsys, in_tmp):
    run = biaslab.run("xor", profile="quick", out="run", device="cpu").run_dir
    saved = read_json(run / "config.json")
    assert saved["device"] == "cpu"
    assert main(["run", "--resume", str(run), "--device", "cpu"]) == 2
    assert "--device cannot be combined with --resume" in capsys.readouterr().err
    with pytest.raises(BiaslabError, match="device cannot be combined with resume"):
        biaslab.run(resume=run, device="cpu")
    assert biaslab.run(resume=run).run_dir == run  # complete: reloaded as it is
    default = biaslab.run("xor", profile="quick", out="default").run_dir  # auto, resolved
    assert read_json(default / "config.json")["device"] == resolve_device("auto")


def test_a_recorded_device_this_machine_lacks_refuses_the_resume(in_tmp):
    from biaslab.runs import RUN_MARKER, run_fingerprint, write_json

    run = biaslab.run("xor", {"epochs": 1}, profile="quick", out="run", device="cpu").run_dir
    (run / "COMPLETE").unlink()
    saved = read_json(run / "config.json")
    saved["device"] = "tpu"
    saved[RUN_MARKER] = run_fingerprint(saved)  # a consistent record, of another machine
    write_json(run / "config.json", saved)
    with pytest.raises(BiaslabError, match=r"config.json: device='tpu'.*cannot resume"):
        biaslab.run(resume=run)
