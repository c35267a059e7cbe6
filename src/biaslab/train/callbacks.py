"""Early stopping and the progress bar."""

from __future__ import annotations

import copy
import math

from torch import nn

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

    def load_state_dict(self, state: dict) -> None:
        self.best, self.best_epoch = state["best"], state["best_epoch"]
        self.bad_epochs, self.best_state = state["bad_epochs"], state["best_state"]
        self.stopped_epoch = state["stopped_epoch"]


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
