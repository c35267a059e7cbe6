"""Numbers, durations and strings as people read them: one formatting for the terminal and
the report.

The report escapes what these return for HTML. The terminal gets :func:`printable` text (no
control character or bidirectional override reaches it raw: a value or a folder name could
otherwise retitle the window or clear the screen) and commands it may paste quoted by
:func:`shell_quote` (every command a message suggests: ``shlex.quote``, or bash's ``$'...'`` form
for text holding control characters, harmless on screen and exact when pasted).

:func:`format_value` and :func:`format_duration` give the same numbers in the terminal and the
report; :func:`quoted` is the one helper that quotes a bad value in a message (its repr on one
line, escaped, cut by :func:`cut`); :func:`tell` prints a progress line on stderr.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import sys
import unicodedata

__all__ = [
    "cut",
    "format_duration",
    "format_value",
    "parse_duration",
    "printable",
    "quoted",
    "shell_quote",
    "tell",
]

# Format characters that reorder what follows them on screen (bidirectional overrides and
# isolates): shown escaped like control characters, so text reads as it is stored.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) == "Cc" or char in _BIDI_CONTROLS


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text, keep: str = "") -> str:
    """``text`` with every control character (and bidirectional override) written as an escape
    (``\\x1b``, ``\\u202e``); the characters in ``keep`` (e.g. ``"\\n"``) stay as they are."""
    text = str(text)
    if not any(_unsafe(c) for c in text):
        return text
    return "".join(_escaped(c) if _unsafe(c) and c not in keep else c for c in text)


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ``...`` marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def quoted(value, limit: int = 60) -> str:
    """``value`` as a one-line message quotes it (the one helper for a bad value in a message):
    its repr (a text stripped of surrounding blanks first; another value's on one line, runs of
    whitespace as one space), control characters escaped (:func:`printable`), cut to ``limit`` characters."""
    text = repr(value.strip()) if isinstance(value, str) else " ".join(repr(value).split())
    return cut(printable(text), limit)


def tell(line: str) -> None:
    """A line of progress on stderr, escaped (:func:`printable`: a name or path commands no
    terminal) and flushed at once."""
    print(printable(line), file=sys.stderr, flush=True)


def shell_quote(value: str | os.PathLike) -> str:
    """``value`` as one word for a POSIX shell, safe to paste after a suggested command.

    Plain text is quoted as :func:`shlex.quote` does (``'x; touch PWNED'``); text holding
    control characters is written in the ``$'...'`` form of bash and zsh, with the characters
    escaped, so that the command is both harmless on screen and exact when pasted.
    """
    text = os.fspath(value)
    if not any(_unsafe(c) for c in text):
        return shlex.quote(text)
    body = "".join(_escaped(c) if _unsafe(c) else ("\\" + c if c in "\\'" else c) for c in text)
    return f"$'{body}'"


def format_value(v) -> str:
    """Format a JSON value for display.

    Args:
        v: any JSON value: ``None``, bool, int, float, str, list or dict.

    Returns:
        Floats to 4 significant digits (``0.1235``, ``1.235e+06``), ints as digits, ``None``
        as an em dash, bools as ``true``/``false``, lists and dicts as compact JSON-like text.
    """
    if v is None:
        return "\u2014"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {format_value(x)}" for k, x in v.items()) + "}"
    return str(v)


_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|sec|m|min|h)?\s*", re.IGNORECASE)
_UNIT_SECONDS = {None: 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds from a duration as a person writes it: ``"90"`` or ``"90s"``, ``"10m"``,
    ``"1.5h"``; a ValueError saying the form for anything else (or for zero)."""
    found = _DURATION.fullmatch(str(text))
    seconds = float(found[1]) * _UNIT_SECONDS[found[2] and found[2].lower()] if found else 0.0
    if not seconds > 0:
        raise ValueError(f"{text!r} is not a duration: a positive number with s, m or h (90s, 10m, 1.5h)")
    return seconds


def format_duration(seconds) -> str:
    """Format a duration in seconds as ``3.21 s``, ``2 min 05 s`` or ``1 h 03 min``.

    Args:
        seconds: a number of seconds, or ``None``.

    Returns:
        The human-readable duration (an em dash for ``None`` or a non-number).
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return "\u2014"
    if seconds < 60:
        return f"{format_value(float(seconds))} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"
