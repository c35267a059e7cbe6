"""Numbers and durations as people read them: one formatting for the terminal and the report.

The report escapes what these return; the terminal prints it as it is.
"""

from __future__ import annotations

import math

__all__ = ["format_duration", "format_value"]


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
