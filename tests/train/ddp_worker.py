"""The trainings of test_distributed.py, and the script torchrun runs them with.

``python ddp_worker.py torchrun NPROC NAMES OUT [KILL_AT]`` runs ``torchrun --nproc_per_node
NPROC`` on this file with every socket on 127.0.0.1 (:func:`torchrun`); each process then
trains each of the comma-separated ``NAMES`` (:func:`train`) in turn and saves its final
weights and history to ``OUT/<name>-rank<r>.pt``. ``KILL_AT``: rank 0 SIGKILLs itself at the end
of that optimizer step (torchrun then ends the others), leaving the checkpoint of an earlier one.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import signal
import socket
import sys
from pathlib import Path
from unittest import mock

import torch
from torch import nn
from torch.utils.data import TensorDataset

from biaslab.train import (
    Checkpointing,
    LogRecords,
    TrainConfig,
    Trainer,
    TrainingProgress,
    accuracy,
    distributed,
)

# 97 rows in global batches of 15: 7 steps an epoch, every batch split unevenly across 2 processes
# (8 + 7 rows; the last batch, 7 rows, 4 + 3).
N_TRAIN, N_VAL = 97, 40
PLAIN = TrainConfig(epochs=3, batch_size=15, optimizer="sgd", lr=0.2, momentum=0.9, schedule="cosine")
NOISY = TrainConfig(epochs=3, batch_size=15, lr=0.01, checkpoint_every=4)


def data(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (n, 4) and labels (n,) of a nonlinear rule."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=gen)
    return x, (x[:, 0] * x[:, 1] + x[:, 2] > 0).long()


def model(dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 2))


def noisy_step(model: nn.Module, batch, generator: torch.Generator):
    """Cross-entropy on inputs with noise from the trainer's (per-rank) step generator."""
    x, y = batch
    noise = torch.randn(x.shape, generator=generator, device=generator.device)  # (B, 4)
    return nn.functional.cross_entropy(model(x + 0.3 * noise), y)


class JsonLines:
    """A metrics logger writing one JSON line per record (every process appends to one file, so a
    record logged twice shows); ``rewind(step)`` drops the records after ``step``."""

    def __init__(self, path: Path):
        self.path = path

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.path.read_text().splitlines()] if self.path.exists() else []

    def log(self, record: dict) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def rewind(self, step: int) -> None:
        kept = [r for r in self.records() if r["step"] <= step]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in kept))


class KillAt:
    """Rank 0 dies (SIGKILL) at the end of optimizer step ``step``, before that step's save."""

    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, trainer) -> None:
        if trainer.step == self.step and trainer.world.is_main:
            os.kill(os.getpid(), signal.SIGKILL)


def plain() -> Trainer:
    """A deterministic training (no dropout, no noise): one process and two end alike."""
    return Trainer(
        model(), config=PLAIN, seed=3, metrics={"accuracy": accuracy}, callbacks=[TrainingProgress(False)]
    )


def noisy(out: Path, kill_at: int | None = None) -> Trainer:
    """Dropout and per-rank noise, checkpointed every 4 steps, logged, a line per epoch."""
    callbacks = [Checkpointing(out / "noisy.pt"), LogRecords(JsonLines(out / "noisy.jsonl"))]
    callbacks += [TrainingProgress("lines"), *([KillAt(kill_at)] if kill_at else [])]
    return Trainer(model(0.2), config=NOISY, step=noisy_step, seed=5, callbacks=callbacks)


def unweighted_shards(shard):
    """A broken :func:`distributed.shard` for a control: every shard weighs 1."""

    @functools.wraps(shard)
    def broken(*args):
        return distributed.Shard(shard(*args).rows, 1.0)

    return broken


def train(name: str, out: Path, kill_at: int | None = None) -> dict:
    """Train ``name`` and return the final weights and the history: ``"plain"``, ``"noisy"``,
    ``"dataset"`` (``plain`` from a Dataset: the DataLoader path) or the control
    ``"unweighted"`` (``plain`` with every shard weighing 1)."""
    broken = unweighted_shards(distributed.shard) if name == "unweighted" else distributed.shard
    train_set = data(0, N_TRAIN)
    with mock.patch.object(distributed, "shard", broken):
        trainer = noisy(out, kill_at) if name == "noisy" else plain()
        history = trainer.fit(TensorDataset(*train_set) if name == "dataset" else train_set, data(1, N_VAL))
    return {"weights": trainer.model.state_dict(), "history": history}


def listening_addresses(pids: set[int]) -> set[str]:
    """The local addresses of the TCP sockets that ``pids`` listen on (from /proc)."""
    inodes = set()
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:  # closed meanwhile (the listing's own descriptor)
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()  # local address "hex:port", ..., state (0A: LISTEN), ..., inode
            if fields[3] == "0A" and fields[9] in inodes:
                raw = bytes.fromhex(fields[1].split(":")[0])
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # host order
                found.add(str(ipaddress.ip_address(words)))
    return found


def torchrun(nproc: int, *worker_args: str) -> None:
    """``torchrun --nproc_per_node nproc`` on this file, its rendezvous store on 127.0.0.1.

    torchrun's own store listens on every interface at ``--master_port``; here it gets a socket
    already bound to 127.0.0.1 (port 0: a free port, no race), and gloo binds to the loopback
    interface (``GLOO_SOCKET_IFNAME``).
    """
    from torch.distributed import TCPStore
    from torch.distributed.elastic.rendezvous import static_tcp_rendezvous
    from torch.distributed.run import main

    listener = socket.create_server(("127.0.0.1", 0))
    static_tcp_rendezvous.TCPStore = functools.partial(TCPStore, master_listen_fd=listener.fileno())
    if "lo" in dict(socket.if_nameindex()).values():
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    port = listener.getsockname()[1]
    args = ["--master_addr=127.0.0.1", f"--master_port={port}", "--rdzv-backend=static"]
    main([*args, f"--nproc_per_node={nproc}", __file__, *worker_args])


def worker(names: str, out: str, kill_at: str | None = None) -> None:
    """One process: join the group, train each of ``names``, save this rank's results."""
    here = distributed.init_process_group("cpu")
    # every process has joined: the group's sockets are open (torchrun's agent's, each worker's)
    pids = {os.getppid(), *distributed.gather(os.getpid())}
    listening = sorted(listening_addresses(pids)) if here.is_main else None
    for name in names.split(","):
        result = {**train(name, Path(out), int(kill_at) if kill_at else None), "listening": listening}
        torch.save(result, Path(out) / f"{name}-rank{here.rank}.pt")
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1] == "torchrun":
        torchrun(int(sys.argv[2]), "train", *sys.argv[3:])
    else:
        worker(*sys.argv[2:])
