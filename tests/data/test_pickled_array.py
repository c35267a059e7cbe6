"""Tests for biaslab.data.ood.read_pickled_array: NumPy pickles read by walking opcodes, never unpickled.

The forged pickles are assembled opcode by opcode (``pickle``'s opcode constants) and use only globals a
NumPy array's pickle names. Read by an unpickler restricted to those globals (the reader before this
one), they crashed the interpreter or returned an array of garbage object pointers; here each must be
one DataFormatError.
"""

import gzip
import importlib.util
import itertools
import pickle
import pickletools
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from biaslab.data import ood, pickled_array
from biaslab.data.pickled_array import read_pickled_array
from biaslab.errors import DataFormatError

# ----------------------------------------------------------------------------- a tiny pickle assembler


def text(s: str) -> bytes:
    """SHORT_BINUNICODE: push the string ``s``."""
    data = s.encode()
    return pickle.SHORT_BINUNICODE + bytes([len(data)]) + data


def integer(n: int) -> bytes:
    """BININT: push the 32-bit integer ``n``."""
    return pickle.BININT + struct.pack("<i", n)


def raw_bytes(data: bytes) -> bytes:
    """BINBYTES: push ``data``."""
    return pickle.BINBYTES + struct.pack("<I", len(data)) + data


def global_(module: str, name: str) -> bytes:
    """STACK_GLOBAL: push the global ``module.name``."""
    return text(module) + text(name) + pickle.STACK_GLOBAL


def dtype_state(endian: str, flags: int) -> bytes:
    """The 8-tuple NumPy's dtype ``BUILD`` takes; ``flags`` 0 for a plain type."""
    return (
        pickle.MARK + integer(3) + text(endian) + pickle.NONE * 3 + integer(-1) + integer(-1) + integer(flags)
    )


def dtype_ops(code: str, endian: str, flags: int = 0) -> bytes:
    """``numpy.dtype(code, False, True)`` rebuilt with its state: what NumPy writes for a dtype."""
    call = global_("numpy", "dtype") + text(code) + pickle.NEWFALSE + pickle.NEWTRUE + pickle.TUPLE3
    return call + pickle.REDUCE + dtype_state(endian, flags) + pickle.TUPLE + pickle.BUILD


def array_ops(dtype: bytes, shape: tuple[int, ...], data: bytes) -> bytes:
    """``_reconstruct(ndarray, (0,), b"b")`` built with ``(1, shape, dtype, False, data)`` (no memo)."""
    new = global_("numpy.core.multiarray", "_reconstruct") + global_("numpy", "ndarray")
    new += integer(0) + pickle.TUPLE1 + raw_bytes(b"b") + pickle.TUPLE3 + pickle.REDUCE
    shape_ops = pickle.MARK + b"".join(integer(size) for size in shape) + pickle.TUPLE
    state = pickle.MARK + integer(1) + shape_ops + dtype + pickle.NEWFALSE + raw_bytes(data) + pickle.TUPLE
    return new + state + pickle.BUILD


def whole(body: bytes) -> bytes:
    """A protocol-4 pickle of ``body``."""
    return pickle.PROTO + b"\x04" + body + pickle.STOP


POINTERS = b"A" * 48  # six 8-byte "object pointers" to 0x4141414141414141


def plain_u8() -> bytes:
    """A well-formed pickle of a (2, 3) uint64 array, built by the assembler."""
    return whole(array_ops(dtype_ops("u8", "<"), (2, 3), POINTERS))


def object_array_then_flags(flags: int) -> bytes:
    """An object array built from raw bytes (its dtype's flags cleared first, so NumPy takes the bytes
    as pointers), then its dtype (memo 0) rebuilt with ``flags``: freeing it decrefs the bytes."""
    array = array_ops(dtype_ops("O", "|", flags=0) + pickle.MEMOIZE, (2, 3), POINTERS)
    rebuild = pickle.BINGET + b"\x00" + dtype_state("|", flags) + pickle.TUPLE + pickle.BUILD + pickle.POP
    return whole(array + rebuild)


FORGED = {
    # the dtype rebuilt with object flags: the old reader raised DataFormatError, then the
    # interpreter died by SIGSEGV freeing the array
    "object-flags-after-build": object_array_then_flags(63),
    "refcount-flag-after-build": object_array_then_flags(1),
    # the same array hidden in a list (``[array]``): the same crash after "holds list"
    "array-in-list": whole(
        pickle.EMPTY_LIST
        + object_array_then_flags(63)[2:-1]  # without PROTO and STOP
        + pickle.APPEND
    ),
    "plain-array-in-list": whole(pickle.EMPTY_LIST + plain_u8()[2:-1] + pickle.APPEND),
    # an object dtype with its flags cleared fools ``dtype.hasobject``: the old reader returned an
    # "object" array whose elements are the pointers 0x4141...
    "object-dtype-flags-cleared": whole(array_ops(dtype_ops("O", "|", flags=0), (2, 3), POINTERS)),
    # a plain dtype built with object flags before the array
    "u8-with-object-flags": whole(array_ops(dtype_ops("u8", "<", flags=63), (2, 3), POINTERS)),
}


def assert_refused(path, match: str = "") -> DataFormatError:
    """``read_pickled_array(path)`` raises one DataFormatError line naming ``path`` (and ``match``)."""
    with pytest.raises(DataFormatError, match=match) as info:
        read_pickled_array(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return info.value


# ----------------------------------------------------------------------------- what is read


def test_assembler_writes_what_numpy_reads(tmp_path):
    """The assembler's plain pickle is a valid one (so the forged ones differ only where they say)."""
    expected = np.frombuffer(POINTERS, "<u8").reshape(2, 3)
    np.testing.assert_array_equal(pickle.loads(plain_u8()), expected)  # our own bytes: safe to load
    (tmp_path / "a.pkl").write_bytes(plain_u8())
    np.testing.assert_array_equal(read_pickled_array(tmp_path / "a.pkl"), expected)


@pytest.mark.skipif(importlib.util.find_spec("animal_mnist") is None, reason="animal-mnist not installed")
def test_real_animal_mnist_reads_as_the_unpickler_read_it():
    path = ood._animal_file()
    expected = pickle.loads(gzip.decompress(path.read_bytes()))  # the genuine file of the pinned package
    images = read_pickled_array(path)
    assert type(images) is np.ndarray and images.dtype == np.uint8 and images.shape == (10000, 28, 28)
    np.testing.assert_array_equal(images, expected)


ROUND_TRIP_ARRAYS = [
    np.zeros((3, 28, 28), np.uint8),
    np.arange(7, dtype=">f8"),
    np.asfortranarray(np.arange(6.0).reshape(2, 3)),
    np.arange(24, dtype="<i2").reshape(2, 3, 4)[:, ::2],  # not contiguous
    np.array(2.5, np.float32),  # zero dimensions
    np.zeros((0, 2), np.int64),  # no items: protocol 2 writes bytes() for the data
    np.array([True, False, True]),
    np.arange(4, dtype=">c16") + 1j,
    np.arange(5, dtype=np.float16),
    np.arange(70_000, dtype=np.uint8),  # framed in several pieces
    np.ones((1,) * 32, ">i4"),
]


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("array", ROUND_TRIP_ARRAYS, ids=lambda a: f"{a.dtype.str}{a.shape}")
def test_numpy_pickles_round_trip(tmp_path, protocol, array):
    path = tmp_path / "a.pkl.gz"
    path.write_bytes(gzip.compress(pickle.dumps(array, protocol=protocol)))
    read = read_pickled_array(path)
    assert type(read) is np.ndarray and read.dtype == array.dtype and read.shape == array.shape
    np.testing.assert_array_equal(read, array)
    assert read.flags.writeable and read.flags.owndata
    if array.flags.f_contiguous and not array.flags.c_contiguous:
        assert read.flags.f_contiguous  # Fortran order is kept


# ----------------------------------------------------------------------------- what is refused


@pytest.mark.parametrize("name", FORGED)
def test_forged_pickles_refused(tmp_path, name):
    path = tmp_path / f"{name}.pkl"
    path.write_bytes(FORGED[name])
    assert_refused(path, "is not a pickled array of plain numbers")


def out_of_band() -> bytes:
    return pickle.dumps(np.arange(4.0), protocol=5, buffer_callback=lambda buffer: False)


@pytest.mark.parametrize(
    "raw, match",
    [
        (pickle.dumps(np.zeros(3, np.uint8)) + b"\x00", "1 bytes after the pickle's end"),
        (whole(array_ops(dtype_ops("u8", "<"), (2, 3), POINTERS[:-1])), "47 data bytes for 6 items"),
        (whole(array_ops(dtype_ops("u8", "<"), (2, -3), b"")), "not a non-negative integer"),
        (whole(array_ops(dtype_ops("u8", "|"), (6,), POINTERS)), "not a plain numeric type"),
        (whole(array_ops(dtype_ops("u1", "<"), (6,), b"\x00" * 6)), "not a plain numeric type"),
        (whole(array_ops(dtype_ops("u3", "<"), (2,), b"\x00" * 6)), "is not a NumPy type"),
        (whole(array_ops(dtype_ops("u8", "="), (6,), POINTERS)), "state other than a plain type's"),
        (pickle.dumps(np.zeros(2, np.uint8), protocol=2).replace(b"latin1", b"utf_8!"), "not NumPy's pickle"),
        (pickle.dumps(np.array(["ab"])), "the dtype 'U2'"),
        (pickle.dumps(np.array([1], "M8[s]")), "the dtype 'M8'"),
        (pickle.dumps(np.array([1, None], dtype=object)), "the opcode EMPTY_LIST"),
        (pickle.dumps(np.zeros(2, "i4,f4")), "the opcode EMPTY_DICT"),
        (pickle.dumps([np.zeros(2)]), "the opcode EMPTY_LIST"),
        (pickle.dumps((np.zeros(2), np.zeros(2))), "not NumPy's pickle of one array"),
        (pickle.dumps(np.zeros(2), protocol=1), "not a pickle of protocol 2 to 5"),
        (pickle.dumps(np.zeros(2), protocol=0), "not a pickle of protocol 2 to 5"),
        (out_of_band(), "the opcode NEXT_BUFFER"),
        (whole(global_("os", "system")), r"refused the global os\.system"),
        (whole(pickle.MARK * 2000), "more than 1000 opcodes"),
        (whole(pickle.BINGET + b"\x07"), "a memo reference 7 to nothing"),
        (whole(integer(1) + integer(2)), "exactly one value"),
        (whole(pickle.TUPLE), "without its MARK"),
        (whole(pickle.REDUCE), "too few items"),
    ],
)
def test_other_pickles_refused(tmp_path, raw, match):
    path = tmp_path / "x.pkl"
    path.write_bytes(raw)
    assert_refused(path, match)


def test_unreadable_files_refused(tmp_path, monkeypatch):
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b not really gzip")
    assert_refused(tmp_path / "bad.gz", "cannot read pickle file")
    assert_refused(tmp_path / "missing.pkl", "cannot read pickle file")
    (tmp_path / "cut.pkl").write_bytes(pickle.dumps(np.zeros(100, np.uint8))[:50])
    assert_refused(tmp_path / "cut.pkl", r"is not a valid pickle \(ValueError: ")
    (tmp_path / "empty.pkl").write_bytes(b"")
    assert_refused(tmp_path / "empty.pkl", "is not a valid pickle")
    (tmp_path / "big.gz").write_bytes(gzip.compress(pickle.dumps(np.zeros(100, np.uint8))))
    monkeypatch.setattr(pickled_array, "MAX_PICKLE_BYTES", 50)
    assert_refused(tmp_path / "big.gz", "holds more than 50 bytes of pickle")


# ----------------------------------------------------------------------------- fuzzing


def opcode_spans(raw: bytes) -> list[bytes]:
    """``raw`` cut into one byte string per opcode (with its argument)."""
    starts = [pos for _, _, pos in pickletools.genops(raw)] + [len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(starts)]


# Opcode snippets with the globals a NumPy pickle names, the dtype codes and states that matter, and
# the containers and stack operations a forger would reach for.
SNIPPETS = [
    global_("numpy.core.multiarray", "_reconstruct"),
    global_("numpy._core.multiarray", "_reconstruct"),
    global_("numpy._core.numeric", "_frombuffer"),
    global_("numpy", "ndarray"),
    global_("numpy", "dtype"),
    global_("_codecs", "encode"),
    pickle.GLOBAL + b"numpy\ndtype\n",
    dtype_ops("u8", "<"),
    dtype_ops("O", "|"),
    dtype_ops("u1", "|", flags=63),
    dtype_state("|", 63) + pickle.TUPLE,
    dtype_state("<", 0) + pickle.TUPLE,
    *(text(s) for s in ("u1", "u8", "f8", "O", "O8", "V8", "<", "|", ">", "b", "C", "F", "latin1")),
    *(integer(n) for n in (-1, 0, 1, 2, 3, 6, 63, 2**31 - 1)),
    pickle.LONG1 + b"\x09" + b"\xff" * 8 + b"\x7f",
    raw_bytes(b"b"),
    raw_bytes(POINTERS),
    raw_bytes(b""),
    pickle.BYTEARRAY8 + struct.pack("<Q", 6) + b"\x01" * 6,
    pickle.NONE,
    pickle.NEWTRUE,
    pickle.NEWFALSE,
    pickle.EMPTY_TUPLE,
    pickle.MARK,
    pickle.TUPLE,
    pickle.TUPLE1,
    pickle.TUPLE2,
    pickle.TUPLE3,
    pickle.REDUCE,
    pickle.BUILD,
    pickle.MEMOIZE,
    *(pickle.BINGET + bytes([k]) for k in range(4)),
    pickle.POP,
    pickle.DUP,
    pickle.EMPTY_LIST,
    pickle.APPEND,
    pickle.APPENDS,
    pickle.EMPTY_DICT,
    pickle.SETITEM,
    pickle.NEWOBJ,
    pickle.STOP,
]

BASES = [pickle.dumps(np.arange(6, dtype=np.uint8).reshape(2, 3), protocol=p) for p in (2, 3, 4, 5)] + [
    plain_u8(),
    *FORGED.values(),
]


@st.composite
def mutated_pickles(draw) -> bytes:
    """A NumPy (or forged) pickle with a few opcodes deleted, duplicated, replaced, swapped or inserted."""
    spans = opcode_spans(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(spans) - 1))
        edit = draw(st.sampled_from(["delete", "duplicate", "replace", "insert", "swap"]))
        if edit == "delete":
            del spans[at]
        elif edit == "duplicate":
            spans.insert(at, spans[at])
        elif edit == "swap":
            other = draw(st.integers(0, len(spans) - 1))
            spans[at], spans[other] = spans[other], spans[at]
        else:
            snippet = draw(st.sampled_from(SNIPPETS))
            spans[at : at + (edit == "replace")] = [snippet]
        if not spans:
            break
    return b"".join(spans)


generated_pickles = st.lists(st.sampled_from(SNIPPETS), max_size=40).map(
    lambda parts: pickle.PROTO + b"\x04" + b"".join(parts) + pickle.STOP
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.one_of(mutated_pickles(), generated_pickles))
def test_fuzzed_pickles_give_a_plain_array_or_one_error(tmp_path, raw):
    path = tmp_path / "fuzz.pkl"
    path.write_bytes(raw)
    try:
        array = read_pickled_array(path)
    except DataFormatError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    assert type(array) is np.ndarray and array.dtype.kind in "biufc" and not array.dtype.hasobject
    assert array.flags.owndata and array.flags.writeable
    array.sum()  # every element is a plain number that can be read
