"""The machine a run uses: its device, how many CPU threads, and how many cores are idle now.

A run computes on one device, ``--device auto|cpu|cuda|mps`` (``auto``: CUDA, else Apple's
MPS, else the CPU), recorded in config.json and reused by a resume. What a seed fixes depends on
it: on the CPU, the run bit for bit (for a given thread count and precision); on CUDA, the
random draws and, with the deterministic algorithms :func:`make_deterministic` switches on, the
arithmetic of every operation torch offers a deterministic kernel for; a few (some scatter-adds
behind graph pooling, for instance) have none, and their sums may differ in the last bits from
one run to the next, so a CUDA run is reproducible to rounding, not bit for bit, and never equal
to a CPU run.

A run computes on ``threads`` CPU threads, torch's and the BLAS library's behind NumPy alike.
CPU results can differ in their last bits between thread counts (a reduction split over more
threads adds in another order), so a seed fixes a run bit for bit *for a given thread count*
(and precision): the count is recorded in config.json and a resume reuses it.

The default is a fixed count, every core this process may use; ``"auto"`` takes the cores that
are idle when the run starts, measured over a quarter of a second from ``/proc/stat``. Measured
on this project's 2-core machine, ``decision --quick``, three runs each (median wall seconds):
quiet, 2 threads 5.24, ``auto`` 5.57, 1 thread 5.93; with a spin loop on one core, 2 threads 9.19
(8.6-18.0), ``auto`` 6.19, 1 thread 5.77. Every core stays the default: it is the fastest on a
quiet machine, and a fixed count makes the same command give the same bits on every run (``auto``
would tie the last bits to whatever else ran). A busy machine is said instead: as a CPU run
starts, :func:`few_idle_cores_notice` prints one line when fewer cores are idle than its
threads (the load read by :class:`CpuLoad` since the previous run, or since biaslab loaded,
with this process's own work left out), naming ``--threads auto``.

The calls: :func:`resolve_device` and :func:`make_deterministic` (the device, and torch's
deterministic kernels on CUDA), :func:`resolve_threads`, :func:`use_threads` (torch's and the BLAS
threads inside a block, restored after; subnormals flushed to zero, :func:`flush_denormals`) and
:func:`on_current_threads` (the same count applied again to thread pools loaded since, such as
scikit-learn's OpenMP, which loads with its first estimator), :func:`idle_cores`; and, for what
reports and results record, :func:`cpu_name`, :func:`device_description` and :func:`busy_warning`
(benchmarks print it when the load average is high); :class:`CpuLoad`,
:func:`few_idle_cores_notice` and :func:`restart_load_window` (the busy-machine line). A device or
thread count this machine cannot give is a one-line ConfigError.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from biaslab.checks import is_integer
from biaslab.errors import ConfigError

__all__ = [
    "DEVICES",
    "CpuLoad",
    "available_cores",
    "busy_warning",
    "cpu_name",
    "device_description",
    "few_idle_cores_notice",
    "flush_denormals",
    "flushing_denormals",
    "idle_cores",
    "make_deterministic",
    "on_current_threads",
    "resolve_device",
    "resolve_threads",
    "restart_load_window",
    "use_threads",
]

DEVICES = ("auto", "cpu", "cuda", "mps")  # what --device accepts


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def busy_warning(threshold: float = 0.5, load: float | None = None) -> str | None:
    """A warning when the 1-minute load average exceeds ``threshold``, else None.

    Benchmarks print it: timings taken while other work runs say little about this machine.
    ``load`` defaults to ``os.getloadavg()[0]`` (it lingers for a minute after a job ends).
    """
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # not available on this system
            return None
    if load <= threshold:
        return None
    return (
        f"WARNING: load average {load:.2f} on {available_cores()} cores: the machine is busy; "
        "absolute figures mean little"
    )


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) jiffies summed over all CPUs since boot, from /proc/stat's first line."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return idle, sum(values[:8])  # guest times are already counted in user and nice


def idle_cores(sample_s: float = 0.25, cpu_times: Callable[[], tuple[int, int] | None] = _cpu_times) -> int:
    """The number of cores idle now: the idle share of all CPU time over ``sample_s`` seconds,
    times the cores this process may use, rounded, within 1..available_cores().

    Where /proc/stat is missing, the one-minute load average stands in for the busy cores.
    """
    cores = available_cores()
    before = cpu_times()
    if before is not None:
        time.sleep(sample_s)
        after = cpu_times()
        total = after[1] - before[1] if after else 0
        if total > 0:
            idle_share = (after[0] - before[0]) / total
            return min(cores, max(1, round(idle_share * (os.cpu_count() or cores))))
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores
    return min(cores, max(1, round(cores - busy)))


def resolve_threads(value: int | str | None) -> int:
    """The thread count for ``--threads``: a positive integer, ``"auto"`` (the idle cores), or
    None (the default: every core this process may use)."""
    cores = available_cores()
    if value is None:
        return cores
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return idle_cores()
        if not text.isdigit():
            raise ConfigError(f"threads={value!r}: give a number of threads (1..{cores}) or 'auto'")
        value = int(text)
    if not is_integer(value):
        raise ConfigError(f"threads={value!r}: give a number of threads (1..{cores}) or 'auto'")
    if not 1 <= value <= 4 * cores:
        raise ConfigError(f"threads={value}: must be in 1..{4 * cores} (this machine has {cores} cores)")
    return value


def _own_cpu_s() -> float:
    """The CPU seconds this process has used, every thread counted."""
    times = os.times()
    return times.user + times.system


class CpuLoad:
    """How many cores other processes left idle over a window: the idle share of all CPU time
    between two readings of ``/proc/stat``, with this process's own CPU time counted as idle.

    The window runs from :meth:`restart` (or creation) to :meth:`idle_cores`. A window shorter
    than ``min_s`` has too few clock ticks to count and gives None; over one longer than ``max_s``
    (stale) the idle cores are sampled now for a tenth of a second; without ``/proc/stat``, the load
    average stands in (:func:`idle_cores`).
    """

    def __init__(self, min_s: float = 0.2, max_s: float = 60.0,
                 cpu_times: Callable[[], tuple[int, int] | None] = _cpu_times,
                 own_cpu_s: Callable[[], float] = _own_cpu_s) -> None:  # fmt: skip
        self.min_s, self.max_s = min_s, max_s
        self.cpu_times, self.own_cpu_s = cpu_times, own_cpu_s
        self.restart()

    def restart(self) -> None:
        """Start a new window now."""
        self._start = (self.cpu_times(), self.own_cpu_s())

    def idle_cores(self) -> float | None:
        """The cores other processes left idle since the window started (0..all cores), or None."""
        (before, own_before), after = self._start, self.cpu_times()
        if before is None or after is None:
            return float(idle_cores(cpu_times=lambda: None))  # the load average: no waiting
        cpus = os.cpu_count() or 1
        tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        total = after[1] - before[1]  # jiffies summed over every CPU
        window_s = total / (cpus * tick)
        if window_s < self.min_s:
            return None
        if window_s > self.max_s:
            return float(idle_cores(sample_s=0.1, cpu_times=self.cpu_times))
        idle = after[0] - before[0] + (self.own_cpu_s() - own_before) * tick  # ours counts as idle
        return min(float(cpus), max(0.0, cpus * idle / total))


_LOAD = CpuLoad()  # the window since this module loaded, then since the last run's start or end


def few_idle_cores_notice(threads: int, load: CpuLoad = _LOAD) -> str | None:
    """One line when fewer cores are idle than ``threads`` as a run starts (other processes keep
    the rest busy), else None; the window is restarted. A window too short to read says nothing:
    it is a run started right after another (a workshop's next lab; the workshop's own run has
    said it), and sampling there would add a wait to every lab."""
    idle = load.idle_cores()
    load.restart()
    if idle is None:
        return None
    idle_now = round(idle)
    if idle_now >= threads:
        return None
    cores = available_cores()
    return (
        f"note: {idle_now} of {cores} cores idle, and this run computes on {threads} threads: other "
        f"work will slow it, measured up to 3x (--threads auto uses the idle cores)"
    )


def restart_load_window(load: CpuLoad = _LOAD) -> None:
    """Start the load window anew (a run's end: the next run reads the load between them)."""
    load.restart()


def flush_denormals(on: bool = True) -> bool:
    """Treat subnormal floats as zero on every thread torch computes on (FTZ and DAZ), or, with
    ``on=False``, compute with them again.

    A float32 below 1.2e-38 is *subnormal*, and x86 cores compute with one tens of times slower
    than with a normal number. Adam's first moments for weights whose gradient is almost always
    zero (a decoder's weights for MNIST's blank border pixels) decay into that range and stay
    there. Measured on this project's 2-core machine with the vae lab's 2-D VAE after its 30
    epochs: 29% of Adam's first moments were subnormal, and the fused Adam step took 4.1 ms
    instead of 0.7 ms (the whole training step 8.7 ms instead of 5.3). TensorFlow and XLA flush
    subnormals on their CPU threads by default. ``torch.set_flush_denormal`` sets the calling
    thread only: threads started later inherit it, and torch's OpenMP workers that already run
    are reached by one parallel region of libgomp (torch's OpenMP on Linux) that sets it in each;
    with another OpenMP, workers started before the first call keep their mode. A value that
    would have been subnormal becomes 0; every other result keeps its bits. The mode is the
    processor's, so Python's and NumPy's floats on these threads follow it too: :func:`use_threads`
    switches it on for a run and back off after. Returns whether this CPU supports it (False:
    nothing changed).
    """
    import torch

    if not torch.set_flush_denormal(on):
        return False
    _on_each_openmp_thread(lambda: torch.set_flush_denormal(on))
    return True


def flushing_denormals() -> bool:
    """Whether this thread flushes subnormals to zero now (a Python float product tells)."""
    return sys.float_info.min * 0.5 == 0.0  # 2^-1023: subnormal, unless flushed


def _on_each_openmp_thread(work: Callable[[], object]) -> None:
    """Call ``work`` once on each of torch's OpenMP threads, where torch's OpenMP is libgomp."""
    import ctypes

    import torch

    parallel = _gomp_parallel()
    if parallel is None:
        return
    callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: work())
    parallel(callback, None, torch.get_num_threads(), 0)


@functools.cache
def _gomp_parallel():
    """libgomp's ``void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads, unsigned
    flags)`` from torch's own lib folder, looked up once per process; None where torch ships no
    libgomp."""
    import ctypes
    import glob

    import torch

    found = sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libgomp*.so*")))
    if not found:
        return None
    try:
        parallel = ctypes.CDLL(found[0]).GOMP_parallel
    except (OSError, AttributeError):
        return None
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    parallel.argtypes = [fn, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    parallel.restype = None
    return parallel


@contextmanager
def use_threads(n: int) -> Iterator[None]:
    """Compute on ``n`` threads inside the block (torch and NumPy's BLAS), subnormals flushed to
    zero (:func:`flush_denormals`); restore both afterwards."""
    import torch

    previous, was_flushing = torch.get_num_threads(), flushing_denormals()
    torch.set_num_threads(n)
    flush_denormals()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # NumPy's BLAS keeps its own count
        threadpool_limits = None
    try:
        if threadpool_limits is None:
            yield
        else:
            with threadpool_limits(limits=n):
                yield
    finally:
        if not was_flushing:
            flush_denormals(False)
        torch.set_num_threads(previous)


# Matrices of fewer entries than this are multiplied faster by one BLAS thread than by several.
# Measured here (2 cores), scikit-learn's LogisticRegression right after torch has computed:
# digits' 1,078 x 64 rows 0.38 s on 2 BLAS threads, 0.02 s on one; 10,000 x 784 rows 0.51 s and
# 0.37 s. Each product is too small to share out, and the BLAS threads wait on torch's.
SMALL_BLAS_ENTRIES = 10_000_000


@contextmanager
def on_current_threads(entries: int | None = None) -> Iterator[None]:
    """The threads torch computes on now, applied again to every thread pool: a library loaded
    since :func:`use_threads` limited the pools (scikit-learn's OpenMP loads with its first
    estimator, SciPy's BLAS with ``scipy.linalg``) would otherwise compute on every core.

    ``entries``: the size of the data matrix the block computes on; below
    ``SMALL_BLAS_ENTRIES`` the BLAS pools get one thread (OpenMP's keep torch's count, so a
    tree ensemble still fits in parallel)."""
    import torch

    with use_threads(torch.get_num_threads()):
        if entries is None or entries >= SMALL_BLAS_ENTRIES:
            yield
            return
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            yield
            return
        with threadpool_limits(limits=1, user_api="blas"):
            yield


def device_description(device) -> str:
    """What a run computes on, in words: the GPU's name, or the CPU's with this process's threads."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (MPS)"
    return f"{cpu_name()}, {torch.get_num_threads()} threads (CPU)"


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else the platform's processor or machine."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def resolve_device(value: str | None) -> str:
    """The device for ``--device``: ``"auto"`` (or None) -> ``"cuda"`` when a CUDA GPU is
    present, else ``"mps"`` when Apple's Metal is, else ``"cpu"``; a named device must exist
    (a ConfigError in one line otherwise). Returns the device's name, as config.json records it."""
    import torch

    name = "auto" if value is None else str(value).strip().lower()
    if name not in DEVICES:
        raise ConfigError(f"device={value!r}: choose one of {', '.join(DEVICES)}")
    has_mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device=cuda: no CUDA GPU is available here; use device=cpu (or auto)")
    if name == "mps" and not has_mps:
        raise ConfigError("device=mps: Apple's Metal (MPS) is not available here; use device=cpu (or auto)")
    return name


def make_deterministic(device: str) -> None:
    """Ask torch for deterministic kernels where it has them (on CUDA: cuBLAS's fixed workspace,
    cuDNN without autotuning, ``torch.use_deterministic_algorithms(warn_only=True)``: an
    operation without a deterministic kernel warns instead of failing). The CPU needs nothing."""
    if device != "cuda":
        return
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    # torch 2.11's use_deterministic_algorithms imports torch._inductor.config, whose import
    # fails in a cycle (torch._inductor.utils <-> torch._dynamo.guards) unless torch._dynamo was
    # imported first; importing it here breaks the cycle (seen on an H200 with torch 2.11).
    import torch._dynamo

    torch.use_deterministic_algorithms(True, warn_only=True)
