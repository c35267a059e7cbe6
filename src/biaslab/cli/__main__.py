"""``python -m biaslab.cli``: the console script."""

from biaslab.cli import entry

entry()
