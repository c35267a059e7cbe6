"""One training across processes: ``torchrun --nproc_per_node N`` and DistributedDataParallel.

Every process runs the same script. It joins the process group (:func:`init_process_group`:
gloo on the CPU, NCCL on CUDA) before it builds its :class:`~biaslab.train.trainer.Trainer`;
a Trainer built in a joined group of several processes (:func:`joined_world`) then

* wraps its model in ``DistributedDataParallel`` (:func:`wrap`), which starts every process
  from rank 0's weights and averages the gradients of each step over the processes;
* shuffles with the same seeded generator on every process, so all of them see the same
  permutation and the same global batches of ``config.batch_size`` rows, and takes its own
  contiguous rows of each (:func:`shard`), its loss weighted so that the averaged gradient is
  the mean gradient of the global batch, also for an uneven split;
* sums each step's loss over the processes (:func:`sum_across`), so every process logs the
  global mean, sees a divergence at the same step and stops at the same epoch;
* validates on the whole validation set in every process (identical weights and data give
  identical records); only rank 0 writes checkpoints, metrics and progress
  (:func:`main_process_only` on the callbacks' hooks), the others wait for the file
  (:func:`barrier`), and every process loads it on a resume.

The trainer's step generator is seeded per rank (rank 0's as in one process), so random steps
draw different noise on each shard; :class:`RankRandomness` keeps every rank's random state in
the checkpoint, so a resumed training goes on exactly. Dropout draws from torch's global
generator, which the caller seeds (the same seed in every process gives every shard the same
masks, row for row).

Only what torchrun sets up is used (``env://``: ``MASTER_ADDR`` and ``MASTER_PORT``). On one
machine, ``--master_addr=127.0.0.1`` keeps the processes' connections on the loopback
interface (gloo binds where the host name resolves to, or to ``GLOO_SOCKET_IFNAME``); torchrun's
own rendezvous store listens on every interface at ``--master_port``.

The helpers: :class:`World` and :func:`world` (torchrun's ``RANK``, ``WORLD_SIZE`` and
``LOCAL_RANK``; rank 0 of 1 without them), :func:`is_main`, :func:`init_process_group`
(idempotent; NCCL on GPU ``LOCAL_RANK``; one line when ``MASTER_ADDR`` or ``MASTER_PORT`` is
missing), :func:`joined_world`. The wrapped model is ``trainer.train_model``; ``trainer.model``
stays the module. Tested with 2 CPU processes: the weights within 1e-5 of one process's, and a
killed run resumes bit-identical.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from biaslab.train.seed import rng_state, set_rng_state


@dataclass(frozen=True)
class World:
    """Where one process stands among those of a training.

    Args:
        rank: this process's number, 0 .. world_size - 1 (0: the one that writes).
        world_size: how many processes train together.
        local_rank: its number on this machine (its GPU on CUDA).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0, the process that writes checkpoints, logs and progress."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """Whether several processes train together."""
        return self.world_size > 1


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a whole number (torchrun sets it)") from None


def world() -> World:
    """This process as torchrun started it: ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` from the
    environment; rank 0 of 1 without them."""
    rank = _env_int("RANK", 0)
    return World(rank, _env_int("WORLD_SIZE", 1), _env_int("LOCAL_RANK", rank))


def is_main() -> bool:
    """Whether this process is rank 0 (the only process of a training without torchrun)."""
    return world().is_main


def joined_world() -> World:
    """The process group this process has joined (rank and size from torch.distributed), or
    rank 0 of 1 when it has joined none: what a Trainer splits its batches across. A process
    that torchrun started trains alone until it calls :func:`init_process_group`."""
    if not (dist.is_available() and dist.is_initialized()):
        return World()
    return World(dist.get_rank(), dist.get_world_size(), _env_int("LOCAL_RANK", dist.get_rank()))


def init_process_group(device: str | torch.device = "cpu") -> World:
    """Join the processes torchrun started (idempotent); without torchrun, nothing to join.

    The backend follows the device: NCCL for CUDA (each process on GPU ``LOCAL_RANK``, made
    the current device), gloo for the CPU.

    Args:
        device: where the training runs, ``"cpu"`` or ``"cuda"``.

    Returns:
        the :class:`World` joined (rank 0 of 1 when ``WORLD_SIZE`` is unset or 1).
    """
    if dist.is_available() and dist.is_initialized():
        return joined_world()
    here = world()
    if not here.distributed:
        return here
    missing = [name for name in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(name)]
    if missing:
        raise ValueError(
            f"WORLD_SIZE={here.world_size} but {' and '.join(missing)} unset: start the processes "
            f"with torchrun, e.g. torchrun --nproc_per_node {here.world_size} --master_addr=127.0.0.1 ..."
        )
    kind = torch.device(device).type
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"a training across processes runs on the CPU (gloo) or CUDA (NCCL), not {kind}")
    if not dist.is_available():
        raise ValueError("this build of torch has no torch.distributed: train in one process")
    if kind == "cuda":
        torch.cuda.set_device(here.local_rank)
    dist.init_process_group("nccl" if kind == "cuda" else "gloo", init_method="env://")
    return joined_world()


@dataclass(frozen=True)
class Shard:
    """One process's part of a global batch.

    Args:
        rows: its rows of the batch, a contiguous ``slice``.
        weight: what its mean loss is multiplied by, ``local_n * world_size / global_n``: the
            average of the processes' gradients is then the global batch's mean gradient.
    """

    rows: slice
    weight: float


def shard(batch_rows: int, rank: int, world_size: int) -> Shard:
    """The rows of a global batch of ``batch_rows`` that ``rank`` of ``world_size`` takes.

    Contiguous chunks as ``torch.tensor_split`` makes them: the first ``batch_rows %
    world_size`` ranks take one row more. With ``g_r`` the gradient of rank r's mean loss over
    its ``n_r`` rows, ``(1 / W) Σ_r g_r · n_r W / N = (1 / N) Σ_rows ∇loss``: DDP's average of
    the weighted gradients is the gradient of the mean over all N rows.

    Args:
        batch_rows: N, the rows of the global batch (at least ``world_size``: every process
            needs a row, an empty shard would have no loss to average).
        rank: this process's rank, 0 .. world_size - 1.
        world_size: W, the processes the batch is split across.
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not one of 0 .. {world_size - 1}")
    if batch_rows < world_size:
        raise ValueError(f"a batch of {batch_rows} rows cannot give each of {world_size} processes a row")
    base, extra = divmod(batch_rows, world_size)
    start = rank * base + min(rank, extra)
    stop = start + base + (rank < extra)
    return Shard(slice(start, stop), (stop - start) * world_size / batch_rows)


def check_split(n: int, batch_size: int, world_size: int, tag: str) -> None:
    """Refuse (a ValueError) a training whose last batch of an epoch, ``n`` rows in batches of
    ``batch_size``, has fewer rows than the processes it is split across."""
    last = n - (math.ceil(n / batch_size) - 1) * batch_size  # the smallest batch
    if last < world_size:
        raise ValueError(
            f"training '{tag}': the last batch of an epoch holds {last} of {n} rows, fewer than "
            f"the {world_size} processes it is split across; choose another batch_size"
        )


def batch_shards(n: int, batch_size: int, start: int, world: World) -> list[tuple[slice, float]]:
    """This process's part of every global batch of an epoch of ``n`` rows, from row ``start``
    on: its rows of the shuffled set (a slice) and its loss weight (:func:`shard`)."""
    parts = []
    for i in range(start, n, batch_size):
        part = shard(min(batch_size, n - i), world.rank, world.world_size)
        parts.append((slice(i + part.rows.start, i + part.rows.stop), part.weight))
    return parts


def wrap(model: nn.Module, device: torch.device) -> nn.Module:
    """``model`` in ``DistributedDataParallel`` over the joined group (on CUDA, on ``device``).

    Building it is collective: every process wraps its model, and all start from rank 0's
    parameters and buffers. Every parameter must take part in each step's loss (DDP's default,
    without ``find_unused_parameters``).
    """
    device_ids = [device] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=device_ids)


def sum_across(sums: dict[str, float], count: int, device: torch.device) -> tuple[dict[str, float], int]:
    """``sums`` (the same names in every process) and ``count``, each summed over the processes
    of the joined group, in float64 (collective): a step's loss sums over the global batch."""
    total = torch.tensor([*sums.values(), count], dtype=torch.float64, device=device)  # (len(sums) + 1,)
    dist.all_reduce(total)
    *totals, count_total = total.tolist()
    return dict(zip(sums, totals)), round(count_total)


def gather(value) -> list:
    """``value`` of every process (picklable), in rank order; collective."""
    values: list = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


def barrier(device: torch.device) -> None:
    """Wait until every process of the joined group gets here."""
    dist.barrier(device_ids=[torch.cuda.current_device()] if device.type == "cuda" else None)


def main_process_only(hook):
    """A callback hook that runs on rank 0 only (the trainer's ``world``), e.g. a log's."""

    @functools.wraps(hook)
    def run(self, trainer, *args):
        if trainer.world.is_main:
            return hook(self, trainer, *args)
        return None

    return run


class RankRandomness:
    """A trainer callback that keeps every rank's random state in the checkpoint.

    Each process draws its own numbers (its step generator's noise, torch's dropout masks), but
    only rank 0 writes: :meth:`state_dict` gathers, per rank, the global RNGs and the step
    generator (collective, as every save is), and :meth:`load_state_dict` puts back this
    rank's own. The Trainer adds it when it trains across processes.

    Args:
        step_gen: the trainer's step generator (its state is kept, not the object).
    """

    state_key = "rank_randomness"

    def __init__(self, step_gen: torch.Generator):
        self.step_gen = step_gen

    def state_dict(self) -> list:
        return gather({"rng": rng_state(), "step_gen": self.step_gen.get_state()})

    def load_state_dict(self, state: list, trainer) -> None:
        """Take this rank's entry of ``state``; one saved by another number of processes, or not
        of the form :meth:`state_dict` gives, is a ValueError before anything is set."""
        size = trainer.world.world_size
        if not isinstance(state, list):
            raise ValueError(f"a {type(state).__name__}, not a list of each rank's state")
        if len(state) != size:
            raise ValueError(
                f"saved across {len(state)} processes, resumed across {size}: "
                f"resume with torchrun --nproc_per_node {len(state)}"
            )
        own = state[trainer.world.rank]
        if not (
            isinstance(own, dict)
            and isinstance(own.get("rng"), dict)
            and isinstance(own.get("step_gen"), torch.Tensor)
        ):
            rank = trainer.world.rank
            raise ValueError(f"rank {rank}'s state is a {type(own).__name__}, not rng and step_gen")
        set_rng_state(own["rng"])
        self.step_gen.set_state(own["step_gen"])
