"""What the inputs of a trained comparison look like, saved with it as JSON: :class:`InputSchema`.

``biaslab predict`` reads new rows against it (:func:`~biaslab.data.new_rows.read_new_rows`): a
table's columns by name with each column's :class:`~biaslab.data.table_columns.ColumnSchema`
(numbers, or categories in code order) and whether a cell may be missing; an image's channels,
height and width and the rule its pixels took to [0, 1]; a sequence's steps and features; a set's
size and features and whether it carries a mask; a graph's number of node features.

:meth:`InputSchema.of` makes it from a :class:`~biaslab.data.user_data.UserData`;
:meth:`~InputSchema.as_dict` and :meth:`~InputSchema.from_dict` write and read it (a malformed
dict is one ValueError line).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from biaslab.data.table_columns import ColumnSchema
from biaslab.data.user_arrays import CHANNELS
from biaslab.data.user_data import KINDS, UserData
from biaslab.data.user_formats import listed
from biaslab.formatting import quoted

__all__ = ["InputSchema"]

EXAMPLE_DIMS = {"table": 1, "image": 3, "sequence": 2, "set": 2, "graph": 1, "molecule": 0}


@dataclass(frozen=True)
class InputSchema:
    """What the inputs of a trained comparison look like, as JSON-able data.

    Shapes:
        example_shape: one example's: table (F,), image (C, H, W), sequence (T, F), set (S, F);
            a graph's node features (F,); () for molecules (read from their SMILES).
        feature_names, columns: a table's F columns (x's order) and their
            :class:`~biaslab.data.table_columns.ColumnSchema`; () for other kinds.
        missing_allowed: a table trained with missing cells or categories
            (``UserData.is_raw_table``): new rows may have missing cells.
        masked: sets, and sequences trained with padding, carry a mask.
        pixel_range: images: (low, high), the rule the training pixels took to [0, 1],
            x = (x_given - low) / (high - low); else None.
    """

    kind: str
    example_shape: tuple[int, ...]
    feature_names: tuple[str, ...] = ()
    columns: tuple[ColumnSchema, ...] = ()
    missing_allowed: bool = False
    masked: bool = False
    pixel_range: tuple[float, float] | None = None

    @classmethod
    def of(cls, data: UserData) -> InputSchema:
        """The schema of a data set's inputs (an image set without a recorded rule: (0, 1), the
        range :class:`UserData` holds images in; a table without column schemas: numbers)."""
        if data.kind == "graph":
            return cls("graph", (int(data.graphs[0].x.shape[1]),))
        if data.x is None:
            return cls(data.kind, ())
        shape = tuple(int(n) for n in data.x.shape[1:])
        if data.kind == "table":
            names = tuple(data.feature_names)
            names = names if len(names) == shape[0] else tuple(f"x{j}" for j in range(shape[0]))
            columns = tuple(data.columns) if len(data.columns) == shape[0] else ()
            columns = columns or tuple(ColumnSchema(n, "numbers") for n in names)
            return cls("table", shape, names, columns, missing_allowed=bool(data.is_raw_table))
        if data.kind == "image":
            low, high = data.pixel_range or (0.0, 1.0)
            return cls("image", shape, pixel_range=(float(low), float(high)))
        return cls(data.kind, shape, masked=data.mask is not None)

    def as_dict(self) -> dict:
        """The schema as plain JSON types (:meth:`from_dict` reads it back equal)."""
        columns = [{"name": c.name, "kind": c.kind, "categories": list(c.categories)} for c in self.columns]
        return {
            "kind": self.kind,
            "example_shape": list(self.example_shape),
            "feature_names": list(self.feature_names),
            "columns": columns,
            "missing_allowed": self.missing_allowed,
            "masked": self.masked,
            "pixel_range": None if self.pixel_range is None else list(self.pixel_range),
        }

    @classmethod
    def from_dict(cls, d: dict) -> InputSchema:
        """The schema :meth:`as_dict` wrote.

        Raises:
            ValueError: one line naming a key that is missing, unknown or of the wrong type, or
                saying which of the values disagree with the kind.
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"an input schema is a dict, not {type(d).__name__}")
        unknown = sorted(set(d) - set(cls.__dataclass_fields__))
        if unknown or "kind" not in d or "example_shape" not in d:
            why = f"unknown keys {listed(unknown)}" if unknown else "needs 'kind' and 'example_shape'"
            raise ValueError(f"input schema: {why}")
        flag = lambda v: isinstance(v, bool)  # noqa: E731
        kind = _field(d, "kind", lambda v: v in KINDS, f"one of {', '.join(KINDS)}")
        shape = tuple(_field(d, "example_shape", _positive_ints, "a list of positive integers"))
        names = tuple(_field(d, "feature_names", lambda v: _list_of(v, str), "a list of texts", []))
        columns = _field(d, "columns", _columns_ok, "a list of {name, kind, categories}", [])
        pixels = _field(d, "pixel_range", lambda v: v is None or _range_ok(v), "null or [low, high]", None)
        schema = cls(
            kind,
            shape,
            names,
            tuple(ColumnSchema(c["name"], c["kind"], tuple(c.get("categories", ()))) for c in columns),
            _field(d, "missing_allowed", flag, "true or false", False),
            _field(d, "masked", flag, "true or false", False),
            None if pixels is None else (float(pixels[0]), float(pixels[1])),
        )
        table = kind != "table" or (shape == (len(names),) and tuple(c.name for c in schema.columns) == names)
        image = kind != "image" or (len(shape) == 3 and shape[0] in CHANNELS and pixels is not None)
        if len(shape) != EXAMPLE_DIMS[kind] or not (table and image):
            raise ValueError(f"input schema: example_shape, columns or pixel_range do not fit kind {kind!r}")
        return schema


def _field(d: Mapping, key: str, ok, what: str, *default):
    value = d.get(key, *default)
    if not ok(value):
        raise ValueError(f"input schema: {key!r} must be {what}, not {quoted(value)}")
    return value


def _list_of(value, kind) -> bool:
    if not isinstance(value, (list, tuple)):
        return False
    return all(isinstance(v, kind) and not isinstance(v, bool) for v in value)


def _positive_ints(value) -> bool:
    return _list_of(value, int) and all(n > 0 for n in value)


def _columns_ok(value) -> bool:
    keys, kinds = {"name", "kind", "categories"}, ("numbers", "categories")
    ok = lambda c: set(c) <= keys and isinstance(c.get("name"), str) and c.get("kind") in kinds  # noqa: E731
    return _list_of(value, dict) and all(ok(c) and _list_of(c.get("categories", []), str) for c in value)


def _range_ok(value) -> bool:
    return _list_of(value, (int, float)) and len(value) == 2 and -np.inf < value[0] <= value[1] < np.inf
