"""What a run's fits share in one process, cached for the length of the run.

A lab's tasks read the same data and prepare the same split in every process that runs them (the
driver's, each worker's). :func:`run_cache` keeps such a value for the run: ``functools.cache``,
dropped by the runner when a run starts and ends (:func:`clear_run_caches`), so that a
notebook's next run reads its files anew and holds no memory in between.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = ["clear_run_caches", "run_cache"]

_RUN_CACHES: list = []


def run_cache(fn: Callable) -> Callable:
    """``functools.cache`` for the length of one run (the module's docstring)."""
    cached = functools.cache(fn)
    _RUN_CACHES.append(cached)
    return cached


def clear_run_caches() -> None:
    """Drop every run cache's values (the runner, when a run starts and ends)."""
    for cached in _RUN_CACHES:
        cached.cache_clear()
