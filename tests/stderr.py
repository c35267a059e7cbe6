"""stderr as a test reads it: a run's progress lines (one per epoch when stderr is not a
terminal, see ``biaslab.train.callbacks.TrainingProgress``) set apart from its messages."""

import re

PROGRESS_LINE = re.compile(r"\S+  epoch \d+/\d+  loss \S+(  \S+ \S+)?  \d+\.\d s")


def message_lines(err: str) -> list[str]:
    """The lines of ``err`` that are not progress lines (an error is one of them, the last)."""
    lines = err.strip().splitlines()
    messages = [line for line in lines if not PROGRESS_LINE.fullmatch(line)]
    assert lines[-len(messages) :] == messages if messages else True, f"progress after a message:\n{err}"
    return messages
