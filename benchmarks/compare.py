"""Benchmark: biaslab's comparison engine against what a user would pick instead.

    python benchmarks/compare.py [--epochs 60] [--json out.json]

On scikit-learn's shipped data sets (digits as 8x8 images and as a 64-column table, wine; diabetes
for regression) and an MNIST-1D subset (sequences of 40 steps), every candidate the decision guide
offers for the kind is trained under the one protocol (``biaslab.comparison``: a stratified split,
scaling fitted on the training rows, the epoch kept on validation, the test rows read once); the
candidate best on *validation* is biaslab's pick. Beside it, on the same training rows and the
same test rows, the better on test of scikit-learn's ``HistGradientBoosting*`` and ``MLP*`` with
default settings: the reference a user would reach for (favoured: chosen on test).

Printed per data set: biaslab's pick and its test accuracy (or MAE), the reference, the gap (points
of accuracy; % of MAE), whether biaslab's target holds (within 1 point; within 5% of MAE), for
images the CNN's and the MLP's test accuracy, and the seconds the data set took. Figures are of
this one run on this machine; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes, load_digits, load_wine
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.neural_network import MLPClassifier, MLPRegressor

from biaslab.comparison.candidates import candidates_for
from biaslab.comparison.protocol import fit_candidate, prepare
from biaslab.data.mnist1d import mnist1d_splits
from biaslab.data.user_data import load_user_data
from biaslab.hardware import busy_warning
from biaslab.train.config import TrainConfig
from biaslab.train.recipes import TrainSetup


def data_sets(folder: Path) -> dict[str, tuple[Path, dict]]:
    """Each benchmark data set written as a user would bring it: (file, load_user_data options)."""
    digits, wine, diabetes = load_digits(), load_wine(), load_diabetes()
    np.savez(folder / "digits.npz", x=digits.images.astype(np.float32) / 16.0, y=digits.target)
    header = ",".join([*(f"p{i}" for i in range(64)), "digit"])
    np.savetxt(folder / "digits.csv", np.column_stack([digits.data, digits.target]), delimiter=",",
               header=header, comments="", fmt="%g")  # fmt: skip
    for name, bunch in (("wine", wine), ("diabetes", diabetes)):
        header = ",".join([*(f"f{i}" for i in range(bunch.data.shape[1])), "target"])
        np.savetxt(folder / f"{name}.csv", np.column_stack([bunch.data, bunch.target]), delimiter=",",
                   header=header, comments="", fmt="%.10g")  # fmt: skip
    signals = mnist1d_splits(n_val=500, seed=0, n_train=1500)  # a subset: 2,000 signals of 40 steps
    x = np.concatenate([signals.x_train.numpy(), signals.x_val.numpy()])[:, :, None]  # (N, 40, 1)
    y = np.concatenate([signals.y_train.numpy(), signals.y_val.numpy()])
    np.savez(folder / "mnist1d.npz", x=x.astype(np.float32), y=y)
    return {
        "digits (8x8 images)": (folder / "digits.npz", {"kind": "image"}),
        "digits (64-column table)": (folder / "digits.csv", {"target": "digit"}),
        "wine": (folder / "wine.csv", {"target": "target"}),
        "diabetes (regression)": (folder / "diabetes.csv", {"target": "target", "task": "regress"}),
        "MNIST-1D subset (sequences)": (folder / "mnist1d.npz", {"kind": "sequence"}),
    }


def references(prepared, task: str) -> dict[str, float]:
    """scikit-learn's defaults on the same training rows, scored on the same test rows."""
    x_train, _, y_train = prepared.tensors("train")  # y: class indices, or the standardized target
    x_test = prepared.tensors("test")[0]
    x_train, y_train = x_train.reshape(len(x_train), -1).numpy(), y_train.numpy()
    x_test = x_test.reshape(len(x_test), -1).numpy()
    y_test = np.asarray(prepared.targets["test"])
    scores = {}
    if task == "classify":
        for name, model in (("HistGradientBoostingClassifier", HistGradientBoostingClassifier()),
                            ("MLPClassifier", MLPClassifier())):  # fmt: skip
            scores[name] = float((model.fit(x_train, y_train).predict(x_test) == y_test).mean())
    else:
        for name, model in (("HistGradientBoostingRegressor", HistGradientBoostingRegressor()),
                            ("MLPRegressor", MLPRegressor())):  # fmt: skip
            predicted = prepared.to_unit(model.fit(x_train, y_train).predict(x_test))
            scores[name] = float(np.abs(np.asarray(predicted) - y_test).mean())
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=60, help="epochs of each torch candidate")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    warning = busy_warning()
    if warning:
        print(warning)
    config = TrainConfig(epochs=args.epochs, batch_size=32, lr=1e-3)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for title, (path, options) in data_sets(Path(folder)).items():
            start = time.perf_counter()
            data = load_user_data(path, **options)
            prepared = prepare(data, seed=0)
            key = "accuracy" if data.task == "classify" else "mae"
            results = {
                c.name: fit_candidate(c, prepared, data.task, config, TrainSetup(tag=c.name, seed=0))
                for c in candidates_for(data.kind, task=data.task)
            }
            better = max if data.task == "classify" else min
            pick = better(results, key=lambda n: results[n].val[key])  # chosen on validation
            reference = references(prepared, data.task)
            best_reference = better(reference, key=reference.get)
            ours, theirs = results[pick].test[key], reference[best_reference]
            if data.task == "classify":
                gap, holds = 100 * (ours - theirs), ours >= theirs - 0.01
            else:
                gap, holds = 100 * (ours - theirs) / theirs, ours <= 1.05 * theirs
            row = {
                "data": title, "kind": data.kind, "task": data.task, "metric": key, "pick": pick,
                "ours": ours, "reference": best_reference, "theirs": theirs, "gap": gap, "holds": holds,
                "all": {n: r.test[key] for n, r in results.items()},
                "seconds": time.perf_counter() - start,
            }  # fmt: skip
            rows.append(row)
            unit = "points" if key == "accuracy" else "% of MAE"
            every = ", ".join(f"{n} {v:.4f}" for n, v in row["all"].items())
            print(f"{title}: biaslab's pick {pick} {key} {ours:.4f}; {best_reference} {theirs:.4f}; "
                  f"gap {gap:+.2f} {unit}; target {'holds' if holds else 'missed'}; "
                  f"all: {every}; {row['seconds']:.1f} s")  # fmt: skip
    images = next(r for r in rows if r["kind"] == "image")["all"]
    print(f"images: CNN {images['CNN']:.4f} vs MLP {images['MLP']:.4f} "
          f"({'CNN ahead' if images['CNN'] > images['MLP'] else 'CNN not ahead'})")  # fmt: skip
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
