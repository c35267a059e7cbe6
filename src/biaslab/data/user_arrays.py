"""Reading a user's arrays: NPZ archives (tables, images, sequences, padded sets; an edge list of
graphs goes to :mod:`biaslab.data.user_graphs`; a folder of images, to :mod:`biaslab.data.user_images`).

The kind of an NPZ's ``x`` is read from its shape (:func:`array_kind`, the rule is in its
docstring); an explicit ``kind`` decides between the shapes two kinds share, and one that no shape
allows is refused in one line. Images come out as (N, C, H, W) float32 in [0, 1]
(:func:`unit_range`).
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from biaslab.data.user_formats import (
    Loaded,
    check_finite,
    check_memory_for,
    either,
    label_array,
    listed,
    numeric_array,
    reason,
    size_text,
    where,
)
from biaslab.data.user_graphs import read_edge_list
from biaslab.errors import BiaslabError, ConfigError, DataFormatError
from biaslab.formatting import quoted

__all__ = [
    "MIN_IMAGE_SIDE",
    "array_kind",
    "channels_first",
    "load_npz_arrays",
    "read_npz",
    "scale_pixels",
    "to_unit_range",
    "unit_range",
]

MIN_IMAGE_SIDE = 8  # a 3-D x is an image only when both its sides are at least this long
CHANNELS = (1, 3, 4)  # grayscale, RGB, RGBA: the channel counts an image axis may have
NPY_MAGIC = b"\x93NUMPY"  # how every .npy file (and no zip) starts
FLOAT32_COPIES = 2  # of x, at most, beside the arrays as stored: pixels scaled, padding zeroed


class _Member(NamedTuple):
    """One ``.npy`` member of an NPZ as its header declares it."""

    name: str  # the array's name: the member's, less ``.npy``
    described: str  # shape and dtype as a message says them: ``100×3 float64``
    count: int  # values
    nbytes: int  # bytes of its data


def load_npz_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of an NPZ file, or one DataFormatError line.

    Guaranteed before any array's data is read: the file is a zip archive of ``.npy`` members (a
    lone ``.npy`` or any other file is refused, with the ``numpy.savez`` call that makes one), no
    member holds Python objects (pickles are never loaded), and the arrays the headers declare,
    with ``FLOAT32_COPIES`` float32 copies of them, fit in memory
    (:func:`~biaslab.data.user_formats.check_memory_for`): a header that claims terabytes
    allocates nothing. A member whose data is shorter than its header says, or any corrupt byte,
    is one line too.
    """
    members = _npy_members(path)
    stored = sum(m.nbytes for m in members.values())
    largest = max(members.values(), key=lambda m: m.nbytes, default=None)
    if largest is not None:
        check_memory_for(
            f"{where(path)} declares arrays of {size_text(stored)} (the largest: {quoted(largest.name)}, "
            f"{largest.described}), so reading them",
            stored + FLOAT32_COPIES * 4 * sum(m.count for m in members.values()),
        )
    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for filename, member in members.items():
                with archive.open(filename) as handle:
                    arrays[member.name] = np.lib.format.read_array(handle, allow_pickle=False)
    except Exception as exc:  # corrupt zip or .npy bytes raise many types (BadZipFile, zlib.error, ...)
        raise DataFormatError(f"{where(path)} cannot be read as an .npz archive ({reason(exc)})") from None
    return arrays


def _npy_members(path: Path) -> dict[str, _Member]:
    """Each member (its file name in the zip) of the NPZ at ``path``, from its ``.npy`` header
    alone (no data read)."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(len(NPY_MAGIC))
        is_zip = zipfile.is_zipfile(path)
    except OSError as exc:
        raise DataFormatError(f"{where(path)} cannot be read ({reason(exc)})") from None
    if start == NPY_MAGIC:
        raise DataFormatError(
            f"{where(path)} is a single .npy array, not an .npz archive; save x and y together: "
            "numpy.savez(path, x=x, y=y)"
        )
    if not is_zip:
        raise DataFormatError(
            f"{where(path)} is not an .npz archive (a zip of .npy arrays); save one with "
            "numpy.savez(path, x=x, y=y)"
        )
    members: dict[str, _Member] = {}
    names: set[str] = set()
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                with archive.open(info) as handle:
                    member = _npy_member(handle, info.filename, path)
                if member.name in names:
                    raise DataFormatError(f"{where(path)} holds two arrays named {quoted(member.name)}")
                names.add(member.name)
                members[info.filename] = member
    except BiaslabError:
        raise
    except Exception as exc:  # corrupt zip bytes raise many types (BadZipFile, zlib.error, ...)
        raise DataFormatError(f"{where(path)} cannot be read as an .npz archive ({reason(exc)})") from None
    return members


def _npy_member(handle, filename: str, path: Path) -> _Member:
    """One ``.npy`` member's header, read from ``handle`` (at its start) without its data."""
    if handle.read(len(NPY_MAGIC)) != NPY_MAGIC:
        raise DataFormatError(f"{where(path)}: member {quoted(filename)} is not a .npy array")
    version = tuple(handle.read(2))
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise DataFormatError(
            f"{where(path)}: member {quoted(filename)} is a .npy of format version {version}; "
            "versions 1.0 and 2.0 are read (numpy.savez writes them for arrays of numbers or text)"
        )
    shape, _, dtype = readers[version](handle)
    described = f"{'×'.join(map(str, shape)) or 'a scalar'} {dtype}"
    if dtype.hasobject:
        raise DataFormatError(
            f"{where(path)} cannot be read as an .npz archive: {quoted(filename)} holds Python objects "
            "(pickles are not loaded); save arrays of numbers or text"
        )
    if any(n < 0 for n in shape):
        raise DataFormatError(
            f"{where(path)}: member {quoted(filename)} declares a shape below 0: {described}"
        )
    count = math.prod(shape)
    return _Member(filename.removesuffix(".npy"), described, count, count * dtype.itemsize)


def read_npz(path: Path, kind: str | None) -> Loaded:
    """An NPZ of arrays ``x``, ``y`` (and ``mask``), or an edge list of graphs.

    Args:
        path: the ``.npz`` file.
        kind: None (inferred: :func:`array_kind`) or the kind to read ``x`` as.

    Returns:
        A table, image, sequence or set (with ``mask``); or graphs when the archive holds
        ``edge_index`` (:func:`~biaslab.data.user_graphs.read_edge_list`).

    Raises:
        DataFormatError: missing arrays, text or non-finite values in ``x``, shapes that do not
            agree, an empty set.
        ConfigError: a kind ``x``'s shape cannot be.
    """
    return read_arrays(load_npz_arrays(path), kind, path)


def read_arrays(arrays: dict[str, np.ndarray], kind: str | None, path: Path) -> Loaded:
    """The arrays of an NPZ (``x``, ``y``, ``mask``; or an edge list) as :func:`read_npz` reads
    them; ``path`` is the name messages give them."""
    if "edge_index" in arrays:
        if kind not in (None, "graph"):
            raise ConfigError(f"kind '{kind}' contradicts {where(path)}: it holds edge_index (graphs)")
        return read_edge_list(arrays, path)
    missing = [k for k in ("x", "y") if k not in arrays]
    if missing:
        found = listed(sorted(arrays))
        raise DataFormatError(
            f"{where(path)} has no array {' or '.join(missing)} (it holds {found}); save inputs as x and "
            "labels as y (numpy.savez(path, x=x, y=y)), or graphs as edge_index, node_graph, x, y"
        )
    x, y, mask = arrays["x"], label_array(arrays["y"], path), arrays.get("mask")
    _same_length(path, ("x", x), ("y", y), ("mask", mask))
    x = numeric_array(x, "x", path)
    notes = []
    ignored = sorted(set(arrays) - {"x", "y", "mask"})
    if ignored:
        notes.append(f"arrays not read: {listed(ignored)}")
    chosen, why = array_kind(x, mask, kind, path)
    _some_values(x, path)
    notes.append(f"kind {chosen}: {why}")
    pixel_range = None
    if chosen == "image":
        x, pixel_range = to_unit_range(channels_first(x, path), notes)
    elif chosen in ("sequence", "set") and x.ndim == 2:
        x = x[:, :, None]  # (N, T) -> (N, T, 1): one feature per step / element
    if chosen == "set" and mask is None:
        mask = np.ones(x.shape[:2], dtype=bool)
        notes.append("no mask: every set is full")
    if mask is not None:
        mask = _mask(mask, x, path)
        x = np.where(mask[:, :, None], x, 0).astype(np.float32)  # padding: zeros, whatever it held
    check_finite(x if mask is None else x[mask], "x", path)
    names = tuple(f"x{j}" for j in range(x.shape[-1])) if chosen != "image" else ()
    return Loaded(
        chosen, x.astype(np.float32, copy=False), y, names, mask=mask, notes=notes, pixel_range=pixel_range
    )


def array_kind(x: np.ndarray, mask: np.ndarray | None, kind: str | None, path: Path) -> tuple[str, str]:
    """The kind of an NPZ's ``x`` (N examples first) and why, as the notes say it.

    The rule, when ``kind`` is None: a ``mask`` makes a set (``x`` (N, S, F) or (N, S)); else
    2-D is a table (N, F); 4-D an image (N, H, W, C) or (N, C, H, W) with C in 1, 3, 4; 3-D
    (N, A, B) is an image (N, H, W) when both A and B are at least ``MIN_IMAGE_SIDE`` and the
    values look like pixels (uint8, or a square grid of values in [0, 1] or whole numbers in
    [0, 255]), and a sequence (N, T, F) otherwise. An explicit ``kind`` decides an ambiguous
    shape (``sequence`` also takes a ``mask``: its padding); one the shape cannot be is refused.

    Raises:
        ConfigError: ``kind`` contradicts ``x``'s shape or the mask.
        DataFormatError: ``x`` has fewer than 2 or more than 4 dimensions, or is 4-D with a mask.
    """
    shape = "×".join(map(str, x.shape))
    if x.ndim not in (2, 3, 4):
        raise DataFormatError(
            f"{where(path)}: x is {shape}; expected (N, F), (N, T, F), (N, H, W) or (N, H, W, C)"
        )
    allowed = {2: ("table", "sequence", "set"), 3: ("image", "sequence", "set"), 4: ("image",)}[x.ndim]
    if mask is not None:
        allowed = tuple(k for k in allowed if k in ("set", "sequence"))
        if not allowed:
            raise DataFormatError(
                f"{where(path)}: x is {shape} with a mask; a mask pads sets or sequences (N, S, F)"
            )
    if kind is not None:
        if kind not in allowed:
            with_mask = " with a mask" if mask is not None else ""
            raise ConfigError(
                f"kind '{kind}' contradicts {where(path)}: x is {shape}{with_mask}, which can be "
                f"{either(allowed)}"
            )
        return kind, f"as given (x is {shape})"
    if mask is not None:
        return "set", f"x is {shape} with a mask: padded sets (pass kind='sequence' for padded sequences)"
    if x.ndim != 3:
        return allowed[0], f"x is {shape}"
    if _looks_like_pixels(x):
        return (
            "image",
            f"x is {shape} of pixel values with sides >= {MIN_IMAGE_SIDE} "
            "(pass kind='sequence' for (N, T, F))",
        )
    return "sequence", f"x is {shape}, read as (N, T, F) (pass kind='image' for (N, H, W) images)"


def _some_values(x: np.ndarray, path: Path) -> None:
    """Refuse an ``x`` of no examples, or whose examples hold no values (an axis after N of 0)."""
    shape = "×".join(map(str, x.shape))
    if 0 in x.shape[1:]:
        raise DataFormatError(
            f"{where(path)}: x is {shape}, which leaves no values in an example; every axis after "
            "the first (N) needs a length of at least 1"
        )
    if len(x) == 0:
        raise DataFormatError(f"{where(path)}: x is {shape}, no examples")


def _looks_like_pixels(x: np.ndarray) -> bool:
    """The 3-D image rule of :func:`array_kind`: sides >= 8, and uint8 or a square grid of pixel values."""
    _, height, width = x.shape
    if min(height, width) < MIN_IMAGE_SIDE:
        return False
    if x.dtype == np.uint8:
        return True
    if height != width or x.dtype.kind not in "biuf" or x.size == 0:
        return False
    low, high = float(np.min(x)), float(np.max(x))
    whole = x.dtype.kind in "biu" or bool(np.all(x == np.round(x)))
    return low >= 0 and (high <= 1 or (high <= 255 and whole))


def channels_first(x: np.ndarray, path: Path) -> np.ndarray:
    """(N, H, W) -> (N, 1, H, W); (N, H, W, C) -> (N, C, H, W); (N, C, H, W) kept (C in 1, 3, 4)."""
    if x.ndim == 3:
        return x[:, None]
    if x.shape[-1] in CHANNELS:
        return np.moveaxis(x, -1, 1)
    if x.shape[1] in CHANNELS:
        return x
    shape = "×".join(map(str, x.shape))
    raise DataFormatError(f"{where(path)}: x is {shape}; an image needs 1, 3 or 4 channels, first or last")


def unit_range(x: np.ndarray, notes: list[str]) -> np.ndarray:
    """Images as float32 in [0, 1] (standardizing is the model's business, on training rows).

    uint8 and whole numbers in [0, 255] are divided by 255; float values already in [0, 1] are
    kept; any other range is scaled by the data set's minimum and maximum (noted).
    """
    return to_unit_range(x, notes)[0]


def to_unit_range(x: np.ndarray, notes: list[str]) -> tuple[np.ndarray, tuple[float, float] | None]:
    """:func:`unit_range`'s images and the rule they took, (low, high): x = (x - low) / (high - low),
    (0, 1) for values kept, (0, 255) for values divided by 255, else the data set's minimum and
    maximum; None when x holds no values or a non-finite one (the caller's check refuses it).
    New images are read by the same rule (:func:`scale_pixels`)."""
    x = np.asarray(x)
    if x.size == 0:
        return x.astype(np.float32), None
    low, high = float(np.min(x)), float(np.max(x))
    if not (np.isfinite(low) and np.isfinite(high)):
        return x.astype(np.float32), None  # the caller's finiteness check names the problem
    if low >= 0 and high <= 1 and x.dtype != np.uint8:
        rule = (0.0, 1.0)
    elif low >= 0 and high <= 255 and (x.dtype.kind in "biu" or np.all(x == np.round(x))):
        notes.append("pixel values 0..255 divided by 255")
        rule = (0.0, 255.0)
    else:
        notes.append(f"pixel values {low:g}..{high:g} scaled to [0, 1] by the data set's minimum and maximum")
        rule = (low, high)
    return scale_pixels(x, rule), rule


def scale_pixels(x: np.ndarray, rule: tuple[float, float]) -> np.ndarray:
    """Pixels as float32 by a rule of :func:`to_unit_range`, (low, high): x = (x - low) / (high - low),
    computed as the training images' were (so the same pixels give the same float32 values)."""
    low, high = rule
    if (low, high) == (0.0, 1.0):
        return np.asarray(x).astype(np.float32)
    if (low, high) == (0.0, 255.0):
        return (x / np.float32(255)).astype(np.float32)
    return ((x - low) / max(high - low, 1e-12)).astype(np.float32)


def _same_length(path: Path, *arrays: tuple[str, np.ndarray | None]) -> None:
    named = [(name, a.shape[0] if a.ndim else 1) for name, a in arrays if a is not None]
    first = named[0]
    for name, n in named[1:]:
        if n != first[1]:
            raise DataFormatError(f"{where(path)}: {first[0]} has {first[1]} examples, {name} has {n}")


def _mask(mask: np.ndarray, x: np.ndarray, path: Path) -> np.ndarray:
    """A padding mask (N, S) of booleans (or 0 / 1) matching x's first two axes; no set empty."""
    if mask.shape != x.shape[:2] or mask.dtype.kind not in "biu" or not np.isin(mask, (0, 1)).all():
        shape = "×".join(map(str, mask.shape))
        raise DataFormatError(
            f"{where(path)}: mask is {shape} {mask.dtype}; expected {x.shape[0]}×{x.shape[1]} of True/False"
        )
    mask = mask.astype(bool)
    empty = np.flatnonzero(~mask.any(axis=1))
    if len(empty):
        raise DataFormatError(
            f"{where(path)}: {len(empty)} examples have an all-False mask (first: {empty[0]})"
        )
    return mask
