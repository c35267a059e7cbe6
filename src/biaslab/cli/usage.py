"""The command line's own error: what argparse cannot parse (a leaf module, so every
subcommand's module can raise it without importing the package)."""

from __future__ import annotations

from biaslab.errors import BiaslabError


class UsageError(BiaslabError):
    """A command line argparse cannot parse (an unknown option, a missing value)."""
