"""Benchmark: QM9 featurisation, epoch time per model, and our GCN against torch-geometric's.

    python benchmarks/qm9.py [--molecules 5000] [--repeats 3] [--json out.json]

Prints, on this machine:

1. the time to featurise all 130,831 molecules from qm9pack's CSVs (RDKit graphs, coordinates,
   fingerprints, scaffolds) into a fresh cache, and to reload that cache;
2. per neural model of the ``qm9`` experiment (default width), the seconds of one training epoch
   over ``--molecules`` molecules (batch 64, the comparison protocol's step with the L1 loss, on
   the data as ``biaslab.comparison.qm9`` prepares it), and that figure scaled to an epoch of the
   full 110,000-molecule training split;
3. the forward + backward time of the GCN regressor built from ``biaslab.nn.GCNConv`` and of the
   same model built from ``torch_geometric.nn.GCNConv`` with the same weights, on the same QM9
   batches, the fastest of ``--repeats`` interleaved, and their ratio (ours / PyG's).

It ends with one line ``summary: featurise = F s; reload = R s; <model> = T s/epoch(110k); ...;
GCN ours/PyG = X`` and warns when the load average shows a busy machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np
import torch

from biaslab.comparison.fitting import TABLE_READS, protocol_step
from biaslab.comparison.qm9 import QM9_CANDIDATES, prepare_qm9, qm9_candidates
from biaslab.data.molecule_splits import MoleculeSplit
from biaslab.data.molecules import ATOM_FEATURES
from biaslab.data.qm9 import load_qm9
from biaslab.experiments.qm9 import QM9Config
from biaslab.hardware import busy_warning
from biaslab.nn.molecules import GraphConvRegressor

FULL_TRAIN = 110_000


def featurise_seconds() -> tuple[float, float, object]:
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        load_qm9(folder, progress=False)
        featurise = time.perf_counter() - start
        start = time.perf_counter()
        data = load_qm9(folder)
        reload = time.perf_counter() - start
    return featurise, reload, data


def epoch_seconds(candidate, prepared) -> float:
    """One epoch of training steps (forward, backward, Adam) over the training rows of
    ``prepared`` in batches of 64, through the protocol's step for what ``candidate`` reads."""
    data = prepared.table(candidate.reads) if candidate.reads in TABLE_READS else prepared
    x, y = data.trainer_batches("train", False)  # (rows or features, targets): what the Trainer iterates
    step = data.batch_step(protocol_step("regress", loss="l1"))
    shape = data.input_shape
    torch.manual_seed(0)
    model = candidate.build(shape, 1, "regress")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for first in range(0, len(x), 64):
        loss = step(model, (x[first : first + 64], y[first : first + 64]), None).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def pyg_twin(ours: GraphConvRegressor) -> torch.nn.Module:
    """The same regressor with torch-geometric's GCNConv layers and our weights."""
    from torch_geometric.nn import GCNConv as PygGCNConv

    twin = GraphConvRegressor(ours.embed.in_features, "gcn", ours.embed.out_features, len(ours.convs))
    twin.load_state_dict(ours.state_dict())
    for k, conv in enumerate(ours.convs):
        layer = PygGCNConv(conv.in_channels, conv.out_channels)
        with torch.no_grad():
            layer.lin.weight.copy_(conv.lin.weight)
            layer.bias.copy_(conv.bias)
        twin.convs[k] = layer
    return twin


def gcn_ratio(data, rows: np.ndarray, hidden: int, repeats: int) -> dict:
    torch.manual_seed(0)
    ours = GraphConvRegressor(len(ATOM_FEATURES), "gcn", hidden)
    theirs = pyg_twin(ours)
    batches = [data.batch(rows[i : i + 64], np.zeros(len(rows[i : i + 64]))) for i in range(0, len(rows), 64)]
    torch.testing.assert_close(ours(batches[0]), theirs(batches[0]), atol=1e-5, rtol=1e-4)

    def seconds(model) -> float:
        start = time.perf_counter()
        for batch in batches:
            model(batch).sum().backward()
        return time.perf_counter() - start

    best = {"ours": float("inf"), "pyg": float("inf")}
    for _ in range(repeats):
        best["ours"] = min(best["ours"], seconds(ours))
        best["pyg"] = min(best["pyg"], seconds(theirs))
    return {**best, "ratio": best["ours"] / best["pyg"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--molecules", type=int, default=5000, help="molecules per timed epoch (default 5000)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the GCN comparison (default 3)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    warning = busy_warning()
    if warning:
        print(warning)
    featurise, reload, data = featurise_seconds()
    print(f"featurise all {len(data):,} molecules: {featurise:.1f} s; reload the cache: {reload:.2f} s")
    order = np.random.default_rng(0).permutation(len(data))
    rows = order[: args.molecules]
    hidden = QM9Config().hidden
    held_out = np.sort(order[args.molecules : args.molecules + 20])  # only the training rows are read
    split = MoleculeSplit(np.sort(rows), held_out[:10], held_out[10:])
    prepared = prepare_qm9(data, data.target("gap"), split)
    epochs = {}
    neural = [name for name in QM9_CANDIDATES if name != "fingerprint-gbt"]
    for candidate in qm9_candidates(neural, hidden):
        name = candidate.name
        seconds = epoch_seconds(candidate, prepared)
        epochs[name] = seconds * FULL_TRAIN / len(rows)
        print(
            f"{name:16s} {seconds:7.2f} s per {len(rows):,} molecules -> {epochs[name]:7.1f} s per 110k epoch"
        )
    ratio = gcn_ratio(data, rows[:2000], hidden, args.repeats)
    print(f"GCN forward+backward on 2,000 molecules: ours {ratio['ours']:.3f} s, PyG {ratio['pyg']:.3f} s, "
          f"ours/PyG = {ratio['ratio']:.2f}")  # fmt: skip
    figures = {"featurise_s": featurise, "reload_s": reload, "epoch_110k_s": epochs, "gcn": ratio}
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=2)
    parts = [f"featurise = {featurise:.1f} s", f"reload = {reload:.2f} s"]
    parts += [f"{name} = {s:.0f} s/epoch(110k)" for name, s in epochs.items()]
    print("summary: " + "; ".join(parts) + f"; GCN ours/PyG = {ratio['ratio']:.2f}")


if __name__ == "__main__":
    main()
