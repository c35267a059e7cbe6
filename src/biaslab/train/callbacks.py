"""Early stopping and the progress bar."""

from __future__ import annotations

import copy
import math

from torch import nn

from biaslab.train.checkpoint import check_tensors, is_count, is_number, shown

MINIMISED = ("loss", "mae", "mse", "error")  # monitored keys with these endings are errors


class EarlyStopping:
    """Stop when ``monitor`` has not improved for ``patience`` epochs; remember the best weights.

    Keys ending in ``loss``, ``mae``, ``mse`` or ``error`` are minimised, all others (accuracies,
    AUROC) maximised.
    ``patience=0`` never stops but still tracks the best epoch.
    """

    def __init__(self, patience: int = 0, monitor: str = "val_loss", min_delta: float = 0.0):
        self.patience = patience
        self.monitor = monitor
        self.min_delta = min_delta
        self.minimize = monitor.endswith(MINIMISED)
        self.best: float | None = None
        self.best_epoch = 0
        self.bad_epochs = 0
        self.best_state: dict | None = None
        self.stopped_epoch = 0

    def _improved(self, value: float) -> bool:
        if self.best is None:
            return True
        if self.minimize:
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def update(self, record: dict, model: nn.Module, epoch: int) -> bool:
        """Take one epoch's record; return True when training should stop."""
        value = record.get(self.monitor)
        if value is None or not math.isfinite(value):
            return False
        if self._improved(value):
            self.best, self.best_epoch, self.bad_epochs = value, epoch, 0
            if self.patience:
                self.best_state = copy.deepcopy(model.state_dict())
            return False
        self.bad_epochs += 1
        if self.patience and self.bad_epochs >= self.patience:
            self.stopped_epoch = epoch
            return True
        return False

    def state_dict(self) -> dict:
        return {
            "best": self.best,
            "best_epoch": self.best_epoch,
            "bad_epochs": self.bad_epochs,
            "best_state": self.best_state,
            "stopped_epoch": self.stopped_epoch,
        }

    def load_state_dict(self, state: dict, model: nn.Module | None = None) -> None:
        """Restore what :meth:`state_dict` returned; with ``model``, ``best_state`` must fit it.

        A state this object could not have returned (a wrong type, a negative count, best
        weights without a best value, more bad epochs than the patience) is a ValueError naming
        the field, and changes nothing.
        """
        if not isinstance(state, dict):
            raise ValueError(f"early-stopping state {shown(state)}, not a dict")
        missing = [key for key in self.state_dict() if key not in state]
        if missing:
            raise ValueError(f"early-stopping state without {', '.join(missing)}")
        best, best_state = state["best"], state["best_state"]
        counts = {key: state[key] for key in ("best_epoch", "bad_epochs", "stopped_epoch")}
        for key, value in counts.items():
            if not is_count(value):
                raise ValueError(f"{key}={shown(value)}, not a count (an int >= 0)")
        if best is not None and not (is_number(best) and math.isfinite(best)):
            raise ValueError(f"best={shown(best)}, not a finite number or None")
        if best is None and any(counts.values()):
            raise ValueError(f"best=None (nothing seen yet) with {counts}")
        # best weights are kept, with patience, from the first value seen on
        if (best_state is not None) != bool(self.patience and best is not None):
            raise ValueError(
                f"best_state={shown(best_state)} with best={best!r} and patience={self.patience}"
            )
        if best_state is not None:
            check_tensors("best_state", best_state, model.state_dict() if model is not None else None)
        # training stops when bad_epochs reaches the patience, never without it
        bad, stopped = counts["bad_epochs"], counts["stopped_epoch"]
        if (stopped and (not self.patience or bad != self.patience)) or (
            not stopped and self.patience and bad >= self.patience
        ):
            raise ValueError(f"bad_epochs={bad} with stopped_epoch={stopped} and patience={self.patience}")
        self.best, self.best_state = best, best_state
        self.best_epoch, self.bad_epochs, self.stopped_epoch = counts.values()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, initial: int = 0, desc: str = "", enabled: bool = True):
    """A tqdm bar over optimizer steps, or a silent stand-in (CI logs, pipes)."""
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="step", leave=False, dynamic_ncols=True)
