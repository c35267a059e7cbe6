"""User-facing errors.

Anything a user can cause by bad input (an unknown name, a wrong value, a missing data package,
a corrupt file) raises a :class:`BiaslabError`. The command line prints its message as one line
on stderr and exits with status 2; Python callers can catch it like any exception.

Its kinds: :class:`ConfigError` (and :class:`OptionError`, a refused run option),
:class:`DataMissingError`, :class:`DataFormatError`, :class:`DataFetchError` (both of those),
:class:`CheckpointError`, :class:`DivergenceError` (whose :meth:`~DivergenceError.at` is the one
divergence message both training loops give), :class:`RunLockedError`, :class:`StorageError` and
:class:`ClusterLostError`. A message names no command: where the run can go on once the cause is
fixed, ``resume`` holds its directory and the command line adds ``continue with: biaslab run
--resume DIR`` (``biaslab.cli.error_line``). :class:`NotFittedError` is not one of them: an
estimator used before ``fit`` is a bug (exit 1), not bad input.
"""

import re
from collections.abc import Mapping


class BiaslabError(Exception):
    """An error caused by input the user can fix; its message is one self-contained line.

    ``resume``: the run directory that continues once the cause is fixed (set where that is
    so). The message names no command: the command line adds its own (``biaslab run --resume
    DIR``), and from Python it is ``biaslab.run(resume=DIR)``.
    """

    resume = None


class ConfigError(BiaslabError):
    """An unknown configuration key or a value of the wrong type."""


class OptionError(ConfigError):
    """A refused run option (:mod:`biaslab.request`). Its message names options by their key in
    braces, ``"{seed} cannot be combined with {resume}"``, and each caller spells them its own
    way (:meth:`spelled`): ``str(error)`` by the argument names of ``biaslab.run`` (``seed``),
    the command line by its flags (``--seed``). A brace of a value in the message is doubled
    (:func:`literal`)."""

    def __init__(self, template: str):
        self.template = template
        super().__init__(self.spelled({}))

    def spelled(self, names: Mapping[str, str]) -> str:
        """The message with each ``{option}`` as ``names`` spells it (default: its key)."""

        def spell(match: re.Match) -> str:
            return match[0][0] if match[1] is None else names.get(match[1], match[1])

        return re.sub(r"\{\{|\}\}|\{(\w+)\}", spell, self.template)


def literal(text: object) -> str:
    """``text`` placed in an :class:`OptionError`'s message as it is (its braces doubled)."""
    return str(text).replace("{", "{{").replace("}", "}}")


class DataMissingError(BiaslabError):
    """A data package is not installed; the message says which pip command installs it."""


class DataFormatError(BiaslabError):
    """A data file is corrupt or not in the expected format."""


class DataFetchError(DataMissingError, DataFormatError):
    """A download the source spoils: more bytes than the file may have (its published size, or
    its cap where none is published), or breaking off too often. Its message names the file and
    the sizes. A :class:`DataMissingError` (the data is still missing) and a
    :class:`DataFormatError` (what was sent is not the published file), as these cases were."""


class CheckpointError(BiaslabError):
    """A checkpoint is corrupt or does not match the run being resumed."""


class DivergenceError(BiaslabError):
    """Training produced a NaN or infinite loss."""

    @classmethod
    def at(cls, tag: str, loss: float, where: str, lr: float, lr_key: str = "lr") -> "DivergenceError":
        """The one message every training loop (PyTorch's and NumPy's) gives when its loss blows up.

        Args:
            tag: the training's name.
            loss: the non-finite loss value.
            where: e.g. ``"epoch 2, step 130"``.
            lr: the learning rate in use.
            lr_key: the config key that sets it, for the hint (default ``"lr"``).
        """
        return cls(
            f"training '{tag}' diverged: loss is {loss} at {where} with learning rate {lr:g}; "
            f"lower it (e.g. {lr_key}={lr / 10:g})"
        )


class RunLockedError(BiaslabError):
    """Another process is writing the run directory."""


class StorageError(BiaslabError):
    """A file could not be written or read: a full disk, a read-only folder, a path in the way.

    ``resume`` is set by the runner to the unfinished run's directory.
    """


class ClusterLostError(BiaslabError):
    """The cluster a run's tasks ran on went away (its raylet or head stopped, a node lost): the
    finished tasks are kept, and ``resume`` is set by the runner to the unfinished run's directory
    (with the cluster back, or with another executor)."""


class NotFittedError(ValueError):
    """An estimator (a calibrator, an OOD detector) was used before ``fit``, as scikit-learn's
    ``NotFittedError``. A ValueError and not a BiaslabError: a lab that does this has a bug."""
