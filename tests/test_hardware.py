"""Thread counts: --threads N|auto, recorded in config.json, reused on resume; idle-core sampling."""

import json
import subprocess
import sys

import pytest
import torch

import biaslab
from biaslab.cli import main
from biaslab.errors import BiaslabError, ConfigError
from biaslab.hardware import (
    available_cores,
    busy_warning,
    flushing_denormals,
    idle_cores,
    resolve_threads,
    use_threads,
)
from biaslab.runs import read_json
from tests.test_runner import comparable_metrics, comparable_results

pytestmark = pytest.mark.usefixtures("in_tmp")  # each test in its own empty folder


def test_resolve_threads():
    cores = available_cores()
    assert resolve_threads(None) == cores  # the default: a fixed count, every core
    assert resolve_threads(1) == 1 and resolve_threads("2") == 2
    assert 1 <= resolve_threads("auto") <= cores
    for bad in (0, -1, "x", "1.5", 1.5, True, 10**6):
        with pytest.raises(ConfigError, match="threads="):
            resolve_threads(bad)


@pytest.mark.parametrize(
    "idle_share, expected_of_two",
    [(1.0, 2), (0.5, 1), (0.0, 1), (0.74, 1), (0.76, 2)],
)
def test_idle_cores_counts_the_idle_share_within_bounds(monkeypatch, idle_share, expected_of_two):
    """Two cores, a fraction of their time idle over the sample: that many cores, at least 1."""
    import biaslab.hardware as hw

    monkeypatch.setattr(hw, "available_cores", lambda: 2)
    monkeypatch.setattr(hw.os, "cpu_count", lambda: 2)
    samples = iter([(0, 0), (round(idle_share * 1000), 1000)])
    assert idle_cores(sample_s=0, cpu_times=lambda: next(samples)) == expected_of_two


def test_idle_cores_without_proc_stat_uses_the_load_average(monkeypatch):
    import biaslab.hardware as hw

    monkeypatch.setattr(hw, "available_cores", lambda: 4)
    monkeypatch.setattr(hw.os, "getloadavg", lambda: (3.2, 0, 0))
    assert idle_cores(sample_s=0, cpu_times=lambda: None) == 1


def _fake_load(monkeypatch, readings, own_seconds, cpus=2, tick=100):
    """A CpuLoad over scripted /proc/stat readings and own-CPU seconds, on ``cpus`` cores."""
    import biaslab.hardware as hw

    monkeypatch.setattr(hw.os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(hw.os, "sysconf", lambda name: tick)
    monkeypatch.setattr(hw, "available_cores", lambda: cpus)
    readings, own_seconds = iter(readings), iter(own_seconds)
    return hw.CpuLoad(cpu_times=lambda: next(readings), own_cpu_s=lambda: next(own_seconds))


@pytest.mark.parametrize(
    "idle_jiffies, own_s, expected",
    [
        (200, 0.0, 2.0),  # 1 s on 2 cores (200 jiffies), all idle
        (100, 0.0, 1.0),  # another process kept one core busy
        (100, 1.0, 2.0),  # we kept it busy ourselves: both cores are ours
        (0, 0.5, 0.5),  # both busy, half a core of it ours
        (0, 0.0, 0.0),
    ],
)
def test_cpu_load_counts_the_cores_others_left_idle(monkeypatch, idle_jiffies, own_s, expected):
    load = _fake_load(monkeypatch, [(0, 0), (idle_jiffies, 200)], [0.0, own_s])
    assert load.idle_cores() == pytest.approx(expected)


def test_cpu_load_gives_none_for_a_window_too_short_and_reads_anew_when_stale(monkeypatch):
    import biaslab.hardware as hw

    too_short = _fake_load(monkeypatch, [(0, 0), (10, 20)], [0.0, 0.0])  # 0.1 s
    assert too_short.idle_cores() is None
    # 61 s old: sampled now (one core of two idle over the sample), the old window ignored
    stale = _fake_load(monkeypatch, [(0, 0), (0, 200 * 61), (0, 0), (100, 200)], [0.0, 0.0])
    monkeypatch.setattr(hw.time, "sleep", lambda seconds: None)
    assert stale.idle_cores() == 1.0
    monkeypatch.setattr(hw.os, "getloadavg", lambda: (1.2, 0, 0))  # no /proc/stat: the load average
    unreadable = _fake_load(monkeypatch, [None, (0, 200)], [0.0, 0.0])
    assert unreadable.idle_cores() == 1.0


def test_a_run_started_right_after_another_says_nothing_and_does_not_wait(monkeypatch):
    import biaslab.hardware as hw

    monkeypatch.setattr(hw.time, "sleep", lambda seconds: pytest.fail("sampled"))
    right_after = _fake_load(monkeypatch, [(0, 0), (0, 20), (0, 20)], [0.0] * 3)  # 0.1 s, both busy
    assert hw.few_idle_cores_notice(2, load=right_after) is None


def test_few_idle_cores_notice_says_it_in_one_line(monkeypatch):
    import biaslab.hardware as hw

    readings = [(0, 0), (100, 200), (100, 200), (200, 400), (200, 400)]  # one core busy throughout
    busy = _fake_load(monkeypatch, readings, [0.0] * 5)
    notice = hw.few_idle_cores_notice(2, load=busy)
    assert notice.startswith("note: 1 of 2 cores idle") and "--threads auto" in notice
    assert "\n" not in notice
    quiet = _fake_load(monkeypatch, [(0, 0), (200, 200), (200, 200)], [0.0, 0.0, 0.0])
    assert hw.few_idle_cores_notice(2, load=quiet) is None
    assert hw.few_idle_cores_notice(1, load=busy) is None  # the next window: 1 idle core is enough


def test_a_run_on_a_busy_machine_says_so(monkeypatch, capsys):
    """The notice reaches the run's stderr, once, before the lab starts; a quiet machine, none."""
    import biaslab.hardware as hw
    import biaslab.runner

    monkeypatch.setattr(biaslab.runner, "few_idle_cores_notice", hw.few_idle_cores_notice)  # not quiet
    for idle, expected in ((0.9, 1), (2.0, 0)):
        monkeypatch.setattr(hw.CpuLoad, "idle_cores", lambda self, idle=idle: idle)
        assert main(["run", "xor", "--quick", "--threads", "2", "--no-progress"]) == 0
        err = capsys.readouterr().err
        assert err.count("cores idle, and this run computes on 2 threads") == expected, err


def test_busy_warning_only_above_the_threshold():
    assert busy_warning(load=0.3) is None
    warning = busy_warning(load=1.7)
    assert warning.startswith("WARNING: load average 1.70 on ") and "busy" in warning
    assert busy_warning(threshold=2.0, load=1.7) is None


def test_use_threads_sets_and_restores():
    before = torch.get_num_threads()
    with use_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


SUBNORMALS = """
import json, torch
from biaslab.hardware import flush_denormals
torch.set_num_threads(2)
x = torch.full((1 << 22,), 1e-39)  # subnormal in float32; the pool's threads each take a share
counts = {"before": (x * 1.5).count_nonzero().item()}
torch.set_flush_denormal(True)  # torch's own switch: the calling thread only
counts["main thread"] = (x * 1.5).count_nonzero().item()
supported = flush_denormals()
counts["every thread"] = (x * 1.5).count_nonzero().item()
normal = bool(((torch.full((1 << 22,), 1e-30) * 1.5) == 1.5e-30).all())
print(json.dumps({"supported": supported, "counts": counts, "normal": normal}))
"""


@pytest.mark.skipif(available_cores() < 2, reason="one core: no worker thread to reach")
def test_flush_denormals_reaches_every_thread_of_a_running_pool():
    """torch.set_flush_denormal sets one thread: the worker's half of a product keeps its
    subnormals; flush_denormals() zeroes them on every thread, and normal numbers keep their bits."""
    done = subprocess.run([sys.executable, "-c", SUBNORMALS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    if not out["supported"]:
        pytest.skip("this CPU has no flush-to-zero mode")
    n = 1 << 22
    assert out["counts"]["before"] == n
    assert 0 < out["counts"]["main thread"] < n  # the worker thread's share survived
    assert out["counts"]["every thread"] == 0 and out["normal"]


def test_a_run_flushes_subnormals_and_leaves_them_as_it_found_them():
    assert not flushing_denormals()
    with use_threads(2):
        survived = (torch.full((1 << 20,), 1e-39) * 1.5).count_nonzero().item()
        inside = flushing_denormals()
    after = (torch.full((1 << 20,), 1e-39) * 1.5).count_nonzero().item()
    assert not flushing_denormals() and after == 1 << 20  # on every thread again
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU has no flush-to-zero mode")
    assert survived == 0 and inside


LOADED_LATER = """
import json, sys
from threadpoolctl import threadpool_info
from biaslab.hardware import on_current_threads, use_threads

def counts():
    return {pool["filepath"]: pool["num_threads"] for pool in threadpool_info()}

with use_threads(1):
    before = counts()
    from sklearn.ensemble import HistGradientBoostingRegressor  # loads scikit-learn's OpenMP
    unlimited = counts()
    with on_current_threads():
        limited = counts()
print(json.dumps({"new": sorted(set(unlimited) - set(before)), "unlimited": unlimited, "limited": limited}))
"""


@pytest.mark.skipif(available_cores() < 2, reason="one core: every pool has one thread anyway")
def test_a_pool_loaded_inside_use_threads_is_limited_by_on_current_threads():
    pytest.importorskip("sklearn")
    pytest.importorskip("threadpoolctl")
    out = subprocess.run([sys.executable, "-c", LOADED_LATER], capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen["new"], "importing the estimator loaded no thread pool: nothing to test"
    assert any(seen["unlimited"][path] > 1 for path in seen["new"])  # what use_threads alone leaves
    assert set(seen["limited"].values()) == {1}


SMALL_MATRIX = """
import json
import numpy  # loads NumPy's BLAS
import torch
from threadpoolctl import threadpool_info
from biaslab.hardware import SMALL_BLAS_ENTRIES, on_current_threads, use_threads

def counts(api):
    return sorted({pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == api})

with use_threads(2):
    with on_current_threads(entries=1078 * 64):
        small = counts("blas")
    with on_current_threads(entries=SMALL_BLAS_ENTRIES):
        large = counts("blas")
    with on_current_threads():
        unsized = counts("blas")
print(json.dumps({"small": small, "large": large, "unsized": unsized, "torch": torch.get_num_threads()}))
"""


@pytest.mark.skipif(available_cores() < 2, reason="one core: every pool has one thread anyway")
def test_a_small_matrix_is_multiplied_on_one_blas_thread():
    """Below SMALL_BLAS_ENTRIES the BLAS pools get one thread (a small product shared out waits on
    torch's threads: a logistic regression of digits took 0.38 s on two, 0.02 s on one); a large
    matrix and an unsized block keep torch's count."""
    pytest.importorskip("threadpoolctl")
    out = subprocess.run([sys.executable, "-c", SMALL_MATRIX], capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen["small"] == [1] and seen["large"] == seen["unsized"] == [2], seen


def test_threads_are_recorded_and_reused_on_resume(in_tmp):
    run = in_tmp / "run"
    real_log = biaslab.runs.MetricsLog.log
    seen = []

    def log_then_stop(self, record):
        real_log(self, record)
        seen.append(torch.get_num_threads())
        if len(seen) == 3:
            raise KeyboardInterrupt

    biaslab.runs.MetricsLog.log = log_then_stop
    try:
        with pytest.raises(KeyboardInterrupt):
            biaslab.run("xor", {"epochs": 3}, profile="quick", out=run, threads=1)
    finally:
        biaslab.runs.MetricsLog.log = real_log
    assert read_json(run / "config.json")["threads"] == 1 and set(seen) == {1}

    observed = []
    real_fit = biaslab.train.trainer.Trainer.fit

    def fit(self, *a, **k):
        observed.append(torch.get_num_threads())
        return real_fit(self, *a, **k)

    biaslab.train.trainer.Trainer.fit = fit
    try:
        biaslab.run(resume=run)
    finally:
        biaslab.train.trainer.Trainer.fit = real_fit
    assert observed and set(observed) == {1}  # the recorded count, not every core


def test_threads_cannot_change_on_resume(capsys, in_tmp):
    assert main(["run", "--resume", str(in_tmp), "--threads", "1"]) == 2
    assert "--threads cannot be combined with --resume" in capsys.readouterr().err


def test_cli_threads_option(capsys, in_tmp):
    assert (
        main(
            ["run", "xor", "--quick", "--no-progress", "--threads", "auto", "--out", "a", "--set", "epochs=1"]
        )
        == 0
    )
    assert 1 <= read_json(in_tmp / "a" / "config.json")["threads"] <= available_cores()
    assert main(["run", "xor", "--quick", "--threads", "zero", "--out", "b"]) == 2
    assert "threads='zero'" in capsys.readouterr().err and not (in_tmp / "b").exists()
    with pytest.raises(BiaslabError):
        biaslab.run("xor", profile="quick", threads=0)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_seed_fixes_a_run_for_a_given_thread_count(in_tmp, threads):
    runs = [
        biaslab.run("xor", {"epochs": 3}, profile="quick", out=in_tmp / f"r{i}", threads=threads).run_dir
        for i in (1, 2)
    ]
    assert comparable_results(runs[0]) == comparable_results(runs[1])
    assert comparable_metrics(runs[0]) == comparable_metrics(runs[1])
    assert json.loads((runs[0] / "config.json").read_text())["threads"] == threads


def test_cpu_name_is_the_model_name_from_proc_cpuinfo():
    from pathlib import Path

    from biaslab.hardware import cpu_name

    name = cpu_name()
    assert name and "\n" not in name
    info = Path("/proc/cpuinfo")
    if info.is_file() and "model name" in info.read_text():
        assert name in info.read_text()
