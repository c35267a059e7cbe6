"""Benchmark: biaslab's pick against scikit-learn's HistGradientBoosting tuned in the same wall time.

    python benchmarks/compare.py [--profile default|quick] [--quick] [--only NAME ...] [--threads N]
                                 [--seeds N] [--json out.json]

For each data set, in one run on this machine: biaslab's side goes through the public user path,
``biaslab.compare(data, target=..., profile=PROFILE, overrides={"symmetries": False})``, timed
from call to return (the time to a verdict); its figure is the *recommended* candidate's test
accuracy (classify) or test MAE (regress). The reference is scikit-learn's
``HistGradientBoosting*`` tuned by random search on the same split (compare's, reproduced with
``biaslab.comparison.protocol.prepare`` and compare's split seed): hyper-parameters drawn from a
seeded generator (learning_rate log-uniform 0.01-0.3, max_leaf_nodes 8-64, min_samples_leaf
5-50, l2_regularization log-uniform 1e-4-1, max_iter 100-500), each fitted on the training rows
and scored on the validation rows (accuracy, ties broken by log-loss; or MAE), the best on
validation kept, until biaslab's seconds on that data set are spent (a configuration whose fit
ends past them is not counted, except the first); that model, not refitted, is scored once on
the test rows. The trees read a raw table as it is (NaN where missing, categories as codes with
``categorical_features``); images as their 64 pixels. Both sides compute on the same threads
(``--threads``, default every core: biaslab's default; the search under ``threadpoolctl``). On a
busy machine give fewer: scikit-learn's OpenMP threads then wait on each other (one fit of the
trees on breast cancer measured 0.25 s on one thread and 2 to 180 s on two beside a test suite).

Data sets (``--only`` takes the short name): ``digits-images`` (sklearn:digits, 8x8 images),
``digits-table`` (sklearn:digits-table, 64 columns), ``wine`` (sklearn:wine), ``diabetes``
(sklearn:diabetes, regression), ``breast-cancer`` (``load_breast_cancer()`` written as a CSV with a
``diagnosis`` column) and ``messy-table`` (the same rows as a real table: ~10% of the cells of 8
numeric columns left empty, two columns binned into low/medium/high text, a sample ID column that
biaslab drops).

One split's test rows are few (86 for breast cancer: one row is 1.16 points of accuracy), so one
run's gap is mostly which rows fell into the test split. ``--seeds N`` measures every data set on
N splits (compare's seeds 0 to N - 1, the search on the same split each time) and judges the target
on the mean test scores, the mean gap given with its standard error.

Printed per data set: biaslab's pick and its test score, the search's test score and the
configurations it tried, the gap (points of accuracy; % of MAE), whether biaslab's target holds
(tables: within 1 point of accuracy, or within 5% of the MAE; images: ahead), and the seconds of
each side; then the time to a verdict on sklearn:digits against biaslab's target of 60 s. Figures
are of this one run on this machine; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.metrics import log_loss
from threadpoolctl import threadpool_limits

import biaslab
from biaslab.comparison.candidates import slug
from biaslab.comparison.protocol import prepare
from biaslab.data.demo_sets import load_data
from biaslab.hardware import available_cores, busy_warning
from biaslab.train.seed import derive_seed

VERDICT_TARGET_S = 60.0  # biaslab's target: a verdict on sklearn:digits within a minute
ACCURACY_POINTS = 1.0  # tables: within 1 point of accuracy of the tuned trees
MAE_PERCENT = 5.0  # regression: within 5% of their MAE


@dataclass(frozen=True)
class DataSet:
    name: str  # what --only takes
    title: str  # what the output names
    source: str  # a demo set or a file written in the temporary folder
    target: str | None = None
    image: bool = False  # the target: ahead of the trees, not within a point


def write_csv(path: Path, columns: dict[str, list]) -> None:
    """Columns as a CSV: NaN (or None) as an empty cell, numbers to 10 significant digits."""

    def cell(value) -> str:
        if isinstance(value, float):
            return "" if np.isnan(value) else f"{value:.10g}"
        return "" if value is None else str(value)

    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        writer.writerows([cell(v) for v in row] for row in zip(*columns.values()))


def data_sets(folder: Path) -> list[DataSet]:
    """The benchmark's data sets, the two breast-cancer tables written as a user would bring them."""
    bunch = load_breast_cancer()
    diagnosis = [str(bunch.target_names[t]) for t in bunch.target]
    clean = {name: [float(v) for v in bunch.data[:, j]] for j, name in enumerate(bunch.feature_names)}
    write_csv(folder / "breast_cancer.csv", {**clean, "diagnosis": diagnosis})

    # A real table: blanks, text categories, an ID. Seeded, so every run measures the same file.
    rng = np.random.default_rng(0)
    messy: dict[str, list] = {"sample_id": [f"S{i:05d}" for i in rng.permutation(len(diagnosis)) + 1]}
    binned = {"mean texture", "worst concavity"}
    blanked = {"mean radius", "mean smoothness", "mean compactness", "mean symmetry",
               "radius error", "worst area", "worst smoothness", "worst fractal dimension"}  # fmt: skip
    for name, values in clean.items():
        column = np.asarray(values)
        if name in binned:
            low, high = np.quantile(column, [1 / 3, 2 / 3])
            messy[name] = ["low" if v <= low else "medium" if v <= high else "high" for v in column]
        elif name in blanked:
            missing = rng.random(len(column)) < 0.1
            messy[name] = [float("nan") if m else float(v) for v, m in zip(column, missing)]
        else:
            messy[name] = [float(v) for v in column]
    write_csv(folder / "messy_table.csv", {**messy, "diagnosis": diagnosis})
    return [
        DataSet("digits-images", "sklearn:digits (8x8 images)", "sklearn:digits", image=True),
        DataSet("digits-table", "sklearn:digits-table (64 columns)", "sklearn:digits-table"),
        DataSet("wine", "sklearn:wine", "sklearn:wine"),
        DataSet("diabetes", "sklearn:diabetes (regression)", "sklearn:diabetes"),
        DataSet("breast-cancer", "breast cancer (CSV)", str(folder / "breast_cancer.csv"), "diagnosis"),
        DataSet("messy-table", "breast cancer, messy (blanks, text, ID)", str(folder / "messy_table.csv"),
                "diagnosis"),
    ]  # fmt: skip


def draw(rng: np.random.Generator) -> dict:
    """One random-search configuration."""
    return {
        "learning_rate": float(np.exp(rng.uniform(np.log(0.01), np.log(0.3)))),
        "max_leaf_nodes": int(rng.integers(8, 65)),
        "min_samples_leaf": int(rng.integers(5, 51)),
        "l2_regularization": float(np.exp(rng.uniform(np.log(1e-4), np.log(1.0)))),
        "max_iter": int(rng.integers(100, 501)),
    }


def random_search(data, prepared, seconds: float, seed: int) -> dict:
    """HistGradientBoosting tuned by random search on compare's split within ``seconds`` of wall
    time: the best on validation, scored once on the test rows."""
    x = data.x.reshape(len(data.x), -1).astype(np.float64)  # NaN where missing, categories as codes
    categorical = data.categorical if data.categorical.any() else None
    rows, targets = prepared.rows, prepared.targets  # class indices, or the target in its unit
    classify = data.task == "classify"
    model_class = HistGradientBoostingClassifier if classify else HistGradientBoostingRegressor
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    best, best_key, best_params, tried = None, None, None, 0
    while True:
        params = draw(rng)
        model = model_class(**params, categorical_features=categorical, random_state=0)
        model.fit(x[rows["train"]], targets["train"])
        x_val, y_val = x[rows["val"]], targets["val"]
        if classify:
            proba = model.predict_proba(x_val)
            accuracy = float((model.classes_[proba.argmax(1)] == y_val).mean())
            key = (accuracy, -log_loss(y_val, proba, labels=model.classes_))  # higher is better
        else:
            key = (-float(np.abs(model.predict(x_val) - y_val).mean()),)
        if tried and time.perf_counter() - start > seconds:
            break  # this one ended past the budget: not counted
        tried += 1
        if best_key is None or key > best_key:
            best, best_key, best_params = model, key, params
        if time.perf_counter() - start >= seconds:
            break
    predicted = best.predict(x[rows["test"]])
    if classify:
        score = float((predicted == targets["test"]).mean())
    else:
        score = float(np.abs(predicted - targets["test"]).mean())
    return {"test": score, "configs": tried, "params": best_params, "seconds": time.perf_counter() - start}


def judge(metric: str, image: bool, ours: float, theirs: float) -> tuple[float, bool]:
    """The gap (points of accuracy, or % of the search's MAE; positive: biaslab ahead in accuracy,
    behind in MAE) and whether biaslab's target holds on it."""
    if metric == "accuracy":
        gap = 100 * (ours - theirs)
        return gap, (gap > 0 if image else gap >= -ACCURACY_POINTS)
    gap = 100 * (ours - theirs) / theirs
    return gap, gap <= MAE_PERCENT


def over_seeds(rows: list[dict]) -> dict:
    """One data set's rows over several seeds (splits): the mean of each side's test score, the
    mean gap with its standard error (std / sqrt(seeds)), and the target judged on the means."""
    ours = float(np.mean([r["ours"] for r in rows]))
    theirs = float(np.mean([r["theirs"] for r in rows]))
    gaps = np.array([r["gap"] for r in rows])
    gap, holds = judge(rows[0]["metric"], rows[0]["kind"] == "image", ours, theirs)
    picks = sorted({str(r["pick"]) for r in rows})
    error = float(gaps.std(ddof=1) / np.sqrt(len(gaps))) if len(gaps) > 1 else float("nan")
    return {**rows[0], "pick": ", ".join(picks), "ours": ours, "theirs": theirs, "gap": gap,
            "gap_error": error, "holds": bool(holds), "seeds": len(rows),
            "configs": int(np.mean([r["configs"] for r in rows])),
            "seconds": float(np.mean([r["seconds"] for r in rows])),
            "search_seconds": float(np.mean([r["search_seconds"] for r in rows]))}  # fmt: skip


def measure(spec: DataSet, profile: str, threads: int, folder: Path, seed: int = 0) -> dict:
    """biaslab's verdict on one data set with ``seed`` (which fixes compare's split), timed, then
    the random search in the same seconds on the same split."""
    start = time.perf_counter()
    found = biaslab.compare(
        spec.source, target=spec.target, profile=profile, out=folder / f"{spec.name}-{seed}",
        progress=False, seed=seed, threads=threads, overrides={"symmetries": False},
    )  # fmt: skip
    seconds = time.perf_counter() - start
    data = load_data(spec.source, target=spec.target)
    prepared = prepare(data, seed=derive_seed(seed, "compare", "split"))  # compare's split
    if not np.allclose(found.scaling.x_mean, prepared.x_mean):
        raise SystemExit(f"{spec.title}: the reproduced split differs from compare's (training means differ)")
    metric = "accuracy" if data.task == "classify" else "mae"
    pick = found.recommended
    ours = found.metrics.get(f"{slug(pick)}_test_{metric}", float("nan")) if pick else float("nan")
    with threadpool_limits(limits=threads):
        search = random_search(data, prepared, seconds, seed=derive_seed(seed, "benchmark", spec.name))
    theirs = search["test"]
    gap, holds = judge(metric, spec.image, ours, theirs)
    return {
        "data": spec.title, "name": spec.name, "source": Path(spec.source).name, "kind": data.kind,
        "task": data.task, "metric": metric, "pick": pick, "ours": ours, "theirs": theirs,
        "configs": search["configs"], "search_params": search["params"], "gap": gap,
        "holds": bool(holds), "seconds": seconds, "search_seconds": search["seconds"], "seed": seed,
        "rows": {name: len(r) for name, r in prepared.rows.items()},
        "leaderboard": list(found.leaderboard()),
    }  # fmt: skip


def target_words(row: dict) -> str:
    if row["kind"] == "image":
        return "ahead"
    if row["metric"] == "accuracy":
        return f"within {ACCURACY_POINTS:g} point"
    return f"within {MAE_PERCENT:g}% of MAE"


def print_table(rows: list[dict]) -> None:
    header = ["data", "biaslab's pick", "biaslab test", "HGB search test (configs)", "gap",
              "biaslab's target", "biaslab s", "search s"]  # fmt: skip
    lines = []
    for r in rows:
        unit = "points" if r["metric"] == "accuracy" else "% of MAE"
        error = f" ± {r['gap_error']:.2f}" if r.get("seeds", 1) > 1 else ""
        lines.append([
            r["data"], str(r["pick"]), f"{r['metric']} {r['ours']:.4f}",
            f"{r['theirs']:.4f} ({r['configs']})", f"{r['gap']:+.2f}{error} {unit}",
            f"{target_words(r)}: {'holds' if r['holds'] else 'missed'}",
            f"{r['seconds']:.1f}", f"{r['search_seconds']:.1f}",
        ])  # fmt: skip
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    for line in [header, ["-" * w for w in widths], *lines]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=("default", "quick"), default="default",
                        help="biaslab compare's profile (default: default)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="shorthand for --profile quick")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="measure only this data set (repeatable): digits-images, digits-table, "
                        "wine, diabetes, breast-cancer, messy-table")  # fmt: skip
    parser.add_argument("--threads", type=int, default=available_cores(),
                        help="threads of both sides (default: every core, %(default)s here)")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=1,
                        help="measure each data set on this many splits (compare's seeds 0..N-1, "
                        "the search on the same split) and judge the target on the means "
                        "(default 1: seed 0 alone)")  # fmt: skip
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    profile = "quick" if args.quick else args.profile
    if args.threads < 1:
        parser.error(f"--threads {args.threads}: give 1 or more")
    if args.seeds < 1:
        parser.error(f"--seeds {args.seeds}: give 1 or more")
    warning = busy_warning()
    if warning:
        print(warning)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        specs = data_sets(folder)
        known = {s.name for s in specs}
        unknown = [n for n in args.only or () if n not in known]
        if unknown:
            parser.error(f"--only {unknown[0]}: not a data set here; choose from {', '.join(sorted(known))}")
        for spec in specs:
            if args.only and spec.name not in args.only:
                continue
            for seed in range(args.seeds):
                row = measure(spec, profile, args.threads, folder, seed)
                rows.append(row)
                print(f"{row['data']}, seed {seed}: biaslab's pick {row['pick']} {row['metric']} "
                      f"{row['ours']:.4f} in {row['seconds']:.1f} s; HGB random search "
                      f"{row['theirs']:.4f} ({row['configs']} configs, {row['search_seconds']:.1f} s)",
                      flush=True)  # fmt: skip
    threads = f"{args.threads} thread{'s' if args.threads > 1 else ''}"
    print(f"\nprofile {profile}, {threads} each; biaslab: the recommended candidate's "
          "test score; HGB: random search in the same wall time, best on validation, "
          "read once on test")  # fmt: skip
    first = [r for r in rows if r["seed"] == 0]
    print_table(first)
    if args.seeds > 1:
        names = list(dict.fromkeys(r["name"] for r in rows))
        print(f"\nover {args.seeds} splits (seeds 0-{args.seeds - 1}): the means of the test scores, "
              "the mean gap ± its standard error, the target judged on the means")  # fmt: skip
        print_table([over_seeds([r for r in rows if r["name"] == name]) for name in names])
    digits = next((r for r in first if r["name"] == "digits-images"), None)
    if digits is not None:
        holds = "holds" if digits["seconds"] <= VERDICT_TARGET_S else "missed"
        print(f"time to a verdict on sklearn:digits (profile {profile}): {digits['seconds']:.1f} s; "
              f"biaslab's target: at most {VERDICT_TARGET_S:.0f} s: {holds}")  # fmt: skip
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        figures = {"profile": profile, "threads": args.threads, "seeds": args.seeds,
                   "load_average": os.getloadavg(), "rows": rows}  # fmt: skip
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
