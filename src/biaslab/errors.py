"""User-facing errors.

Anything a user can cause by bad input (an unknown name, a wrong value, a missing data package,
a corrupt file) raises a :class:`BiaslabError`. The command line prints its message as one line
on stderr and exits with status 2; Python callers can catch it like any exception.
"""


class BiaslabError(Exception):
    """An error caused by input the user can fix; its message is one self-contained line."""


class ConfigError(BiaslabError):
    """An unknown configuration key or a value of the wrong type."""


class DataMissingError(BiaslabError):
    """A data package is not installed; the message says which pip command installs it."""


class DataFormatError(BiaslabError):
    """A data file is corrupt or not in the expected format."""


class CheckpointError(BiaslabError):
    """A checkpoint is corrupt or does not match the run being resumed."""


class DivergenceError(BiaslabError):
    """Training produced a NaN or infinite loss."""
