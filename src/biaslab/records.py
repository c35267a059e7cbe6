"""Metrics as data: a measured value with its dimensions, and the words a lab declares for them.

A lab records a metric by what it measures and where::

    ctx.metric("accuracy", 0.878, model="penalty", n=5000, split="turned")

which is one *record* in results.json's ``"records"``::

    {"name": "accuracy", "value": 0.878, "dims": {"model": "penalty", "n": 5000, "split": "turned"},
     "better": "higher", "key": "penalty_n5000_turned_accuracy"}

and, under its flat ``key``, one entry of ``"metrics"`` as before (so nothing that reads the flat
keys breaks). The key is derived from the dimensions by one rule (:func:`metric_key`): each
dimension in the order given, text as it stands and a number after its dimension's name
(``n5000``), then the name. ``better`` says which way the value improves: given with the metric
where its name does not say (a gap, a share), else by :func:`biaslab.better.better`'s rule.

A label is built from a record and words, never parsed back from its key: the measure
(``"accuracy"``) heads it, after the ``split`` (``"turned"``); every other dimension follows
after a comma, a text value as the lab's word for it, a number filling its dimension's template
(``"n = {}"``). A lab declares its words beside its metrics (``WORDS``, given to
:func:`~biaslab.registry.experiment`) as :class:`Term`\\ s; the run writes them into results.json
(``"words"``), so the report reads them there and holds no lab's vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from biaslab.better import Direction
from biaslab.better import better as direction_of

__all__ = [
    "RESERVED",
    "Term",
    "every_record",
    "measure",
    "metric_key",
    "metric_path",
    "param",
    "record",
    "words_from_json",
    "words_to_json",
]

# Keyword arguments of ctx.metric that are not dimensions.
RESERVED = ("better", "key")


class Term(NamedTuple):
    """One term of a label: its words, its kind (``measure``, ``modifier``, ``param`` or ``name``)
    and, for a parameter, the template its number fills (``"ε = {}"``)."""

    text: str
    kind: str = "name"
    template: str = ""


def measure(text: str) -> Term:
    """A measured quantity (heads the label)."""
    return Term(text, "measure")


def param(template: str) -> Term:
    """A parameter whose value fills ``template``: ``param("ε = {}")``; without a number it
    reads as the template's words (``"ε"``)."""
    return Term(template.replace("{}", "").strip(" ="), "param", template)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def metric_key(name: str, dims: Mapping[str, Any]) -> str:
    """The flat key of a record: each dimension in order (text as it stands, a number after its
    dimension's name: ``n=200`` -> ``n200``), then ``name``, joined by ``_``.

    >>> metric_key("accuracy", {"model": "penalty", "n": 200, "split": "turned"})
    'penalty_n200_turned_accuracy'
    """
    parts = [f"{dim}{value}" if _is_number(value) else str(value) for dim, value in dims.items()]
    return "_".join([*parts, name])


def record(name: str, value: Any, dims: Mapping[str, Any], better: Direction | None = None,
           key: str | None = None) -> dict:  # fmt: skip
    """One metric as data (see the module docstring); one line for a malformed one."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a metric's name is text, not {name!r}")
    for dim, dim_value in dims.items():
        if dim in RESERVED:
            raise ValueError(f"'{dim}' names an argument of ctx.metric, not a dimension")
        if not (isinstance(dim_value, str) or _is_number(dim_value)) or (
            isinstance(dim_value, float) and not math.isfinite(dim_value)
        ):
            raise ValueError(
                f"dimension {dim}={dim_value!r} of metric '{name}': give text or a finite number"
            )
    if better not in (None, "lower", "higher"):
        raise ValueError(f"better={better!r}: 'lower' or 'higher'")
    return {
        "name": name,
        "value": value,
        "dims": dict(dims),
        "better": better or direction_of(name),
        "key": key or metric_key(name, dims),
    }


def every_record(metrics: Mapping[str, Any], records: list[dict]) -> list[dict]:
    """Every numeric metric of a run as a record: the ``records`` the lab made, then a record
    without dimensions for each other finite number of ``metrics`` (what the loggers receive)."""
    keyed = {r["key"] for r in records}
    plain = [
        record(key, value, {})
        for key, value in metrics.items()
        if key not in keyed and _is_number(value) and math.isfinite(value)
    ]
    return [r for r in records if _is_number(r["value"]) and math.isfinite(r["value"])] + plain


def metric_path(entry: Mapping) -> str:
    """A record's name for a logger that groups by ``/`` (TensorBoard, MLflow): its name, then
    each dimension as ``dim:value`` (``accuracy/model:penalty/n:5000``); a record without
    dimensions by its key."""
    dims = entry.get("dims") or {}
    if not dims:
        return str(entry["key"])
    return "/".join([str(entry["name"]), *(f"{dim}:{value}" for dim, value in dims.items())])


def words_to_json(words: Mapping[str, Term | str]) -> dict[str, list[str]]:
    """A lab's words as results.json holds them: ``{word: [text, kind, template]}``."""
    return {word: list(term if isinstance(term, Term) else Term(term)) for word, term in words.items()}


def words_from_json(data: Any) -> dict[str, Term]:
    """results.json's ``"words"`` as terms (lowercase words); anything malformed is left out."""
    if not isinstance(data, dict):
        return {}
    terms = {}
    for word, entry in data.items():
        if (
            isinstance(word, str)
            and isinstance(entry, list)
            and len(entry) == 3
            and all(isinstance(part, str) for part in entry)
        ):
            terms[word.lower()] = Term(*entry)
    return terms
