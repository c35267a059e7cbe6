"""``biaslab run NAME`` (and a sweep: ``--seeds``, a key given several values) and the options every
run takes (``compare`` takes them too)."""

from __future__ import annotations

import sys
from pathlib import Path

from biaslab.errors import BiaslabError
from biaslab.formatting import printable, shell_quote


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
        "starts (default: every core, the fastest on a quiet machine; a run says in one line when "
        "fewer cores are idle). Recorded in config.json; a seed fixes a run bit for bit for a "
        "given thread count",
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


def run_request_of(args, argv: list[str], overrides: dict[str, str]):
    """The command line's options as one :class:`~biaslab.request.RunRequest` (checked by the
    runner; its messages name options, which :func:`flag_names` spells as flags)."""
    from biaslab.request import RunRequest

    return RunRequest(
        args.name,
        overrides,
        profile=args.profile,
        seed=args.seed,
        out=args.out,
        resume=args.resume,
        runs_dir=args.runs_dir,
        threads=args.threads,
        device=args.device,
        log=args.log,
        # A bar on a terminal; piped to a file, one line per epoch of each training.
        progress=False if args.no_progress else (None if sys.stderr.isatty() else "lines"),
        executor=args.executor,
        workers=args.workers,
        address=args.address,
        command="biaslab " + " ".join(shell_quote(a) for a in argv),
        echo=sys.stdout,
    )


def flag_names(args) -> dict[str, str]:
    """Each run option as this command line gave it (``profile``: ``--quick``), for a message
    that names options (:class:`~biaslab.errors.OptionError`)."""
    from biaslab.request import RUN_OPTIONS

    names = {key: flag for key, flag in RUN_OPTIONS.items() if flag is not None}
    names["overrides"] = "--set"
    if getattr(args, "profile", None) is not None:
        names["profile"] = f"--{args.profile}"
    return names


def cmd_run(args, argv: list[str]) -> int:
    from biaslab.config import parse_set_args
    from biaslab.runner import print_summary, run_request

    overrides = parse_set_args(args.sets)
    if _is_sweep(args, overrides):
        return cmd_sweep(args, argv, overrides)
    request = run_request_of(args, argv, overrides)
    try:
        result = run_request(request)
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
