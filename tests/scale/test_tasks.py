"""Keyed tasks: a task's numbers fixed by its key whatever runs it and in whatever order; finished
tasks read back; a raising task reported while the others finish; a killed worker's task rerun."""

from __future__ import annotations

import json
import socket

import pytest

from biaslab.errors import BiaslabError
from biaslab.runs import RunDir
from biaslab.scale.executors import LocalExecutor, SerialExecutor
from biaslab.scale.tasks import Study, TasksFailed, TaskSpec, task_name
from tests.scale import task_functions as tf

KEYS = [("a", 3), ("b", 5), ("c", 2), ("d", 4)]


class ReversedExecutor(SerialExecutor):
    """Serial, last task first."""

    def run(self, specs, receive):
        super().run(list(reversed(specs)), receive)


class CountingExecutor(SerialExecutor):
    def __init__(self):
        self.ran = []

    def run(self, specs, receive):
        self.ran += [spec.key for spec in specs]
        super().run(specs, receive)


def specs(run, fn=tf.draw, keys=KEYS, cfg=None):
    cfg = cfg or tf.StudyConfig()
    host = socket.gethostname()
    return [TaskSpec(fn, key, "study", cfg, 7, "quick", "cpu", 1, False, str(run.path), host) for key in keys]


@pytest.fixture
def new_run(tmp_path):
    made = []

    def make(name="run"):
        run = RunDir.create("study", 7, out=tmp_path / name)
        made.append(run)
        return run

    yield make
    for run in made:
        run.release()


def without_pid(results):
    return {key: {k: v for k, v in r.items() if k != "pid"} for key, r in results.items()}


def test_a_task_is_fixed_by_its_key_whatever_runs_it_and_in_whatever_order(new_run):
    forward = Study(run := new_run("forward"), SerialExecutor()).run_all(specs(run))
    backward = Study(run := new_run("backward"), ReversedExecutor()).run_all(specs(run))
    executor = LocalExecutor(2)
    try:
        local = Study(run := new_run("local"), executor).run_all(specs(run))
    finally:
        executor.close()
    assert list(forward) == KEYS == list(backward) == list(local)  # results in the keys' order
    assert without_pid(forward) == without_pid(backward) == without_pid(local)
    assert len({r["draws"][0] for r in forward.values()}) == len(KEYS)  # each key draws its own numbers
    assert {r["pid"] for r in local.values()}.isdisjoint({r["pid"] for r in forward.values()})


def test_finished_tasks_are_read_back_and_only_the_others_run(new_run):
    run = new_run()
    first = Study(run, SerialExecutor()).run_all(specs(run))
    (run.path / "tasks" / "draw" / f"{task_name(KEYS[2])}.json").unlink()  # as if killed before it ended
    counting = CountingExecutor()
    again = Study(run, counting).run_all(specs(run))
    assert counting.ran == [KEYS[2]]
    assert again == first
    saved = json.loads((run.path / "tasks" / "draw" / "a-3.json").read_text())
    assert saved["key"] == ["a", 3] and saved["result"] == first["a", 3]


def test_a_raising_task_is_reported_while_the_others_finish(new_run):
    run = new_run()
    with pytest.raises(TasksFailed, match=r"1 of 4 tasks failed \(draw b-5\).*fails on purpose"):
        Study(run, SerialExecutor()).run_all(specs(run, cfg=tf.StudyConfig(fail="b")))
    folder = run.path / "tasks" / "draw"
    assert sorted(p.name for p in folder.glob("*.json")) == ["a-3.json", "c-2.json", "d-4.json"]
    traceback = (folder / "b-5.traceback.txt").read_text()
    assert "Traceback" in traceback and "ValueError: task b fails on purpose" in traceback
    # fixed and run again: only the failed task runs, and its traceback goes
    counting = CountingExecutor()
    Study(run, counting).run_all(specs(run))
    assert counting.ran == [("b", 5)] and not (folder / "b-5.traceback.txt").exists()


def test_a_task_failing_on_bad_input_is_the_users_error(new_run):
    run = new_run()
    with pytest.raises(BiaslabError, match="4 of 4 tasks failed.*a: a value the user can fix") as info:
        Study(run, SerialExecutor()).run_all(specs(run, tf.bad_input))
    assert not isinstance(info.value, TasksFailed)


def test_a_worker_killed_under_its_task_has_the_task_run_again(new_run, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    keys = [("a",), ("b",), ("c",)]
    executor = LocalExecutor(2)
    try:
        run = new_run()
        results = Study(run, executor).run_all(specs(run, tf.dies_once, keys, tf.StudyConfig(str(marks))))
    finally:
        executor.close()
    assert sorted(p.name for p in marks.iterdir()) == [
        "a.started",
        "b.started",
        "c.started",
    ]  # each killed once
    again = Study(run := new_run("again"), SerialExecutor()).run_all(
        specs(run, tf.dies_once, keys, tf.StudyConfig(str(marks)))
    )
    assert again == results  # the retried tasks give the numbers of an undisturbed run


def test_tasks_in_flight_and_waiting_when_a_worker_dies_beside_them_finish_as_undisturbed(new_run, tmp_path):
    # The pool breaks while "slow" runs and "later" waits: both must come through it, and "fast"
    # (killed once) needs its second attempt only.
    marks = tmp_path / "marks"
    marks.mkdir()
    keys, cfg = [("slow",), ("fast",), ("later",)], tf.StudyConfig(str(marks))
    executor = LocalExecutor(2, max_attempts=2)
    try:
        run = new_run()
        results = Study(run, executor).run_all(specs(run, tf.dies_beside_a_slow_one, keys, cfg))
    finally:
        executor.close()
    assert [p.name for p in marks.iterdir()] == ["fast.started"]  # it did kill its worker
    again = Study(run := new_run("again"), SerialExecutor()).run_all(
        specs(run, tf.dies_beside_a_slow_one, keys, cfg)
    )
    assert again == results


def test_a_task_whose_worker_always_dies_fails_after_its_attempts(new_run):
    executor = LocalExecutor(1, max_attempts=2)
    try:
        run = new_run()
        with pytest.raises(TasksFailed, match="the worker running it died 2 times"):
            Study(run, executor).run_all(specs(run, tf.always_dies, [("a",)]))
    finally:
        executor.close()


def test_local_workers_are_capped_at_the_cores_with_a_note(capsys):
    """--workers 100000 once started 100,000 processes importing torch; now the pool has at most
    one worker per core, and the run says so."""
    from biaslab.hardware import available_cores
    from biaslab.scale.executors import LocalExecutor, make_executor

    executor = make_executor("local", 100_000, None, threads=1, device="cpu")
    assert isinstance(executor, LocalExecutor) and executor.workers == available_cores()
    assert f"--workers 100,000 capped at {available_cores()}" in capsys.readouterr().err
    assert make_executor("local", 1, None, threads=1, device="cpu").workers == 1
    assert "capped" not in capsys.readouterr().err


def test_a_tasks_own_files_are_written_when_its_result_arrives_and_before_it(new_run, monkeypatch):
    import biaslab.scale.tasks as tasks_module

    run = new_run()
    seen = []  # (task, its file on disk when its result file is written)
    write_text = tasks_module.atomic_write_text

    def write_and_look(path, text):
        if path.suffix == ".json":
            name = path.stem.split("-")[0]
            seen.append((name, (run.path / "models" / name / "weights.bin").is_file()))
        return write_text(path, text)

    monkeypatch.setattr(tasks_module, "atomic_write_text", write_and_look)
    executor = LocalExecutor(2)  # the files travel back from a worker process
    try:
        Study(run, executor).run_all(specs(run, tf.saves_a_file))
    finally:
        executor.close()
    assert sorted(seen) == [(name, True) for name, _ in KEYS]
    for name, size in KEYS:
        assert (run.path / "models" / name / "weights.bin").read_bytes() == bytes(range(size))
    # read back on resume: nothing runs again, the files stay
    counting = CountingExecutor()
    Study(run, counting).run_all(specs(run, tf.saves_a_file))
    assert counting.ran == [] and (run.path / "models" / "a" / "weights.bin").is_file()


def test_a_task_may_write_only_under_models(new_run):
    run = new_run()
    with pytest.raises(TasksFailed, match="under models/"):
        Study(run, SerialExecutor()).run_all(specs(run, tf.saves_outside_models, keys=KEYS[:1]))
    assert not (run.path.parent / "a.bin").exists()
