"""One training across processes: torchrun, DistributedDataParallel, gloo on the CPU.

Two processes end with one process's weights (the same global batches, each split unevenly;
from tensors in memory or a Dataset),
within a float tolerance; a training killed mid-epoch resumes to the uninterrupted run's result
bit for bit; only rank 0 logs; every socket stays on 127.0.0.1. The trainings and the script
torchrun runs are in ddp_worker.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from biaslab.train import distributed
from biaslab.train.distributed import RankRandomness, World, shard
from biaslab.train.seed import rng_state
from tests.train import ddp_worker

WORKER = ddp_worker.__file__

# The largest |w_2 - w_1| allowed between the weights of 2 processes and of 1. Not 0: each process
# sums its shard's float32 gradient, DDP divides by 2 and adds the two, where one process sums
# all rows at once: the same numbers added in another order. Measured: 1.8e-7 on weights of
# magnitude ~1 after 21 SGD steps; the control with unweighted shards ends 1.4e-2 away.
TOLERANCE = 1e-5
KILL_AT = 10  # rank 0 dies after step 10 of 21; its last checkpoint is step 8's, one into epoch 2


def torchrun(out, names: str, kill_at: int | None = None) -> subprocess.CompletedProcess:
    """``names`` trained by ``torchrun --nproc_per_node 2`` into ``out``, one thread a process."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, WORKER, "torchrun", "2", names, str(out), *([str(kill_at)] if kill_at else [])]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)


def results(out, name: str) -> list[dict]:
    return [torch.load(out / f"{name}-rank{rank}.pt", weights_only=True) for rank in (0, 1)]


def largest_difference(a: dict, b: dict) -> float:
    return max(float((a[key] - b[key]).abs().max()) for key in a)


def assert_identical(a: dict, b: dict) -> None:
    assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """One torchrun of the deterministic training, its control and the noisy one, uninterrupted."""
    out = tmp_path_factory.mktemp("two")
    names = ("plain", "dataset", "unweighted", "noisy")
    done = torchrun(out, ",".join(names))
    assert done.returncode == 0, done.stderr[-3000:]
    trained = {name: results(out, name) for name in names}
    return SimpleNamespace(out=out, stderr=done.stderr, **trained)


# -- shards ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_shards_split_a_batch_as_tensor_split_does(world_size):
    for rows in range(world_size, 30):
        parts = [shard(rows, rank, world_size) for rank in range(world_size)]
        chunks = torch.tensor_split(torch.arange(rows), world_size)
        assert [torch.arange(rows)[p.rows].tolist() for p in parts] == [c.tolist() for c in chunks]
        # Σ_r n_r W / N = W: DDP's mean of the weights is 1
        assert sum(p.weight for p in parts) == pytest.approx(world_size)
        if rows % world_size == 0:
            assert all(p.weight == 1.0 for p in parts)


@pytest.mark.parametrize("rows, world_size", [(7, 2), (11, 3), (5, 4)])
def test_weighted_shards_average_to_the_global_mean_gradient(rows, world_size):
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(rows, 3, generator=gen), torch.randint(0, 2, (rows,), generator=gen)
    model = nn.Linear(3, 2)

    def gradient(part, weight=1.0):
        model.zero_grad()
        (nn.functional.cross_entropy(model(x[part]), y[part]) * weight).backward()
        return torch.cat([p.grad.flatten() for p in model.parameters()])  # (8,)

    parts = [shard(rows, rank, world_size) for rank in range(world_size)]
    averaged = sum(gradient(p.rows, p.weight) for p in parts) / world_size  # what DDP computes
    unweighted = sum(gradient(p.rows) for p in parts) / world_size
    torch.testing.assert_close(averaged, gradient(slice(None)))
    assert not torch.allclose(unweighted, gradient(slice(None)))


def test_a_shard_needs_a_row_in_every_process():
    with pytest.raises(ValueError, match="a batch of 1 rows cannot give each of 2 processes a row"):
        shard(1, 0, 2)
    with pytest.raises(ValueError, match="rank 2"):
        shard(5, 2, 2)
    with pytest.raises(ValueError, match="the last batch of an epoch holds 1 of 16 rows"):
        distributed.check_split(16, 5, 2, "mlp")
    distributed.check_split(17, 5, 2, "mlp")


# -- the world ------------------------------------------------------------------------------------


def test_without_torchrun_a_process_trains_alone(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert distributed.world() == World(0, 1, 0) and distributed.is_main()
    assert distributed.init_process_group("cpu") == World() == distributed.joined_world()
    assert not torch.distributed.is_initialized()


def test_joining_needs_the_address_torchrun_sets(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.setenv("MASTER_PORT", "29500")
    assert distributed.world() == World(1, 2, 1) and not distributed.is_main()
    with pytest.raises(ValueError, match="WORLD_SIZE=2 but MASTER_ADDR unset: start the processes with"):
        distributed.init_process_group("cpu")
    monkeypatch.setenv("RANK", "one")
    with pytest.raises(ValueError, match="RANK='one' is not a whole number"):
        distributed.world()


def test_rank_states_load_only_into_as_many_processes():
    gen = torch.Generator().manual_seed(1)
    saved = [{"rng": rng_state(), "step_gen": gen.get_state()}] * 2
    trainer = SimpleNamespace(world=World(0, 3, 0))
    with pytest.raises(ValueError, match="saved across 2 processes, resumed across 3: resume with torchrun"):
        RankRandomness(gen).load_state_dict(saved, trainer)
    with pytest.raises(ValueError, match="rank 1's state is a str"):
        RankRandomness(gen).load_state_dict([saved[0], "junk"], SimpleNamespace(world=World(1, 2, 1)))


# -- two processes under torchrun -----------------------------------------------------------------


def test_two_processes_end_with_the_weights_of_one(two_processes):
    one = ddp_worker.train("plain", two_processes.out)
    rank0, rank1 = two_processes.plain
    assert_identical(rank0["weights"], rank1["weights"])  # DDP keeps the processes in step
    assert rank0["history"] == rank1["history"]  # the same records everywhere (global loss sums)
    assert largest_difference(rank0["weights"], one["weights"]) < TOLERANCE
    for two_record, one_record in zip(rank0["history"], one["history"], strict=True):
        numbers = {key: value for key, value in two_record.items() if key != "tag"}
        assert numbers == pytest.approx({key: one_record[key] for key in numbers}, rel=1e-5)
    # a Dataset's batches (a DataLoader over each process's rows) are the same rows
    for from_dataset, from_tensors in zip(two_processes.dataset, two_processes.plain):
        assert_identical(from_dataset["weights"], from_tensors["weights"])
    # the comparison can fail: shards that are not weighted end far from one process
    control = two_processes.unweighted[0]["weights"]
    assert largest_difference(control, one["weights"]) > 100 * TOLERANCE


def test_every_socket_of_the_group_listens_on_loopback(two_processes):
    assert two_processes.plain[0]["listening"] == ["127.0.0.1"]


def test_only_rank_0_logs(two_processes):
    records = ddp_worker.JsonLines(two_processes.out / "noisy.jsonl").records()
    assert [r["epoch"] for r in records] == [1, 2, 3]  # one file both processes could append to
    assert [line.split("  ")[1] for line in two_processes.stderr.splitlines() if "  epoch " in line] == [
        "epoch 1/3",
        "epoch 2/3",
        "epoch 3/3",
    ]


def test_a_killed_training_resumes_to_the_uninterrupted_result(two_processes, tmp_path):
    killed = torchrun(tmp_path, "noisy", kill_at=KILL_AT)
    assert killed.returncode != 0 and "SIGKILL" in killed.stderr, killed.stderr[-3000:]
    saved = torch.load(tmp_path / "noisy.pt", weights_only=True)
    assert (saved["step"], saved["epoch"], len(saved["callbacks"]["rank_randomness"])) == (8, 1, 2)

    resumed = torchrun(tmp_path, "noisy")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for again, uninterrupted in zip(results(tmp_path, "noisy"), two_processes.noisy):
        assert_identical(again["weights"], uninterrupted["weights"])  # dropout and noise per rank
        assert again["history"] == uninterrupted["history"]
    log = ddp_worker.JsonLines(tmp_path / "noisy.jsonl").records()
    assert log == ddp_worker.JsonLines(two_processes.out / "noisy.jsonl").records()
