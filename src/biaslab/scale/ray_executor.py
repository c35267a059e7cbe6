"""Tasks on an existing Ray cluster (``pip install "biaslab[ray]"``).

Each task is a Ray task asking for ``{"CPU": threads}`` and, when the run computes on CUDA, one
GPU: the cluster runs as many at once as its resources hold, one GPU task per GPU. Every node
needs biaslab (and the data sets its labs read) installed; the run directory need not be shared,
since each result returns to the driver, which writes it (see :mod:`biaslab.scale.tasks`). A
worker process that dies under a task (a node lost, a SIGKILL) has Ray run it again, up to
``max_attempts`` attempts in all; a task that raises is reported, not retried.

The cluster is the user's: ``ray start --head`` on one machine, ``ray start --address HEAD:PORT``
on the others, then ``biaslab run NAME --executor ray --address HEAD:PORT`` (default: the
``RAY_ADDRESS`` variable, else a cluster started on this machine). biaslab never starts one.

An address where nothing answers is one line at once (:func:`check_reachable`). Between waits of
``POLL_S`` seconds the head is probed: a cluster that goes away (its head, its raylet: any Ray
system error) is a :class:`~biaslab.errors.ClusterLostError`, the finished tasks kept, raised
before Ray's own core would end the process.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence

from biaslab.errors import ClusterLostError, ConfigError
from biaslab.scale.tasks import MAX_ATTEMPTS, Receive, TaskSpec, died, run_task

POLL_S = 2.0  # seconds a wait for a finished task lasts before the cluster is looked at
PROBE_S = 5.0  # seconds the head has to accept a connection


def ray_module():
    """The ``ray`` package, or one line naming the install command."""
    try:
        import ray
    except ImportError:
        raise ConfigError('--executor ray needs Ray: pip install "biaslab[ray]"') from None
    return ray


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """One line when nothing answers at ``HOST:PORT`` (Ray's own connection waits for minutes)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise no_cluster(address, reason) from None


def no_cluster(where: str, reason: str) -> ConfigError:
    return ConfigError(
        f"no Ray cluster answered at {where} ({reason}); start one with 'ray start --head' "
        "and give its address with --address"
    )


class RayExecutor:
    """Tasks on the Ray cluster at ``address`` (None: ``RAY_ADDRESS``, else this machine's).

    Args:
        address: the head's ``HOST:PORT`` (or ``ray://HOST:PORT`` for Ray Client).
        threads: the CPUs each task asks for (and the threads it computes on).
        gpus: the GPUs each task asks for (1 on CUDA, else 0).
        workers: at most this many tasks in flight at once (default: as many as the cluster holds).
        max_attempts: attempts per task when its worker dies.
    """

    name = "ray"

    def __init__(self, address: str | None, threads: int, gpus: int, workers: int | None = None,
                 max_attempts: int = MAX_ATTEMPTS):  # fmt: skip
        self.address, self.threads, self.gpus = address, threads, gpus
        self.workers, self.max_attempts = workers, max_attempts
        self._connected_here = False

    def start(self, modules=()) -> None:
        """Nothing to warm: the cluster's workers are Ray's (joined at the first study)."""

    def connect(self):
        """Join the cluster (once); one line if there is none at the address."""
        ray = ray_module()
        if not ray.is_initialized():
            if self.address and "://" not in self.address:
                check_reachable(self.address)
            try:
                ray.init(address=self.address or "auto", logging_level="ERROR", log_to_driver=True)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "RAY_ADDRESS or this machine"
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise no_cluster(where, first) from None
            self._connected_here = True
        return ray

    def run(self, specs: Sequence[TaskSpec], receive: Receive, work: Callable = run_task) -> None:
        ray = self.connect()
        remote = ray.remote(
            num_cpus=self.threads,
            num_gpus=self.gpus,
            max_retries=self.max_attempts - 1,
            retry_exceptions=False,
        )(work)
        queue, running, finished = list(specs), {}, 0
        limit = self.workers or len(specs)
        try:
            while queue or running:
                while queue and len(running) < limit:
                    spec = queue.pop(0)
                    running[remote.remote(spec)] = spec
                ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
                if not ready:  # nothing finished yet: is the cluster still there?
                    self._check_alive(ray)
                for ref in ready:
                    spec = running.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError):
                        outcome = died(spec, self.max_attempts)
                    receive(spec, outcome)
                    finished += 1
        except BaseException as exc:
            if _cluster_gone(ray, exc):  # the cluster, not the run: what finished is kept
                raise ClusterLostError(
                    f"the Ray cluster went away mid-run ({type(exc).__name__}: {_first_line(exc)}); "
                    f"{finished} of {len(specs)} tasks had finished and are kept; start the cluster again, "
                    "or resume with --executor local"
                ) from None
            try:
                for ref in running:
                    ray.cancel(ref, force=True)
            except Exception:  # cancelling on a cluster that is gone: nothing left to stop
                pass
            raise

    def _check_alive(self, ray) -> None:
        """A ConnectionError when the cluster's head no longer answers. Ray itself would wait on
        the results, then end this whole process a minute later ("Failed to connect to GCS"):
        asked between two waits, the run ends first, in one line, its finished tasks kept."""
        if self.address and "://" in self.address:
            return  # Ray Client: its server, not a head port, is what this process talks to
        address = self.address or ray.get_runtime_context().gcs_address
        if not address:
            return
        try:
            check_reachable(address, timeout=PROBE_S)
        except ConfigError:
            raise ConnectionError(f"the cluster's head at {address} no longer answers") from None

    def close(self) -> None:
        if self._connected_here:
            try:
                ray_module().shutdown()
            except Exception:  # a cluster that went away: nothing left to leave
                pass
            self._connected_here = False


def _cluster_gone(ray, exc: BaseException) -> bool:
    """Whether ``exc`` says the cluster itself went away (the local raylet or the head died, an
    object's owner or the connection lost), not that a task failed: a task's own exception is
    caught inside it (``run_task``) and returns as its outcome."""
    if isinstance(exc, ray.exceptions.RayTaskError):
        return False
    return isinstance(exc, (ray.exceptions.RayError, ConnectionError))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return " ".join(text.splitlines()[0].split())[:200] if text else "no message"
