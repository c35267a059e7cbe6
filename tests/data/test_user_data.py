"""A user's own data: every format loads to the right kind, task, shapes and labels, and bad data
is refused in one line naming the file, the column or array, and the problem."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from biaslab.data.user_data import MAX_CLASSES, load_user_data
from biaslab.errors import ConfigError, DataFormatError, DataMissingError

RNG = np.random.default_rng(0)
N = 24


def refused(error, call, *words):
    """Run ``call``, expect ``error`` with a one-line message holding every word; the message."""
    with pytest.raises(error) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message, message
    for word in words:
        assert word in message, (word, message)
    assert "issue" not in message.lower()
    return message


def write_csv(path, header, rows, sep=","):
    lines = [sep.join(header)] + [sep.join(str(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def table(tmp_path, labels=None, name="data.csv", **columns):
    """A CSV of N rows: columns a, b (numbers) and label (default: cat/dog/eel), overridable."""
    labels = [("cat", "dog", "eel")[i % 3] for i in range(N)] if labels is None else labels
    cols = {"a": RNG.normal(size=N).round(3), "b": 2 * np.arange(N), **columns, "label": labels}
    return write_csv(tmp_path / name, list(cols), zip(*cols.values(), strict=True))


# --------------------------------------------------------------------------- tables


def test_a_csv_table_loads_as_float32_features_and_encoded_labels(tmp_path):
    data = load_user_data(table(tmp_path), target="label")
    assert (data.kind, data.task) == ("table", "classify")
    assert data.x.shape == (N, 2) and data.x.dtype == np.float32
    assert data.y.dtype == np.int64 and data.y[:4].tolist() == [0, 1, 2, 0]
    assert data.classes == ("cat", "dog", "eel") and data.n_classes == 3
    assert data.feature_names == ("a", "b")
    assert data.mask is None and data.graphs is None and data.smiles is None
    assert data.summary() == "table: 24 rows × 2 features, classify into 3 classes"
    assert any(n.startswith("kind table") for n in data.notes)
    assert "task classify: the target holds text" in data.notes


def test_numeric_classes_sort_by_value_and_keep_their_order_when_rows_are_shuffled(tmp_path):
    labels = [(10, 2, 3)[i % 3] for i in range(N)]
    data = load_user_data(table(tmp_path, labels), target="label")
    assert data.classes == (2, 3, 10) and isinstance(data.classes[0], int)
    assert data.y[:3].tolist() == [2, 0, 1]
    shuffled = load_user_data(table(tmp_path, labels[::-1], name="rev.csv"), target="label")
    assert shuffled.classes == data.classes


def test_task_inference_and_override(tmp_path):
    whole = table(tmp_path, [i % 4 for i in range(N)], name="whole.csv")
    assert load_user_data(whole, target="label").task == "classify"
    regressed = load_user_data(whole, target="label", task="regress")
    assert regressed.task == "regress" and regressed.y.dtype == np.float32 and regressed.classes == ()
    assert "task regress: as given" in regressed.notes

    fractional = table(tmp_path, RNG.normal(size=N).round(2), name="frac.csv")
    data = load_user_data(fractional, target="label")
    assert data.task == "regress" and data.y.dtype == np.float32
    assert any("fractional" in n and "task='classify'" in n for n in data.notes)

    many = tmp_path / "many.csv"
    write_csv(many, ["a", "label"], [(i, i) for i in range(MAX_CLASSES + 1)])
    assert load_user_data(many, target="label").task == "regress"
    assert load_user_data(many, target="label", task="classify").n_classes == MAX_CLASSES + 1


def test_semicolon_and_tab_separated_tables(tmp_path):
    rows = [(i, i % 2) for i in range(N)]
    semi = load_user_data(write_csv(tmp_path / "s.csv", ["a", "label"], rows, ";"), target="label")
    tsv = load_user_data(write_csv(tmp_path / "t.tsv", ["a", "label"], rows, "\t"), target="label")
    assert semi.x.shape == tsv.x.shape == (N, 1)


def test_parquet_table(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": np.arange(N, dtype=float), "label": [i % 2 for i in range(N)]}), path)
    data = load_user_data(path, target="label")
    assert data.kind == "table" and data.x.shape == (N, 1) and data.classes == (0, 1)


def test_parquet_columns_keep_their_types(tmp_path, monkeypatch):
    """pyarrow's typed columns (a stand-in module where pyarrow is not installed): numbers as
    they are, text with None for nulls; rows named "row N"."""
    import types

    columns = {
        "n": np.arange(N, dtype=np.int64),
        "c": np.array([1.5] * 5 + ["x"] + [2.0] * (N - 6), dtype=object),
        "label": np.array([("a", "b")[i % 2] for i in range(N)], dtype=object),
    }

    def read_table(path):
        arrays = list(columns.values())
        column = lambda j: types.SimpleNamespace(to_numpy=lambda: arrays[j])
        return types.SimpleNamespace(column_names=list(columns), column=column)

    footer = types.SimpleNamespace(metadata=types.SimpleNamespace(num_row_groups=0))  # sizes: none
    parquet = types.SimpleNamespace(read_table=read_table, ParquetFile=lambda path: footer)
    monkeypatch.setitem(sys.modules, "pyarrow", types.SimpleNamespace(parquet=parquet))
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", parquet)
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1")
    refused(DataFormatError, lambda: load_user_data(path, target="label"), "column 'c'", "row 6 holds 'x'")
    del columns["c"]
    columns["label"][3] = None  # a null target: the row is dropped, naming it
    data = load_user_data(path, target="label")
    assert len(data) == N - 1 and any("target is missing (first on row 4)" in n for n in data.notes)
    columns["label"][3] = "a"
    data = load_user_data(path, target="label")
    assert data.x[:, 0].tolist() == list(range(N)) and data.classes == ("a", "b")


def test_parquet_without_pyarrow_names_the_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1")
    refused(DataMissingError, lambda: load_user_data(path, target="y"), "pip install pyarrow", "t.parquet")


def test_target_column_missing_or_not_given(tmp_path):
    path = table(tmp_path)
    refused(
        ConfigError,
        lambda: load_user_data(path, target="lable"),
        "data.csv",
        "'lable'",
        "did you mean 'label'",
    )
    refused(ConfigError, lambda: load_user_data(path), "--target", "'a', 'b', 'label'")


@pytest.mark.parametrize(
    ("column", "words"),
    [
        (["1.5"] * 5 + ["red"] + ["2"] * (N - 6), ["column 'c'", "not numeric", "line 7", "'red'"]),
        (["inf"] + ["2"] * (N - 1), ["column 'c'", "infinite value", "line 2"]),
        (["1e39"] + ["2"] * (N - 1), ["column 'c'", "beyond float32's range", "line 2"]),
    ],
)
def test_bad_feature_columns_are_one_line(tmp_path, column, words):
    path = table(tmp_path, c=column)
    refused(DataFormatError, lambda: load_user_data(path, target="label"), "data.csv", *words)


def test_a_real_table_keeps_missing_cells_and_reads_text_as_categories(tmp_path):
    """Empty cells and NaN stay missing; a text column becomes category codes in sorted order;
    an ID, a constant and pandas' unnamed index column are dropped; a row with no target too."""
    sizes = [("small", "medium", "large", "")[i % 4] for i in range(N)]
    gaps = ["" if i % 5 == 0 else f"{i / 10:g}" for i in range(N)]
    labels = [("cat", "dog")[i % 2] if i != 7 else "" for i in range(N)]
    path = write_csv(
        tmp_path / "real.csv",
        ["", "id", "size", "gap", "same", "label"],
        [[i, f"row-{i}", sizes[i], gaps[i], 3, labels[i]] for i in range(N)],
    )
    data = load_user_data(path, target="label")
    assert data.feature_names == ("size", "gap") and len(data) == N - 1
    assert [c.kind for c in data.columns] == ["categories", "numbers"]
    assert data.columns[0].categories == ("large", "medium", "small")
    assert data.categorical.tolist() == [True, False] and data.is_raw_table
    kept = [i for i in range(N) if i != 7]
    expected_codes = [{"large": 0, "medium": 1, "small": 2}.get(sizes[i], np.nan) for i in kept]
    np.testing.assert_array_equal(data.x[:, 0], np.array(expected_codes, dtype=np.float32))
    assert np.isnan(data.x[:, 1]).sum() == sum(gaps[i] == "" for i in kept)
    notes = " | ".join(data.notes)
    for words in (
        "1 of them categories (text): 'size'",
        "missing cells in columns 'size', 'gap'",
        "column 'id' dropped: an ID",
        "column 'same' dropped: constant",
        "column '' dropped: the row numbers",
        "dropped 1 rows whose target is missing (first on line 9)",
    ):
        assert words in notes, (words, notes)


def test_a_schema_reads_new_rows_with_the_training_codes():
    from biaslab.data.table_columns import ColumnSchema

    schema = ColumnSchema("size", "categories", ("large", "small"))
    codes, unseen = schema.codes(np.array(["small", " large ", "", "huge", None], dtype=object))
    np.testing.assert_array_equal(codes, [1, 0, np.nan, np.nan, np.nan])
    assert unseen == 1  # 'huge': read as missing, as scikit-learn's trees read an unknown category


@pytest.mark.parametrize(
    ("column", "words"),
    [
        ([f"2024-01-{1 + i % 28:02d}" for i in range(N)], ["column 'c'", "holds dates", "'2024-01-01'"]),
        ([f"note number {i} of many" for i in range(N)], ["column 'c'", "free text", "24 distinct"]),
    ],
)
def test_dates_and_free_text_are_one_line(tmp_path, column, words, monkeypatch):
    from biaslab.data import table_columns

    monkeypatch.setattr(table_columns, "MAX_CATEGORIES", 10)  # 24 rows: more than 10 texts is free text
    path = table(tmp_path, c=column)
    refused(DataFormatError, lambda: load_user_data(path, target="label"), "data.csv", *words)


def test_a_cell_holding_a_newline_stays_on_one_line(tmp_path):
    path = tmp_path / "nl.csv"
    path.write_text('a,label\n"x\ny",1\n' + "".join(f"{i},{i % 2}\n" for i in range(N)), encoding="utf-8")
    refused(DataFormatError, lambda: load_user_data(path, target="label"), "'x\\ny'", "not numeric")


def test_bad_targets_and_files(tmp_path):
    single = table(tmp_path, ["cat"] * N, name="single.csv")
    refused(
        DataFormatError, lambda: load_user_data(single, target="label"), "single.csv", "single class ('cat')"
    )
    few = tmp_path / "few.csv"
    write_csv(few, ["a", "label"], [(i, i % 2) for i in range(12)])
    message = refused(DataFormatError, lambda: load_user_data(few, target="label"), "few.csv")
    assert message.endswith("has 12 rows; needs at least 20 (the smallest training size)")
    assert len(load_user_data(few, target="label", min_rows=10)) == 12
    text = table(tmp_path, name="text.csv")
    refused(
        DataFormatError,
        lambda: load_user_data(text, target="label", task="regress"),
        "numeric target",
        "'cat'",
    )
    no_target = table(tmp_path, [""] * N, name="none.csv")
    refused(
        DataFormatError, lambda: load_user_data(no_target, target="label"), "'label'", "empty on every row"
    )
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,label\n1,0\n2,1,3\n", encoding="utf-8")
    refused(DataFormatError, lambda: load_user_data(ragged, target="label"), "ragged.csv line 3", "3 fields")
    twice = tmp_path / "twice.csv"
    twice.write_text("a,a,label\n1,2,0\n", encoding="utf-8")
    refused(DataFormatError, lambda: load_user_data(twice, target="label"), "column 'a' appears twice")
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    refused(DataFormatError, lambda: load_user_data(empty, target="label"), "empty.csv is empty")


def test_missing_paths_unknown_types_and_bad_arguments(tmp_path):
    refused(ConfigError, lambda: load_user_data(tmp_path / "nope.csv"), "no file or folder", "nope.csv")
    (tmp_path / "x.txt").write_text("1")
    refused(
        DataFormatError, lambda: load_user_data(tmp_path / "x.txt"), "'.txt'", ".csv", ".npz", ".pt", "folder"
    )
    np.save(tmp_path / "x.npy", np.zeros(3))
    refused(DataFormatError, lambda: load_user_data(tmp_path / "x.npy"), "numpy.savez(path, x=x, y=y)")
    path = table(tmp_path)
    refused(
        ConfigError,
        lambda: load_user_data(path, target="label", kind="tabel"),
        "unknown kind 'tabel'",
        "table",
    )
    refused(
        ConfigError, lambda: load_user_data(path, target="label", task="cluster"), "unknown task", "regress"
    )
    refused(
        ConfigError, lambda: load_user_data(path, target="label", kind="image"), "kind 'image'", "data.csv"
    )
    refused(
        ConfigError, lambda: load_user_data(path, target="label", image_size=(8, 8)), "image_size", "file"
    )
    refused(ConfigError, lambda: load_user_data(tmp_path, image_size=(0, 8)), "two positive integers")
    refused(ConfigError, lambda: load_user_data(path, target="label", min_rows=0), "min_rows")


# --------------------------------------------------------------------------- arrays


def save(tmp_path, name="a.npz", **arrays):
    np.savez(tmp_path / name, **arrays)
    return tmp_path / name


def test_npz_images_in_every_layout_become_nchw_in_unit_range(tmp_path):
    y = np.arange(N) % 2
    gray = load_user_data(save(tmp_path, x=RNG.integers(0, 256, (N, 12, 10), dtype=np.uint8), y=y))
    assert (gray.kind, gray.x.shape, gray.x.dtype) == ("image", (N, 1, 12, 10), np.float32)
    assert 0 <= gray.x.min() and gray.x.max() <= 1 and gray.feature_names == ()
    assert "pixel values 0..255 divided by 255" in gray.notes
    rgb = load_user_data(save(tmp_path, x=RNG.integers(0, 256, (N, 9, 9, 3)), y=y))
    assert rgb.x.shape == (N, 3, 9, 9) and rgb.x.max() <= 1
    first = load_user_data(save(tmp_path, x=RNG.random((N, 3, 9, 9)) * 4 - 2, y=y))
    assert first.x.shape == (N, 3, 9, 9) and first.x.min() == 0 and first.x.max() == 1
    assert any("minimum and maximum" in n for n in first.notes)
    square = load_user_data(save(tmp_path, x=RNG.random((N, 16, 16)), y=y))
    assert square.kind == "image" and any("pass kind='sequence'" in n for n in square.notes)


def test_a_3d_array_is_a_sequence_unless_it_looks_like_pixels(tmp_path):
    y = RNG.normal(size=N)
    seq = load_user_data(save(tmp_path, x=RNG.normal(size=(N, 30, 3)), y=y))
    assert (seq.kind, seq.task, seq.x.shape, seq.x.dtype) == ("sequence", "regress", (N, 30, 3), np.float32)
    assert seq.feature_names == ("x0", "x1", "x2")
    assert any("pass kind='image'" in n for n in seq.notes)
    onehot = np.eye(10, dtype=np.float32)[RNG.integers(0, 10, (N, 20))]  # (N, 20, 10) of 0/1
    assert load_user_data(save(tmp_path, x=onehot, y=y)).kind == "sequence"  # not square
    pixels = save(tmp_path, x=RNG.integers(0, 256, (N, 28, 28), dtype=np.uint8), y=y)
    as_seq = load_user_data(pixels, kind="sequence")
    assert as_seq.kind == "sequence" and as_seq.x.shape == (N, 28, 28) and as_seq.x.max() > 1
    univariate = load_user_data(save(tmp_path, x=RNG.normal(size=(N, 7)), y=y), kind="sequence")
    assert univariate.x.shape == (N, 7, 1)
    assert load_user_data(save(tmp_path, x=RNG.normal(size=(N, 7)), y=y)).kind == "table"


def test_kinds_an_array_cannot_be_are_refused(tmp_path):
    y = np.arange(N) % 2
    four = save(tmp_path, "four.npz", x=np.zeros((N, 8, 8, 3)), y=y)
    refused(
        ConfigError, lambda: load_user_data(four, kind="sequence"), "kind 'sequence'", "four.npz", "image"
    )
    flat = save(tmp_path, "flat.npz", x=np.zeros((N, 5)), y=y)
    refused(ConfigError, lambda: load_user_data(flat, kind="image"), "kind 'image'", f"{N}×5")
    refused(ConfigError, lambda: load_user_data(flat, kind="graph"), "kind 'graph'")
    masked = save(tmp_path, "m.npz", x=np.zeros((N, 8, 8)), y=y, mask=np.ones((N, 8), bool))
    refused(ConfigError, lambda: load_user_data(masked, kind="image"), "with a mask", "sequence or set")


def test_padded_sets_with_a_mask(tmp_path):
    x = RNG.normal(size=(N, 5, 2))
    mask = np.ones((N, 5), bool)
    mask[:, 3:] = RNG.random((N, 2)) < 0.5
    x[~mask] = np.nan  # padding may hold anything
    data = load_user_data(save(tmp_path, x=x, y=np.arange(N) % 3, mask=mask))
    assert (data.kind, data.x.shape, data.mask.shape, data.mask.dtype) == ("set", (N, 5, 2), (N, 5), np.bool_)
    assert np.all(data.x[~data.mask] == 0) and np.isfinite(data.x).all()
    assert np.allclose(data.x[data.mask], x[mask])
    seq = load_user_data(save(tmp_path, x=x, y=np.arange(N) % 3, mask=mask), kind="sequence")
    assert seq.kind == "sequence" and seq.mask is not None
    full = load_user_data(save(tmp_path, x=x[:, :3], y=np.arange(N) % 3), kind="set")
    assert full.mask.all() and "no mask: every set is full" in full.notes


def test_bad_arrays_are_one_line(tmp_path):
    y = np.arange(N) % 2
    x = RNG.normal(size=(N, 5, 2))
    x[3, 1, 0] = np.nan
    refused(DataFormatError, lambda: load_user_data(save(tmp_path, x=x, y=y)), "a.npz", "x holds 1 NaN")
    mask = np.ones((N, 5), bool)
    mask[4] = False
    ok = RNG.normal(size=(N, 5, 2))
    refused(
        DataFormatError,
        lambda: load_user_data(save(tmp_path, x=ok, y=y, mask=mask)),
        "all-False mask",
        "first: 4",
    )
    refused(
        DataFormatError, lambda: load_user_data(save(tmp_path, x=ok, y=y, mask=mask[:, :3])), "mask is", "×5"
    )
    refused(
        DataFormatError,
        lambda: load_user_data(save(tmp_path, x=ok, y=y[:-1])),
        f"x has {N}",
        f"y has {N - 1}",
    )
    refused(DataFormatError, lambda: load_user_data(save(tmp_path, inputs=ok, y=y)), "no array x", "inputs")
    text = np.array(["a"] * N)
    refused(DataFormatError, lambda: load_user_data(save(tmp_path, x=text, y=y)), "x has dtype", "numbers")
    with open(tmp_path / "obj.npz", "wb") as handle:
        np.savez(handle, x=np.array([{"a": 1}] * N, dtype=object), y=y)
    refused(DataFormatError, lambda: load_user_data(tmp_path / "obj.npz"), "obj.npz", ".npz archive")
    refused(
        DataFormatError, lambda: load_user_data(save(tmp_path, x=np.zeros((N, 2, 2, 2, 2)), y=y)), "2×2×2×2"
    )
    four = save(tmp_path, x=np.zeros((N, 8, 8, 3)), y=y, mask=np.ones((N, 8), bool))
    refused(DataFormatError, lambda: load_user_data(four), "with a mask", "sets or sequences")
    nan_y = RNG.normal(size=N)
    nan_y[0] = np.inf
    refused(DataFormatError, lambda: load_user_data(save(tmp_path, x=ok, y=nan_y)), "target", "infinite")


# --------------------------------------------------------------------------- image folders


def image_folder(tmp_path, sizes=None, mode="L"):
    from PIL import Image

    root = tmp_path / "images"
    for k, name in enumerate(["zebra", "ant"] * (N // 2)):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        size = sizes[k] if sizes else (12, 10)  # (width, height)
        pixels = RNG.integers(
            0, 256, (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0]), dtype=np.uint8
        )
        suffix = ".jpg" if k % 4 == 1 else ".png"
        Image.fromarray(pixels, mode).save(folder / f"{k:02d}{suffix}")
    (root / "ant" / ".DS_Store").write_bytes(b"\0")
    (root / "notes.txt").write_text("not a class")
    return root


def test_an_image_folder_loads_one_class_per_subfolder(tmp_path):
    pytest.importorskip("PIL")
    data = load_user_data(image_folder(tmp_path))
    assert (data.kind, data.task, data.x.shape, data.x.dtype) == (
        "image",
        "classify",
        (N, 1, 10, 12),
        np.float32,
    )
    assert data.classes == ("ant", "zebra") and np.bincount(data.y).tolist() == [N // 2, N // 2]
    assert 0 <= data.x.min() and data.x.max() <= 1
    assert "passed over 1 entries that are not .png/.jpg/.jpeg files" not in data.notes  # hidden: silent
    (tmp_path / "images" / "empty").mkdir()
    (tmp_path / "images" / "ant" / "readme.md").write_text("")
    again = load_user_data(tmp_path / "images")
    assert again.classes == ("ant", "zebra")
    assert "subfolders without images, not classes: 'empty'" in again.notes
    assert "passed over 1 entries that are not .png/.jpg/.jpeg files" in again.notes
    rgb = load_user_data(image_folder(tmp_path / "rgb", mode="RGB"))
    assert rgb.x.shape == (N, 3, 10, 12)


def test_mixed_image_sizes_are_refused_or_resized(tmp_path):
    pytest.importorskip("PIL")
    sizes = [(12, 10)] * N
    sizes[5] = (16, 16)
    root = image_folder(tmp_path, sizes)
    refused(
        DataFormatError,
        lambda: load_user_data(root),
        "images in",
        "differ in size: ant/01.jpg is 10×12, ant/05.jpg is 16×16",
        "image_size",
    )
    data = load_user_data(root, image_size=(8, 9))
    assert data.x.shape == (N, 1, 8, 9) and "images resized to 8×9 (bilinear)" in data.notes


def test_bad_image_folders(tmp_path):
    pytest.importorskip("PIL")
    root = image_folder(tmp_path)
    (root / "ant" / "broken.png").write_bytes(b"not a png")
    refused(DataFormatError, lambda: load_user_data(root), "broken.png", "cannot be read as an image")
    (root / "ant" / "broken.png").unlink()
    refused(ConfigError, lambda: load_user_data(root, kind="table"), "kind 'table'", "folder")
    empty = tmp_path / "empty"
    (empty / "a").mkdir(parents=True)
    refused(DataFormatError, lambda: load_user_data(empty), "no class subfolders of images")


# --------------------------------------------------------------------------- molecules


SMILES = ["CCO", "c1ccccc1", "CC(=O)O", "C1CC1", "CN", "O=C=O"]


def test_a_smiles_csv_loads_molecules_and_drops_unparsable_ones(tmp_path):
    pytest.importorskip("rdkit")
    rows = [(SMILES[i % 6], i % 2, f"m{i}") for i in range(N)] + [("C1CC(", 1, "bad")]
    path = write_csv(tmp_path / "mol.csv", ["SMILES", "active", "name"], rows)
    data = load_user_data(path, target="active")
    assert (data.kind, data.task, len(data), data.x) == ("molecule", "classify", N, None)
    assert data.smiles[:2] == ("CCO", "c1ccccc1") and data.classes == (0, 1) and data.positions is None
    assert any("dropped 1 of 25 rows" in n and "'C1CC('" in n and "line 26" in n for n in data.notes)
    assert any("not read" in n and "'name'" in n for n in data.notes)
    refused(
        ConfigError, lambda: load_user_data(path, target="active", kind="table"), "kind 'table'", "SMILES"
    )


def test_molecule_refusals(tmp_path):
    pytest.importorskip("rdkit")
    bad = write_csv(tmp_path / "bad.csv", ["smiles", "y"], [("C1CC(", 0), ("xyz", 1)])
    refused(
        DataFormatError, lambda: load_user_data(bad, target="y"), "bad.csv", "none of the 2 SMILES", "'C1CC('"
    )
    refused(ConfigError, lambda: load_user_data(table(tmp_path), target="label", kind="molecule"), "'smiles'")
    refused(ConfigError, lambda: load_user_data(bad, target="smiles"), "SMILES column")


# --------------------------------------------------------------------------- graphs


def pyg_graphs(labels, **extra):
    from torch_geometric.data import Data

    graphs = []
    for label in labels:
        n = int(RNG.integers(2, 6))
        edges = torch.tensor([list(range(n - 1)), list(range(1, n))])
        graphs.append(Data(x=torch.randn(n, 3), edge_index=edges, y=torch.tensor([label]), **extra))
    return graphs


def test_a_pt_list_of_pyg_graphs(tmp_path):
    pytest.importorskip("torch_geometric")
    path = tmp_path / "g.pt"
    torch.save(pyg_graphs([0.5 * (i % 3) for i in range(N)], edge_attr=torch.zeros(0, 2)), path)
    assert load_user_data(path).task == "regress"  # fractional labels
    data = load_user_data(path, task="classify")
    assert (data.kind, data.task, data.x, len(data.graphs)) == ("graph", "classify", None, N)
    assert data.classes == (0, 0.5, 1) and data.feature_names == ("x0", "x1", "x2")
    assert data.graphs[1].y.tolist() == [1] and data.graphs[1].y.dtype == torch.long
    assert data.graphs[0].x.dtype == torch.float32
    regressed = load_user_data(path, task="regress")
    assert regressed.graphs[2].y.dtype == torch.float32 and regressed.graphs[2].y.item() == 1.0
    refused(ConfigError, lambda: load_user_data(path, kind="set"), "kind 'set'", "g.pt")


def test_bad_graph_files(tmp_path):
    pytest.importorskip("torch_geometric")
    graphs = pyg_graphs([i % 2 for i in range(N)])
    graphs[3].y = torch.zeros(4)  # node-level labels
    torch.save(graphs, tmp_path / "node.pt")
    refused(
        DataFormatError,
        lambda: load_user_data(tmp_path / "node.pt"),
        "graph 3",
        "a y of 4 values",
        "graph-level",
    )
    torch.save({"x": torch.zeros(2)}, tmp_path / "dict.pt")
    refused(DataFormatError, lambda: load_user_data(tmp_path / "dict.pt"), "dict.pt", "holds dict", "list")
    torch.save([Path("x")], tmp_path / "code.pt")  # a class weights_only does not admit
    refused(DataFormatError, lambda: load_user_data(tmp_path / "code.pt"), "code.pt", "weights_only")


def test_an_edge_list_npz_of_graphs(tmp_path):
    pytest.importorskip("torch_geometric")
    # graph 0: nodes 0, 2 (edge 2->0); graph 1: nodes 1, 3, 4 (edges 1->3, 4->1); graph 2: node 5
    node_graph = np.array([0, 1, 0, 1, 1, 2])
    edges = np.array([[2, 1, 4], [0, 3, 1]])
    x = np.arange(12, dtype=np.float64).reshape(6, 2)
    path = save(
        tmp_path, "edges.npz", edge_index=edges, node_graph=node_graph, x=x, y=np.array([1.5, 2.5, 0.25])
    )
    data = load_user_data(path, min_rows=3)
    assert (data.kind, data.task) == ("graph", "regress")
    g0, g1, g2 = data.graphs
    assert g0.x.tolist() == [[0, 1], [4, 5]] and g0.edge_index.tolist() == [[1], [0]]
    assert g1.x[:, 0].tolist() == [2, 6, 8] and g1.edge_index.tolist() == [[0, 2], [1, 0]]
    assert g2.num_nodes == 1 and g2.edge_index.shape == (2, 0)
    assert data.y.tolist() == [1.5, 2.5, 0.25] and g1.y.item() == 2.5
    crossing = save(
        tmp_path, "cross.npz", edge_index=np.array([[0], [1]]), node_graph=node_graph, x=x, y=np.ones(3)
    )
    refused(
        DataFormatError,
        lambda: load_user_data(crossing),
        "edge 0 joins node 0 (graph 0) and node 1 (graph 1)",
    )
    partial = save(tmp_path, "part.npz", edge_index=edges, x=x)
    refused(DataFormatError, lambda: load_user_data(partial), "part.npz", "node_graph, y")
    refused(ConfigError, lambda: load_user_data(path, kind="table"), "kind 'table'", "edge_index")


def test_importing_biaslab_data_loads_no_optional_library():
    optional = "{'PIL', 'rdkit', 'pandas', 'pyarrow', 'torch_geometric'}"
    code = f"import sys, biaslab.data; print(sorted({optional} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
