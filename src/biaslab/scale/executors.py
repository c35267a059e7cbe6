"""Who runs a study's tasks: this process, worker processes on this machine, or a Ray cluster.

Every executor has one method, ``run(specs, receive, work=run_task)``: it runs ``work(spec)`` for
each spec (a :class:`TaskSpec` through :func:`~biaslab.scale.tasks.run_task`, or a sweep's run
through :func:`~biaslab.sweep.run_member`), a module-level function, and hands its outcome to
``receive(spec, outcome)`` in the driver's process, in the order they finish. A task that raises
comes back as an outcome with an ``"error"`` (the other tasks go on); a worker that dies under a
task (killed, out of memory) has the task run again, up to ``max_attempts`` times in all.

===========  ==================================================================================
``serial``   one task after the other in this process (the default)
``local``    ``workers`` processes on this machine (spawned: torch's threads do not survive a
             fork), the threads divided between them
``ray``      tasks on an existing Ray cluster (:mod:`biaslab.scale.ray_executor`), each asking
             for ``{"CPU": threads}`` and, on CUDA, one GPU
===========  ==================================================================================

:class:`LocalExecutor`'s workers start with the run and import the lab and ``torch._dynamo``
while the driver reads its data; at most ``workers`` tasks are in flight. A worker that dies
breaks the pool and every task it held: those lost run again, each alone when several were, so
that a death is charged only to a task lost alone (up to ``MAX_ATTEMPTS``); workers end with
their driver. :func:`make_executor` caps ``--workers`` at the machine's cores, with a note (more
processes than cores only slow each other down); :func:`check_executor` checks the options;
:func:`task_threads` gives each fit's threads (serial: every core; local: the cores divided; Ray: 1
by default).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from biaslab.checks import is_integer
from biaslab.errors import ConfigError, OptionError
from biaslab.formatting import tell
from biaslab.hardware import available_cores
from biaslab.scale.tasks import MAX_ATTEMPTS, Receive, TaskSpec, died, run_task

EXECUTORS = ("serial", "local", "ray")


class SerialExecutor:
    """Each task in this process, one after the other."""

    name = "serial"
    workers = 1

    def start(self, modules: Sequence[str] = ()) -> None:
        pass

    def run(self, specs: Sequence[TaskSpec], receive: Receive, work: Callable = run_task) -> None:
        for spec in specs:
            receive(spec, work(spec))

    def close(self) -> None:
        pass


class LocalExecutor:
    """Tasks on ``workers`` processes of this machine.

    A worker that dies (killed, out of memory) breaks the pool: the pool fails every task it then
    holds, whichever worker died, and refuses new ones. So the tasks lost with it run again, each
    alone when there were several, and a death is charged only to a task that was the one lost:
    a task whose worker died ``max_attempts`` times fails; the others lose nothing but time.
    """

    name = "local"

    def __init__(self, workers: int, max_attempts: int = MAX_ATTEMPTS):
        self.workers, self.max_attempts = workers, max_attempts
        self.pool: ProcessPoolExecutor | None = None

    def run(self, specs: Sequence[TaskSpec], receive: Receive, work: Callable = run_task) -> None:
        queue, running, deaths = list(specs), {}, {spec.name: 0 for spec in specs}
        alone: list[TaskSpec] = []  # lost with a pool among others: each runs by itself
        try:
            while queue or alone or running:
                refused = self._hand_out(alone or queue, 1 if alone else self.workers, running, work)
                wait(running, return_when=ALL_COMPLETED if refused else FIRST_COMPLETED)
                lost = []
                for future in [f for f in running if f.done()]:
                    spec = running.pop(future)
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        lost.append(spec)
                        continue
                    receive(spec, outcome)
                if not (lost or refused):
                    continue
                lost += running.values()  # the pool is gone, and every task it held
                running.clear()
                self._discard_pool()
                if len(lost) > 1:  # which worker died is unknown
                    tell(
                        f"a worker died (killed, or out of memory?) while {len(lost)} tasks were in flight: "
                        f"running {', '.join(spec.label for spec in lost)} again, each alone"
                    )
                    alone[:0] = lost
                elif lost:
                    (spec,) = lost
                    deaths[spec.name] += 1
                    if deaths[spec.name] < self.max_attempts:
                        tell_retry(spec, deaths[spec.name], self.max_attempts)
                        queue.insert(0, spec)
                    else:
                        receive(spec, died(spec, deaths[spec.name]))
        except BaseException:
            self._discard_pool()  # an interrupt or a failed write: no worker outlives the driver
            raise

    def _hand_out(self, waiting: list[TaskSpec], limit: int, running: dict, work: Callable) -> bool:
        """Submit ``waiting``'s first tasks until ``limit`` are in flight; True if the pool broke
        (a worker died since the last look) and refused one, which stays waiting."""
        pool = self._pool()
        while waiting and len(running) < limit:
            try:
                future = pool.submit(work, waiting[0])
            except BrokenProcessPool:
                return True
            running[future] = waiting.pop(0)
        return False

    def start(self, modules: Sequence[str] = ()) -> None:
        """Start the workers now, each importing ``modules`` (the lab's), while the driver reads
        its data: the first tasks find them ready."""
        pool = self._pool()
        for _ in range(self.workers):
            pool.submit(import_modules, tuple(modules))

    def _pool(self) -> ProcessPoolExecutor:
        if self.pool is None:
            context = multiprocessing.get_context("spawn")
            self.pool = ProcessPoolExecutor(
                self.workers, mp_context=context, initializer=die_with_parent, initargs=(os.getpid(),)
            )
        return self.pool

    def _discard_pool(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            processes = list(getattr(pool, "_processes", {}).values())  # no public way to stop them
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                if process.is_alive():
                    process.kill()
            for process in processes:
                process.join(timeout=10)

    def close(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def import_modules(modules: Sequence[str]) -> None:
    """A worker's warm-up: the modules its tasks will need, imported before the first arrives."""
    import importlib

    import torch._dynamo  # noqa: F401 - what a first torch optimizer imports (1.4 s on a 2-core CPU)

    import biaslab.scale.tasks  # noqa: F401 - torch and the trainer come with it

    for module in modules:
        importlib.import_module(module)


def die_with_parent(parent: int) -> None:
    """A worker's start: end this process once the driver ``parent`` is gone (killed: nobody is left
    to receive its results, and a resumed driver runs its task again)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="biaslab-parent-watch", daemon=True).start()


def tell_retry(spec: TaskSpec, attempt: int, attempts: int) -> None:
    tell(
        f"a worker died under task {spec.label} (killed, or out of memory?): running it again "
        f"(attempt {attempt + 1} of {attempts})"
    )


def task_threads(executor: str, threads: int | None, workers: int | None) -> int:
    """The threads each task computes on: ``threads`` when given; else every core (serial), the
    cores divided between the workers (local), or 1 (a Ray task asks for that many CPUs)."""
    if threads is not None:
        return threads
    if executor == "local":
        return max(1, available_cores() // (workers or available_cores()))
    return available_cores() if executor == "serial" else 1


def check_executor(executor: str, workers: int | None, address: str | None) -> None:
    """The executor options checked before anything is written (one ConfigError line)."""
    if executor not in EXECUTORS:
        raise ConfigError(f"executor={executor!r}: choose one of {', '.join(EXECUTORS)}")
    if workers is not None and (not is_integer(workers) or workers < 1):
        raise ConfigError(f"workers={workers!r}: give a number of worker processes >= 1")
    if workers is not None and executor == "serial":
        raise OptionError("{workers} needs {executor} local (or ray); serial runs one task at a time")
    if address is not None and executor != "ray":
        raise OptionError("{address} names a Ray cluster: it needs {executor} ray")


def make_executor(executor: str, workers: int | None, address: str | None, threads: int, device: str):
    """The executor a run asked for; warns (stderr) when local workers want more threads than cores."""
    check_executor(executor, workers, address)
    if executor == "serial":
        return SerialExecutor()
    if executor == "local":
        cores = available_cores()
        if workers is not None and workers > cores:
            # Each worker is a process that imports torch (~300 MB) and computes on the CPU: more of
            # them than cores only slow each other down (100,000 asked for filled 19 GB and a load
            # of 258 on 2 cores). Capped, with a note, rather than refused: the run is still right.
            tell(
                f"note: --workers {workers:,} capped at {cores}, this machine's cores (more processes than "
                "cores only slow each other down)"
            )
            workers = cores
        workers = workers or max(1, cores // threads)
        if workers * threads > cores:
            tell(
                f"warning: {workers} workers x {threads} thread(s) on {cores} cores: they will slow "
                "each other down (fewer --workers, or --threads 1)"
            )
        return LocalExecutor(workers)
    from biaslab.scale.ray_executor import RayExecutor

    return RayExecutor(address, threads=threads, gpus=1 if device == "cuda" else 0, workers=workers)
