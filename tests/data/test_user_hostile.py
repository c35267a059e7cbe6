"""Hostile files given to ``biaslab compare DATA``: each is refused in one line while it is read,
before anything is allocated for it or trained on it (a lone .npy, an NPZ that declares terabytes,
zero features, graphs with edge_index of the wrong type, image headers that claim too many pixels,
and messages that would list thousands of names)."""

import io
import struct
import warnings
import zipfile
import zlib

import numpy as np
import pytest
import torch

import biaslab.config
from biaslab.data import user_images
from biaslab.data.user_data import UserData, load_user_data
from biaslab.data.user_formats import listed
from biaslab.data.user_ood import load_ood_inputs
from biaslab.errors import ConfigError, DataFormatError

N = 24
RNG = np.random.default_rng(0)


def refused(error, call, *words, longest=400):
    """Run ``call`` (every warning an error); expect ``error`` with one short line holding every word."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error) as caught:
            call()
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message, message
    assert len(message) <= longest, message
    for word in words:
        assert word in message, (word, message)
    return message


def npy_member(header: dict, data: bytes = b"") -> bytes:
    """A .npy file's bytes: the header as given, then ``data`` (none: the header may lie)."""
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, header)
    return out.getvalue() + data


def zipped(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def y_member(n=N) -> bytes:
    out = io.BytesIO()
    np.save(out, np.arange(n) % 2)
    return out.getvalue()


# --------------------------------------------------------------------------- NPZ archives


def test_a_lone_npy_named_npz_is_one_line(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((N, 3)))
    (tmp_path / "x.npy").rename(tmp_path / "x.npz")
    refused(DataFormatError, lambda: load_user_data(tmp_path / "x.npz"), "x.npz", ".npy", "numpy.savez")
    (tmp_path / "junk.npz").write_bytes(b"a,b\n1,2\n")
    refused(DataFormatError, lambda: load_user_data(tmp_path / "junk.npz"), "junk.npz", "not an .npz")


def test_a_header_that_claims_terabytes_allocates_nothing(tmp_path):
    header = {"descr": "<f8", "fortran_order": False, "shape": (10**11, 3)}
    path = zipped(tmp_path / "huge.npz", {"x.npy": npy_member(header), "y.npy": y_member()})
    refused(DataFormatError, lambda: load_user_data(path), "huge.npz", "x", "100000000000×3", "memory")
    ood = UserData("table", "classify", np.zeros((N, 3), np.float32), np.arange(N) % 2, classes=(0, 1))
    refused(DataFormatError, lambda: load_ood_inputs(path, ood), "huge.npz", "memory")


def test_the_memory_budget_is_the_free_memory(tmp_path, monkeypatch):
    path = tmp_path / "ok.npz"
    np.savez(path, x=np.zeros((N, 100)), y=np.arange(N) % 2)  # 19 kB of x
    monkeypatch.setattr(biaslab.config, "available_memory", lambda: 10_000, raising=False)
    refused(DataFormatError, lambda: load_user_data(path), "ok.npz", "memory")


def test_lying_or_broken_members_are_one_line(tmp_path):
    short = {"descr": "<f8", "fortran_order": False, "shape": (N, 3)}
    path = zipped(tmp_path / "short.npz", {"x.npy": npy_member(short, b"\0" * 16), "y.npy": y_member()})
    refused(DataFormatError, lambda: load_user_data(path), "short.npz")
    negative = {"descr": "<f8", "fortran_order": False, "shape": (-N, 3)}
    path = zipped(tmp_path / "neg.npz", {"x.npy": npy_member(negative), "y.npy": y_member()})
    refused(DataFormatError, lambda: load_user_data(path), "neg.npz")
    path = zipped(tmp_path / "text.npz", {"x.npy": b"not an array", "y.npy": y_member()})
    refused(DataFormatError, lambda: load_user_data(path), "text.npz", "'x.npy'")


@pytest.mark.parametrize("shape", [(N, 0), (N, 5, 0), (N, 0, 3), (N, 0, 8, 8)])
def test_zero_features_are_refused(tmp_path, shape):
    np.savez(tmp_path / "empty.npz", x=np.zeros(shape), y=np.arange(N) % 2)
    refused(DataFormatError, lambda: load_user_data(tmp_path / "empty.npz"), "empty.npz", "×0", "no values")


# --------------------------------------------------------------------------- graphs


def graphs(**change):
    from torch_geometric.data import Data

    out = [
        Data(x=torch.randn(3, 2), edge_index=torch.tensor([[0, 1], [1, 2]]), y=torch.tensor([i % 2]))
        for i in range(N)
    ]
    for key, value in change.items():
        setattr(out[4], key, value)
    return out


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"edge_index": torch.tensor([[0, 1], [1, 2]], dtype=torch.complex64)}, ("complex64", "integer")),
        ({"edge_index": torch.tensor([[True, False], [False, True]])}, ("bool", "integer")),
        ({"edge_index": torch.tensor([[0.0, 1.0], [1.0, 2.0]])}, ("float32", "integer")),
        ({"edge_index": [[0, 1], [1, 2]]}, ("list", "integer")),
        ({"y": torch.tensor([1 + 2j])}, ("complex", "real")),
        ({"x": torch.zeros(0, 2), "edge_index": torch.zeros(2, 0, dtype=torch.long)}, ("no nodes",)),
        ({"x": torch.zeros(3, 0)}, ("0 node features",)),
    ],
)
def test_bad_graphs_are_one_line(tmp_path, change, words):
    pytest.importorskip("torch_geometric")
    torch.save(graphs(**change), tmp_path / "g.pt")
    refused(DataFormatError, lambda: load_user_data(tmp_path / "g.pt"), "g.pt", "graph 4", *words)


def test_a_graph_file_is_checked_against_the_free_memory_before_loading(tmp_path, monkeypatch):
    pytest.importorskip("torch_geometric")
    torch.save(graphs(), tmp_path / "g.pt")  # a zip: torch.load allocates what its directory declares
    monkeypatch.setattr(biaslab.config, "available_memory", lambda: 1_000, raising=False)
    refused(DataFormatError, lambda: load_user_data(tmp_path / "g.pt"), "g.pt", "unpacks to", "memory")


def test_a_graph_file_in_torchs_legacy_format_is_refused_before_loading(tmp_path):
    """The legacy format declares its storage sizes inside the pickle: no bound before loading."""
    pytest.importorskip("torch_geometric")
    torch.save(graphs(), tmp_path / "g.pt", _use_new_zipfile_serialization=False)
    refused(DataFormatError, lambda: load_user_data(tmp_path / "g.pt"), "g.pt", "zip format", "torch.save")


def test_an_edge_list_of_zero_features_is_one_line(tmp_path):
    pytest.importorskip("torch_geometric")
    np.savez(
        tmp_path / "e.npz",
        edge_index=np.zeros((2, 0), np.int64),
        node_graph=np.arange(N),
        x=np.zeros((N, 0)),
        y=np.arange(N) % 2,
    )
    refused(DataFormatError, lambda: load_user_data(tmp_path / "e.npz"), "e.npz", "0 node features")


# --------------------------------------------------------------------------- image folders


def png_claiming(width: int, height: int) -> bytes:
    """A grayscale PNG whose header claims width×height and whose data is one row (small on disk)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    data = zlib.compress(b"\0" * (width + 1))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


def folder(tmp_path, n=N):
    from PIL import Image

    root = tmp_path / "images"
    for k in range(n):
        (root / f"c{k % 2}").mkdir(parents=True, exist_ok=True)
        Image.fromarray(RNG.integers(0, 256, (10, 12), dtype=np.uint8), "L").save(root / f"c{k % 2}/{k}.png")
    return root


@pytest.mark.parametrize(("width", "height"), [(10_000, 10_000), (20_000, 20_000)])
def test_an_image_header_claiming_too_many_pixels_is_one_line_and_no_warning(tmp_path, width, height):
    pytest.importorskip("PIL")
    root = folder(tmp_path)
    (root / "c0" / "bomb.png").write_bytes(png_claiming(width, height))
    refused(DataFormatError, lambda: load_user_data(root), "bomb.png", "pixels")


def test_the_pixel_limit_and_memory_budget_hold_before_decoding(tmp_path, monkeypatch):
    pytest.importorskip("PIL")
    root = folder(tmp_path)
    monkeypatch.setattr(user_images, "MAX_IMAGE_PIXELS", 100, raising=False)
    refused(DataFormatError, lambda: load_user_data(root), "10×12", "120 pixels", "100")
    monkeypatch.undo()
    monkeypatch.setattr(biaslab.config, "available_memory", lambda: 50_000, raising=False)
    refused(DataFormatError, lambda: load_user_data(root), "images", "memory")
    assert load_user_data(root, image_size=(2, 2)).x.shape == (N, 1, 2, 2)  # resized: fits


def test_other_pillow_warnings_become_a_note_not_output(tmp_path):
    from PIL import Image

    root = folder(tmp_path)
    palette = Image.fromarray(np.zeros((10, 12), np.uint8), "P")
    palette.putpalette([0, 0, 0] * 256)
    palette.save(root / "c1" / "palette.png", transparency=b"\0" * 256)  # Pillow warns on converting it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = load_user_data(root)
    assert data.x.shape == (N + 1, 3, 10, 12)
    assert any(note.startswith("Pillow warned once (first: 'Palette images") for note in data.notes)


# --------------------------------------------------------------------------- long lists


def test_listed_names_a_handful_and_counts_the_rest():
    assert listed([]) == "nothing"
    assert listed(["a"]) == "'a'"
    assert listed("abcdefg", limit=3) == "'a', 'b', 'c' and 4 more"
    assert listed(range(5000), limit=2, shown=str) == "0, 1 and 4,998 more"


def test_messages_listing_thousands_of_names_stay_short(tmp_path):
    many = {f"array{k}": np.zeros(1) for k in range(2000)}
    np.savez(tmp_path / "many.npz", **many)
    refused(DataFormatError, lambda: load_user_data(tmp_path / "many.npz"), "no array x", "1,995 more")
    ood = UserData("table", "classify", np.zeros((N, 3), np.float32), np.arange(N) % 2, classes=(0, 1))
    refused(DataFormatError, lambda: load_ood_inputs(tmp_path / "many.npz", ood), "no array x", "1,995 more")
    header = [f"column{k}" for k in range(2000)] + ["label"]
    rows = [",".join(["1"] * 2000 + [str(i % 2)]) for i in range(N)]
    (tmp_path / "wide.csv").write_text("\n".join([",".join(header), *rows]) + "\n")
    refused(ConfigError, lambda: load_user_data(tmp_path / "wide.csv", target="lable"), "1,996 more")
    arrays = {"x": np.zeros((N, 2)), "y": np.arange(N) % 2, **many}
    np.savez(tmp_path / "extra.npz", **arrays)
    notes = load_user_data(tmp_path / "extra.npz").notes
    assert max(map(len, notes)) < 400 and any("1,995 more" in n for n in notes)


def test_a_table_is_checked_against_the_free_memory_before_it_is_read(tmp_path, monkeypatch):
    """A CSV's cells become Python strings (about 12 bytes per byte of text), a Parquet file's
    columns Arrow's and then NumPy's: both are refused from their size before anything is read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = "\n".join(f"{i * 0.5},{i % 2}" for i in range(N))
    (tmp_path / "t.csv").write_text("a,label\n" + rows + "\n")
    pq.write_table(
        pa.table({"a": np.arange(N, dtype=np.float64), "label": np.arange(N) % 2}), tmp_path / "t.parquet"
    )
    for name in ("t.csv", "t.parquet"):
        assert load_user_data(tmp_path / name, target="label").x.shape == (N, 1)  # enough memory: read
    monkeypatch.setattr(biaslab.config, "available_memory", lambda: 1_000, raising=False)
    for name in ("t.csv", "t.parquet"):
        refused(
            DataFormatError, lambda name=name: load_user_data(tmp_path / name, target="label"), name, "memory"
        )
