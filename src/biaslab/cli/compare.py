"""``biaslab compare DATA`` (``biaslab run compare --set data=DATA``, with its own flags) and
``biaslab predict RUN_DIR DATA``."""

from __future__ import annotations

import argparse
import sys

from biaslab.cli.run import add_run_options, cmd_run
from biaslab.cli.usage import UsageError
from biaslab.formatting import printable

COMPARE_HELP = """Compare the architectures whose priors fit your data (the decision guide of Day 4),
and your own models, by one protocol (Day 5): one seeded split, statistics from the training rows
only, the epoch and the temperature chosen on validation, the test rows read once, a learning
curve per candidate. Each gets a verdict (ship, collect more data, redesign) against the
requirements (--set min_accuracy=, max_ece=, max_relative_error=, min_ood_auroc=); the best on
validation is recommended. The data's symmetries (shift, flip, reversal, permutation) are probed:
does the label survive them, which model is invariant to them (--set symmetries=false skips).
Bad data is one line before anything is written.

data:
  a .csv / .tsv / .parquet table (with --target COL), an .npz of x and y (and mask: sets), a
  folder of class subfolders of images, or a demo set shipped with scikit-learn:
  sklearn:digits (8x8 images), sklearn:digits-table, sklearn:wine, sklearn:diabetes (regress);
  graphs: a .pt list of torch-geometric Data or an .npz edge list; molecules: a CSV with a SMILES
  column (--target COL; --set split=scaffold keeps each scaffold in one split)

examples:
  biaslab compare sklearn:digits --quick
  biaslab compare measurements.csv --target yield --task regress
  biaslab compare images/ --models CNN --model my_models.py:make_model --out runs/mine
  biaslab compare sklearn:wine --seeds 0-4     # a leaderboard over five seeds (mean ± std)
  biaslab compare --resume runs/compare-20261121-120000-0
  biaslab predict runs/compare-20261121-120000-0 new_rows.csv --out predictions.csv
"""


def add_compare_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="which prior fits your data: the guide's architectures and yours, one protocol, verdicts",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=COMPARE_HELP,
    )
    p.add_argument("data", nargs="?", metavar="DATA", help="a file, a folder or a demo set (sklearn:digits)")
    p.add_argument("--target", metavar="COL", help="a table's label column")
    p.add_argument("--task", choices=("classify", "regress"), help="default: inferred from the target")
    p.add_argument(
        "--kind",
        choices=("table", "image", "sequence", "set", "graph", "molecule"),
        help="default: inferred from the file and the arrays' shape",
    )
    p.add_argument("--models", metavar="A,B", help="the guide's candidates to keep, comma-separated")
    p.add_argument(
        "--model",
        dest="own_models",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="your own model: factory(input_shape, n_outputs) returns a torch module (of a batch of "
        "examples, or of graphs: see the README); repeatable "
        "(module:factory or path/file.py:factory)",
    )
    p.add_argument(
        "--ood",
        metavar="FILE",
        help="an .npz of inputs the models were not made for (x shaped as DATA's, no labels): each "
        "classifier's OOD AUROC (max softmax probability) joins its verdict",
    )
    p.add_argument(
        "--time-limit",
        metavar="DURATION",
        help="the study's wall-clock budget (90s, 10m, 1h), shared by its trainings: one past its part "
        "stops after that epoch with its best epoch so far, marked 'stopped at the time budget'",
    )
    p.add_argument(
        "--seeds",
        metavar="SEEDS",
        help="compare once per seed (0-4, 0,3,7): each seed its own split and initial weights, one "
        "run folder each, and a leaderboard over the seeds (each figure's mean ± std, how often "
        "each verdict and each pick) in the sweep folder's index.html and sweep-results.json",
    )
    add_run_options(p)


def cmd_compare(args, argv: list[str]) -> int:
    """``biaslab compare DATA ...``: ``biaslab run compare --set data=DATA ...``."""
    given = {
        "data": args.data,
        "target": args.target,
        "task": args.task,
        "kind": args.kind,
        "models": args.models,
        "model": ",".join(args.own_models) or None,
        "ood": args.ood,
        "time_limit": args.time_limit,
    }
    if args.resume is not None:
        named = [f"--{k}" if k != "data" else "DATA" for k, v in given.items() if v is not None]
        if named:
            raise UsageError(f"{', '.join(named)} cannot be combined with --resume (the run keeps its data)")
    elif args.data is None:
        raise UsageError("name the data: a file, a folder or a demo set such as sklearn:digits")
    from biaslab.config import parse_set_args

    also_set = parse_set_args(args.sets)
    for key, value in given.items():
        if value is not None and key in also_set and also_set[key] != value:
            flag = "DATA" if key == "data" else f"--{key}"
            twice = f"{flag} {value!r} and --set {key}={also_set[key]!r}"
            raise UsageError(f"{key} is given two values ({twice}): give it once")
    args.sets = [f"{k}={v}" for k, v in given.items() if v is not None] + args.sets
    args.name = None if args.resume is not None else "compare"
    return cmd_run(args, argv)


PREDICT_HELP = """Predict new rows with a finished comparison's model (the recommended one, or --model NAME),
reading them exactly as the comparison read its data: the same columns (by name; a category the
training rows never held reads as missing), image size and channels, sequence length, set features,
SMILES that parse (molecules: a table with a 'smiles' column).
Data that do not fit are one line and exit 2, with nothing written.

The CSV holds an id (a table's row number, an image's file name, an array's index), the prediction,
and each class's probability after temperature scaling (classify) or the split-conformal interval's
bounds (regress: at least --coverage of new targets inside, for rows like the test rows).

examples:
  biaslab predict runs/compare-20261121-120000-0 new_rows.csv --out predictions.csv
  biaslab predict runs/mine images_to_label/ --model CNN
"""


def add_predict_parser(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="predict new rows with a finished comparison's models",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=PREDICT_HELP,
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the folder of a finished 'biaslab compare' run")
    p.add_argument(
        "data", metavar="DATA", help="new rows: a table (molecules: with a smiles column), an .npz, images"
    )
    p.add_argument(
        "--model", metavar="NAME", help="a candidate of the leaderboard (default: the recommended)"
    )
    p.add_argument("--out", metavar="FILE", help="write the CSV here (default: standard output)")
    p.add_argument(
        "--coverage",
        type=float,
        default=0.9,
        metavar="P",
        help="regress: the intervals' coverage (default 0.9)",
    )


def cmd_predict(args) -> None:
    """``biaslab predict RUN_DIR DATA``: the CSV to --out (or stdout), one summary line on stderr."""
    from biaslab.comparison.study import Comparison
    from biaslab.fileio import atomic_write_text

    found = Comparison.load(args.run_dir).predictions(args.data, args.model, args.coverage)
    text = found.csv_text()
    if args.out:
        atomic_write_text(args.out, text)
    else:
        sys.stdout.write(text)
    where = f"; written to {args.out}" if args.out else ""
    print(f"biaslab: {printable(found.summary())}{where}", file=sys.stderr)
