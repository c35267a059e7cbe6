"""Early stopping and what a training shows while it runs."""

from __future__ import annotations

import copy
import math
import os
import sys
import time

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


PROGRESS_MODES = (True, False, None, "lines")


class TrainingProgress:
    """What a training shows while it runs, on stderr.

    ``mode``: ``True``, a bar over optimizer steps with the epoch's running loss and the last
    validation figure, left on screen when the training ends; ``"lines"``, one line per epoch
    (tag, epoch, loss, the validation figure, elapsed time), for a log file or a pipe: a long
    run is never silent for longer than an epoch; ``False``, nothing; ``None``, a bar when
    stderr is a terminal (and not in CI), else nothing.
    """

    def __init__(self, mode, total: int, initial: int, tag: str, epochs: int, monitor: str):
        if mode is None:  # (the Trainer has checked mode against PROGRESS_MODES)
            mode = sys.stderr.isatty() and not os.environ.get("CI")
        self.lines, self.tag, self.epochs, self.monitor = mode == "lines", tag, epochs, monitor
        self.start = time.perf_counter()
        self.bar = None
        if mode is True:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, initial=initial, desc=tag, unit="step", dynamic_ncols=True)
        self.postfix: dict[str, str] = {}

    def step(self, running_loss: float) -> None:
        """One optimizer step; ``running_loss``: the mean loss of the epoch so far."""
        if self.bar is not None:
            self.postfix["loss"] = f"{running_loss:.4g}"
            self.bar.set_postfix(self.postfix, refresh=False)
            self.bar.update(1)

    def epoch(self, record: dict) -> None:
        """An epoch's record (after validation)."""
        key = (
            self.monitor
            if self.monitor in record
            else next((k for k in record if k.startswith("val_")), None)
        )
        if self.bar is not None and key is not None:
            self.postfix[key] = f"{record[key]:.4g}"
            self.bar.set_postfix(self.postfix)
        if self.lines:
            figure = f"  {key} {record[key]:.4g}" if key is not None else ""
            elapsed = time.perf_counter() - self.start
            sys.stderr.write(
                f"{self.tag}  epoch {record['epoch']}/{self.epochs}  loss {record['train_loss']:.4g}"
                f"{figure}  {elapsed:.1f} s\n"
            )
            sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
