"""One NumPy array from a pickle file, read without unpickling (Animal-MNIST's file).

A restricted unpickler that admits only NumPy's globals can still be made to crash the interpreter
(a dtype rebuilt with object flags, freed as an object array: SIGSEGV). So the file is never
unpickled: its opcodes are walked with :func:`pickletools.genops`, and what NumPy writes for one array
of plain numbers is recognised and built from the raw bytes with :func:`numpy.frombuffer`.

Only what NumPy writes for one plain bool, integer, float or complex array is accepted (pickle
protocols 2 to 5); anything else, or more than ``MAX_PICKLE_BYTES`` (1 GiB) decompressed, is one
:class:`~biaslab.errors.DataFormatError`. The reader is fuzzed with hypothesis.
"""

from __future__ import annotations

import gzip
import math
import os
import pickletools
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biaslab.errors import DataFormatError

__all__ = ["MAX_PICKLE_BYTES", "read_pickled_array"]

# A pickled ndarray is read by walking its opcodes (pickletools.genops), never by unpickling: no Python
# object is built from the file except ints, strings and bytes, so no forged dtype or array can reach
# NumPy. The walk evaluates a small symbolic stack machine (``_walk_pickle``) and the one value it ends
# with must have exactly the shape NumPy's pickling of one plain ndarray has (``_array_from_value``).
MAX_PICKLE_BYTES = 1 << 30  # a decompressed pickle larger than 1 GiB is refused
_MAX_OPCODES = 1_000  # NumPy's pickle of an array of up to 64 dimensions has fewer than 250
_MAX_DIMS = 64


@dataclass(frozen=True)
class _Global:
    """A global named by the pickle (``GLOBAL`` / ``STACK_GLOBAL``); it is never looked up."""

    module: str
    name: str


@dataclass(frozen=True)
class _Reduce:
    """``REDUCE``: the call ``func(*args)`` the pickle asks for; it is never made."""

    func: object
    args: tuple


@dataclass(frozen=True)
class _Build:
    """``BUILD``: ``obj.__setstate__(state)`` the pickle asks for; it is never made."""

    obj: object
    state: object


class _Mark:
    """The ``MARK`` opcode's place on the stack."""


_RECONSTRUCT = {
    _Global("numpy.core.multiarray", "_reconstruct"),
    _Global("numpy._core.multiarray", "_reconstruct"),
}
_FROMBUFFER = {_Global("numpy.core.numeric", "_frombuffer"), _Global("numpy._core.numeric", "_frombuffer")}
_NDARRAY = _Global("numpy", "ndarray")
_DTYPE = _Global("numpy", "dtype")
_CODECS_ENCODE = _Global("_codecs", "encode")  # protocol 2 writes bytes as encode(str, "latin1")
_BYTES = {_Global("__builtin__", "bytes"), _Global("builtins", "bytes")}  # protocol 2's empty bytes
_KNOWN_GLOBALS = {*_RECONSTRUCT, *_FROMBUFFER, _NDARRAY, _DTYPE, _CODECS_ENCODE, *_BYTES}

_PUSH_ARG = {  # opcodes that push their argument (an int, a str or bytes) as it is
    "BININT", "BININT1", "BININT2", "LONG1",
    "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8",
    "SHORT_BINBYTES", "BINBYTES", "BINBYTES8", "BYTEARRAY8",
}  # fmt: skip
_PUSH_CONST = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False, "EMPTY_TUPLE": ()}
_TUPLE_N = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
_MEMO_PUT = {"BINPUT", "LONG_BINPUT", "MEMOIZE"}
_MEMO_GET = {"BINGET", "LONG_BINGET"}
_IGNORED = {"FRAME"}  # framing only groups the bytes; genops reads through it

# The dtype state NumPy writes for a plain (non-structured, metadata-free) dtype, after the byte order:
# (subarray, names, fields, element size, alignment, flags). Flags 0: the dtype holds no objects.
_PLAIN_DTYPE_STATE = (None, None, None, -1, -1, 0)
_PLAIN_DTYPE_CODE = re.compile(r"[biufc][0-9]{1,2}")  # bool, ints, floats, complex: no objects


class _Refused(Exception):
    """The pickle is not NumPy's pickle of one plain array; the message says why (for DataFormatError)."""


def _is(value: object, options: set[_Global] | _Global) -> bool:
    """Whether ``value`` is the global ``options`` (or one of them)."""
    return type(value) is _Global and (value == options if type(options) is _Global else value in options)


def _pop_to_mark(stack: list) -> list:
    """Pop the items above the topmost ``MARK`` (and the mark); refused if there is none."""
    for index in range(len(stack) - 1, -1, -1):
        if stack[index] is _Mark:
            items = stack[index + 1 :]
            del stack[index:]
            return items
    raise _Refused("a tuple without its MARK")


def _pop(stack: list, n: int) -> list:
    """The top ``n`` items (no marks among them), removed from ``stack``."""
    if len(stack) < n or any(item is _Mark for item in stack[len(stack) - n :]):
        raise _Refused("an opcode finds too few items on the stack")
    items = stack[len(stack) - n :]
    del stack[len(stack) - n :]
    return items


def _global(module: object, name: object) -> _Global:
    """The global ``module.name`` if it is one a NumPy array's pickle names, else refused."""
    if not (isinstance(module, str) and isinstance(name, str)):
        raise _Refused("a global named by something other than two strings")
    found = _Global(module, name)
    if found not in _KNOWN_GLOBALS:
        raise _Refused(f"refused the global {module}.{name} (only a pickled NumPy array is read)")
    return found


def _walk_pickle(raw: bytes) -> object:
    """The value a pickle would produce, as plain ints/strs/bytes/tuples and ``_Global``/``_Reduce``/
    ``_Build`` records; nothing is imported, called or constructed from the file.

    Only the opcodes NumPy's pickle of an array uses (protocols 2 to 5) are known; any other opcode
    (lists, dicts, persistent ids, ...), more than ``_MAX_OPCODES`` opcodes, a stack that does not end
    with exactly one value, or bytes after ``STOP`` is refused.
    """
    stack: list = []
    memo: dict[int, object] = {}
    ops = pickletools.genops(raw)
    for count, (opcode, arg, pos) in enumerate(ops):
        name = opcode.name
        if count >= _MAX_OPCODES:
            raise _Refused(f"more than {_MAX_OPCODES} opcodes")
        if count == 0:
            if name != "PROTO" or not 2 <= arg <= 5:
                raise _Refused("not a pickle of protocol 2 to 5")
        elif name in _IGNORED:
            pass
        elif name in _PUSH_ARG:
            stack.append(bytes(arg) if isinstance(arg, bytearray) else arg)
        elif name in _PUSH_CONST:
            stack.append(_PUSH_CONST[name])
        elif name == "MARK":
            stack.append(_Mark)
        elif name == "TUPLE":
            stack.append(tuple(_pop_to_mark(stack)))
        elif name in _TUPLE_N:
            stack.append(tuple(_pop(stack, _TUPLE_N[name])))
        elif name in _MEMO_PUT:
            (top,) = _pop(stack, 1)
            stack.append(top)
            memo[len(memo) if name == "MEMOIZE" else arg] = top
        elif name in _MEMO_GET:
            if arg not in memo:
                raise _Refused(f"a memo reference {arg} to nothing")
            stack.append(memo[arg])
        elif name == "GLOBAL":
            module, _, attr = arg.partition(" ")
            stack.append(_global(module, attr))
        elif name == "STACK_GLOBAL":
            stack.append(_global(*_pop(stack, 2)))
        elif name == "REDUCE":
            func, args = _pop(stack, 2)
            if not isinstance(args, tuple):
                raise _Refused("REDUCE with arguments that are not a tuple")
            stack.append(_Reduce(func, args))
        elif name == "BUILD":
            stack.append(_Build(*_pop(stack, 2)))
        elif name == "STOP":
            if len(stack) != 1 or stack[0] is _Mark:
                raise _Refused("the pickle does not end with exactly one value")
            if pos + 1 != len(raw):
                raise _Refused(f"{len(raw) - pos - 1} bytes after the pickle's end")
            return stack[0]
        else:
            raise _Refused(f"the opcode {name} (not part of a pickled NumPy array)")
    raise _Refused("the pickle has no STOP")  # genops raises first; kept for a reader's certainty


def _bytes_or_none(value: object) -> bytes | None:
    """Bytes, or protocol 2's ``_codecs.encode(str, "latin1")`` / ``bytes()`` as bytes; else None."""
    if type(value) is bytes:
        return value
    if isinstance(value, _Reduce) and _is(value.func, _CODECS_ENCODE) and len(value.args) == 2:
        text, codec = value.args
        if type(text) is str and type(codec) is str and codec == "latin1" and max(text, default="") <= "\xff":
            return text.encode("latin1")
    if isinstance(value, _Reduce) and _is(value.func, _BYTES) and value.args == ():
        return b""
    return None


def _as_bytes(value: object) -> bytes:
    """The array's raw data (see :func:`_bytes_or_none`); refused if it is anything else."""
    data = _bytes_or_none(value)
    if data is None:
        raise _Refused("array data that is not a byte string")
    return data


def _plain_dtype(value: object) -> np.dtype:
    """The dtype of ``dtype(code, False, True)`` built with NumPy's state for a plain numeric type."""
    if not (isinstance(value, _Build) and isinstance(value.obj, _Reduce) and _is(value.obj.func, _DTYPE)):
        raise _Refused("an array whose dtype is not a pickled numpy.dtype")
    args, state = value.obj.args, value.state
    if not (len(args) == 3 and type(args[0]) is str and args[1] is False and args[2] is True):
        raise _Refused("a dtype pickled with unexpected arguments")
    code = args[0]
    if not _PLAIN_DTYPE_CODE.fullmatch(code):
        raise _Refused(f"the dtype {code!r} (only plain bool, integer, float and complex types are read)")
    if not (
        type(state) is tuple
        and len(state) == 8
        and type(state[0]) is int
        and state[0] == 3
        and state[1] in ("<", ">", "|")
        and all(
            a is b if b is None else (type(a) is int and a == b)
            for a, b in zip(state[2:], _PLAIN_DTYPE_STATE)
        )
    ):
        raise _Refused(f"the dtype {code!r} is rebuilt with a state other than a plain type's")
    try:
        dtype = np.dtype(state[1] + code)
    except (TypeError, ValueError):
        raise _Refused(f"the dtype {state[1] + code!r} is not a NumPy type") from None
    if dtype.kind not in "biufc" or dtype.hasobject or (state[1] == "|") != (dtype.itemsize == 1):
        raise _Refused(f"the dtype {state[1] + code!r} is not a plain numeric type")
    return dtype


def _shape(value: object) -> tuple[int, ...]:
    """A tuple of at most ``_MAX_DIMS`` non-negative ints."""
    if type(value) is not tuple or len(value) > _MAX_DIMS:
        raise _Refused(f"an array shape that is not a tuple of at most {_MAX_DIMS} sizes")
    if not all(type(size) is int and size >= 0 for size in value):
        raise _Refused("an array shape with a size that is not a non-negative integer")
    return value


def _array_from_value(value: object) -> np.ndarray:
    """The array NumPy's pickle ``value`` (from :func:`_walk_pickle`) describes, built from its bytes.

    Two shapes are accepted, the ones NumPy writes: ``ndarray.__reduce__`` (protocols 2 to 5)
    ``_reconstruct(ndarray, (0,), b"b")`` built with ``(1, shape, dtype, fortran, data)``, and
    ``ndarray.__reduce_ex__(5)`` ``_frombuffer(data, dtype, shape, order)`` with in-band data.
    """
    if (
        isinstance(value, _Build)
        and isinstance(value.obj, _Reduce)
        and _is(value.obj.func, _RECONSTRUCT)
        and len(value.obj.args) == 3
        and _is(value.obj.args[0], _NDARRAY)
        and value.obj.args[1] == (0,)
        and type(value.obj.args[1][0]) is int
        and _bytes_or_none(value.obj.args[2]) == b"b"
        and type(value.state) is tuple
        and len(value.state) == 5
        and type(value.state[0]) is int
        and value.state[0] == 1
        and type(value.state[3]) is bool
    ):
        _, shape, dtype, fortran, data = value.state
        order = "F" if fortran else "C"
    elif isinstance(value, _Reduce) and _is(value.func, _FROMBUFFER) and len(value.args) == 4:
        data, dtype, shape, order = value.args
        if type(data) is not bytes or order not in ("C", "F") or type(order) is not str:
            raise _Refused("a protocol-5 array with out-of-band data or an unknown order")
    else:
        raise _Refused("not NumPy's pickle of one array")
    dtype, shape, data = _plain_dtype(dtype), _shape(shape), _as_bytes(data)
    count = math.prod(shape)
    if count * dtype.itemsize != len(data):
        raise _Refused(f"{len(data)} data bytes for {count} items of {dtype.itemsize} bytes {shape}")
    try:  # a size beyond what NumPy can index (with a zero elsewhere) fails here
        array = np.frombuffer(data, dtype=dtype, count=count).reshape(shape, order=order)
    except (ValueError, OverflowError) as exc:
        raise _Refused(f"the shape {shape} ({exc})") from None
    return array.copy(order="K")


def _read_pickle_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if it starts with gzip's magic, at most MAX_PICKLE_BYTES."""
    try:
        with path.open("rb") as file:
            magic = file.read(2)
            file.seek(0)
            reader = gzip.GzipFile(fileobj=file) if magic == b"\x1f\x8b" else file
            raw = reader.read(MAX_PICKLE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise DataFormatError(f"cannot read pickle file {path}: {exc}") from None
    if len(raw) > MAX_PICKLE_BYTES:
        raise DataFormatError(f"{path} holds more than {MAX_PICKLE_BYTES} bytes of pickle, refused")
    return raw


def read_pickled_array(path: str | os.PathLike) -> np.ndarray:
    """Read one NumPy array from a pickle file (gzip-compressed or plain) without unpickling it.

    The pickle's opcodes are walked with :func:`pickletools.genops` and must be what NumPy writes for
    one array of plain numbers (bool, integer, float or complex, either byte order) with pickle
    protocols 2 to 5; the dtype string, shape and raw bytes are taken from them and the array is
    built with :func:`numpy.frombuffer` (a writable copy). No global is looked up and no Python
    object is constructed from the file, so a forged pickle cannot run code or crash the process.

    Raises:
        DataFormatError: (one line, naming the file) the file cannot be read, is larger than
            ``MAX_PICKLE_BYTES`` once decompressed, or is anything but such a pickle: another
            global or opcode, an array inside another object, a dtype with objects or flags, data
            whose length does not match the shape, or bytes after the pickle's end.
    """
    path = Path(path)
    raw = _read_pickle_bytes(path)
    try:
        return _array_from_value(_walk_pickle(raw))
    except _Refused as exc:
        raise DataFormatError(f"{path} is not a pickled array of plain numbers: {exc}") from None
    except Exception as exc:  # what genops raises for a malformed opcode stream (ValueError, ...)
        reason = " ".join(str(exc).split())
        raise DataFormatError(f"{path} is not a valid pickle ({type(exc).__name__}: {reason})") from None
