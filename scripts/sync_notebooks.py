"""Copy the workshop notebooks from the package (src/biaslab/notebooks/, what `biaslab notebooks`
installs) to the repository's notebooks/ folder (what GitHub shows and Colab opens).

    python scripts/sync_notebooks.py          # after editing a notebook in src/biaslab/notebooks/
    python scripts/sync_notebooks.py --check  # exit 1 when the two differ (tests/notebooks checks too)
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "biaslab" / "notebooks"
REPOSITORY = ROOT / "notebooks"


def differing() -> list[str]:
    """Names of the package's notebooks whose repository copy is missing or different, and of
    repository notebooks the package no longer has."""
    ours = {p.name for p in PACKAGE.glob("*.ipynb")}
    theirs = {p.name for p in REPOSITORY.glob("*.ipynb")}
    changed = [n for n in ours & theirs if (PACKAGE / n).read_bytes() != (REPOSITORY / n).read_bytes()]
    return sorted((ours ^ theirs) | set(changed))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report differences (exit 1 if any)")
    args = parser.parse_args()
    names = differing()
    if args.check:
        for name in names:
            print(f"notebooks/{name} differs from src/biaslab/notebooks/{name}")
        return 1 if names else 0
    REPOSITORY.mkdir(exist_ok=True)
    for stale in REPOSITORY.glob("*.ipynb"):
        if not (PACKAGE / stale.name).exists():
            stale.unlink()
    for source in sorted(PACKAGE.glob("*.ipynb")):
        shutil.copyfile(source, REPOSITORY / source.name)
    print(f"notebooks/: {len(names)} notebook(s) updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
