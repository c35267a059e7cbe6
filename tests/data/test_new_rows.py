"""New rows for ``biaslab predict``: read exactly as the training data were (the training file read
again as new rows gives the training x, bit for bit), checked against the training data's
:class:`InputSchema`, and refused in one line naming the file, the column or array, and the fix."""

import json

import numpy as np
import pytest

from biaslab.data.demo_sets import load_data
from biaslab.data.new_rows import InputSchema, read_new_rows
from biaslab.data.user_data import UserData, load_user_data
from biaslab.errors import ConfigError, DataFormatError
from tests.data.test_user_data import refused

N = 24
RNG = np.random.default_rng(0)


def schema_of(data: UserData) -> InputSchema:
    """The data's schema, checked to survive JSON: as_dict -> json -> from_dict gives it back equal."""
    schema = InputSchema.of(data)
    assert InputSchema.from_dict(json.loads(json.dumps(schema.as_dict()))) == schema
    return schema


def same_inputs(rows, data: UserData) -> None:
    """The key property: the new-row reader and the training reader agree (NaN where NaN)."""
    assert rows.x.dtype == np.float32 and len(rows) == len(data)
    np.testing.assert_array_equal(rows.x, data.x)
    if data.mask is None:
        assert rows.mask is None
    else:
        np.testing.assert_array_equal(rows.mask, data.mask)


def write_csv(path, header, rows, sep=","):
    lines = [sep.join(header)] + [sep.join(str(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


SIZES = [("small", "medium", "large", "")[i % 4] for i in range(N)]
GAPS = ["" if i % 5 == 0 else f"{i / 10:g}" for i in range(N)]


def raw_table(tmp_path, name="real.csv", sizes=SIZES, gaps=GAPS, sep=","):
    """A table with an ID, a category column with missing cells, numbers with missing cells, a
    constant and the label (every row labelled): features 'size' and 'gap'."""
    header = ["id", "size", "gap", "same", "label"]
    rows = [[f"row-{i}", sizes[i], gaps[i], 3, ("cat", "dog")[i % 2]] for i in range(N)]
    return write_csv(tmp_path / name, header, rows, sep)


def number_table(tmp_path, name="plain.csv", **columns):
    cols = {"a": RNG.normal(size=N).round(3), "b": 2 * np.arange(N), **columns}
    cols["label"] = [("cat", "dog", "eel")[i % 3] for i in range(N)]
    return write_csv(tmp_path / name, list(cols), zip(*cols.values()))


# --------------------------------------------------------------------------- tables


def test_a_raw_csv_read_again_gives_the_training_x(tmp_path):
    path = raw_table(tmp_path)
    data = load_user_data(path, target="label")
    schema = schema_of(data)
    assert (schema.kind, schema.example_shape, schema.feature_names) == ("table", (2,), ("size", "gap"))
    assert schema.columns == data.columns and schema.missing_allowed
    rows = read_new_rows(path, schema)
    same_inputs(rows, data)
    assert rows.ids[:3] == ("1", "2", "3") and rows.source == str(path)
    assert "columns not read (not features of the model): 'id', 'same', 'label'" in rows.notes
    same_inputs(read_new_rows(str(path), schema), data)


def test_columns_are_matched_by_name_in_any_order_and_separator(tmp_path):
    data = load_user_data(raw_table(tmp_path), target="label")
    header = ["gap", "label", "size"]
    shuffled = write_csv(tmp_path / "new.tsv", header, zip(GAPS, ["?"] * N, SIZES), "\t")
    same_inputs(read_new_rows(shuffled, schema_of(data)), data)


def test_a_parquet_table_read_again_gives_the_training_x(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    a = RNG.normal(size=N)
    a[3] = np.nan
    path = tmp_path / "t.parquet"
    colors = [("red", "blue", None)[i % 3] for i in range(N)]
    label = [i % 2 for i in range(N)]
    pq.write_table(pa.table({"a": a, "color": colors, "n": np.arange(N) % 7, "label": label}), path)
    data = load_user_data(path, target="label")
    assert data.is_raw_table
    same_inputs(read_new_rows(path, schema_of(data)), data)


def test_an_unseen_category_reads_as_missing_with_a_note(tmp_path):
    data = load_user_data(raw_table(tmp_path), target="label")
    sizes = ["huge" if i < 3 else SIZES[i] for i in range(N)]
    rows = read_new_rows(raw_table(tmp_path, "new.csv", sizes=sizes), schema_of(data))
    assert np.isnan(rows.x[:3, 0]).all()
    np.testing.assert_array_equal(rows.x[3:], data.x[3:])
    message = "column 'size': 3 rows hold a category the training rows never held (read as missing)"
    assert message in rows.notes


def test_a_missing_training_column_is_one_line_naming_it_and_the_closest(tmp_path):
    schema = schema_of(load_user_data(raw_table(tmp_path), target="label"))
    renamed = write_csv(tmp_path / "new.csv", ["Size", "gap"], zip(SIZES, GAPS))
    refused(
        DataFormatError,
        lambda: read_new_rows(renamed, schema),
        "new.csv has no column 'size'",
        "the columns are 'Size', 'gap'",
        "did you mean 'Size'?",
    )


def test_text_in_a_numbers_column_is_one_line_naming_the_line_and_value(tmp_path):
    schema = schema_of(load_user_data(raw_table(tmp_path), target="label"))
    gaps = [*GAPS[:4], "n/a?", *GAPS[5:]]
    refused(
        DataFormatError,
        lambda: read_new_rows(raw_table(tmp_path, "new.csv", gaps=gaps), schema),
        "new.csv: column 'gap' holds 'n/a?' on line 6",
        "as numbers",
    )


def test_a_missing_cell_is_refused_when_the_training_table_had_none(tmp_path):
    path = number_table(tmp_path)
    data = load_user_data(path, target="label")
    schema = schema_of(data)
    assert not schema.missing_allowed and [c.kind for c in schema.columns] == ["numbers", "numbers"]
    same_inputs(read_new_rows(path, schema), data)
    holes = number_table(tmp_path, "holes.csv", b=["" if i in (4, 9) else i for i in range(N)])
    refused(
        DataFormatError,
        lambda: read_new_rows(holes, schema),
        "holes.csv: column 'b' is missing on line 6 (2 rows in all)",
        "without missing cells",
    )
    npz = tmp_path / "plain.npz"
    np.savez(npz, x=RNG.normal(size=(N, 4)), y=np.arange(N) % 2)
    from_npz = load_user_data(npz)
    same_inputs(read_new_rows(npz, schema_of(from_npz)), from_npz)
    infinite = number_table(tmp_path, "inf.csv", a=["inf"] + ["1"] * (N - 1))
    refused(DataFormatError, lambda: read_new_rows(infinite, schema), "column 'a'", "infinite", "line 2")
    empty = write_csv(tmp_path / "empty.csv", ["a", "b"], [])
    refused(DataFormatError, lambda: read_new_rows(empty, schema), "empty.csv has no rows")


def test_demo_tables_read_from_a_csv_or_an_array(tmp_path):
    wine = load_data("sklearn:wine")
    schema = schema_of(wine)
    assert schema.feature_names[:2] == ("alcohol", "malic_acid") and not schema.missing_allowed
    header = ["cultivar", *reversed(schema.feature_names)]
    values = [[k, *(repr(float(v)) for v in row[::-1])] for k, row in zip(wine.y, wine.x)]
    same_inputs(read_new_rows(write_csv(tmp_path / "wine.csv", header, values), schema), wine)
    rows = read_new_rows(wine.x.astype(np.float64), schema)
    same_inputs(rows, wine)
    assert rows.ids[:2] == ("0", "1") and rows.source == "the given array"
    refused(
        DataFormatError,
        lambda: read_new_rows(wine.x[:, :12], schema),
        "the given array: x has 12 columns; the model was trained on 13",
        "'alcohol'",
    )
    gap = wine.x.copy()
    gap[5, 1] = np.nan
    refused(DataFormatError, lambda: read_new_rows(gap, schema), "column 'malic_acid' is missing on x[5];")
    digits = load_data("sklearn:digits-table")
    rows = read_new_rows({"x": digits.x, "y": digits.y}, schema_of(digits))
    same_inputs(rows, digits)
    assert rows.notes == ("arrays not read: 'y'",)


def test_a_dataframe_of_a_demo_table():
    pd = pytest.importorskip("pandas")
    wine = load_data("sklearn:wine")
    schema = schema_of(wine)
    frame = pd.DataFrame(wine.x, columns=list(schema.feature_names)).iloc[:, ::-1]
    frame["cultivar"] = wine.y
    rows = read_new_rows(frame, schema)
    same_inputs(rows, wine)
    assert rows.ids[0] == "1" and "columns not read (not features of the model): 'cultivar'" in rows.notes
    refused(
        DataFormatError,
        lambda: read_new_rows(frame.drop(columns="alcohol"), schema),
        "the given DataFrame has no column 'alcohol'",
    )


def test_a_dataframe_of_text_and_missing_values_reads_as_its_csv(tmp_path):
    pd = pytest.importorskip("pandas")
    data = load_user_data(raw_table(tmp_path), target="label")
    frame = pd.DataFrame({"size": [s or None for s in SIZES], "gap": [float(g) if g else None for g in GAPS]})
    same_inputs(read_new_rows(frame, schema_of(data)), data)


def test_an_array_for_a_table_with_categories_holds_their_codes(tmp_path):
    data = load_user_data(raw_table(tmp_path), target="label")
    schema = schema_of(data)
    same_inputs(read_new_rows(data.x, schema), data)
    wrong = data.x.copy()
    wrong[2, 0] = 7
    refused(
        DataFormatError,
        lambda: read_new_rows(wrong, schema),
        "the given array: column 'size' holds 7 on x[2], not a code of its categories",
        "0..2: 'large', 'medium', 'small'",
    )


# --------------------------------------------------------------------------- images


def test_digits_are_read_by_their_training_rule_and_refused_as_0_to_16():
    from sklearn.datasets import load_digits

    digits = load_data("sklearn:digits")
    schema = schema_of(digits)
    assert (schema.kind, schema.example_shape, schema.pixel_range) == ("image", (1, 8, 8), (0.0, 1.0))
    same_inputs(read_new_rows(digits.x, schema), digits)
    same_inputs(read_new_rows(digits.x[:, 0], schema), digits)  # (M, H, W)
    raw = load_digits().data.reshape(-1, 8, 8)  # 0..16, as scikit-learn ships them
    refused(
        DataFormatError,
        lambda: read_new_rows(raw, schema),
        "the given array: pixel values run 0..16",
        "the model was trained on pixel values in [0, 1]",
    )
    refused(
        DataFormatError,
        lambda: read_new_rows(np.zeros((3, 16, 16)), schema),
        "images are 16×16; the model was trained on 8×8 images",
        "resize them",
    )
    refused(
        DataFormatError,
        lambda: read_new_rows(np.zeros((3, 8, 8, 3)), schema),
        "images have 3 channels; the model was trained on images of 1",
    )


def save(tmp_path, name, **arrays):
    np.savez(tmp_path / name, **arrays)
    return tmp_path / name


@pytest.mark.parametrize(
    ("x", "rule"),
    [
        (RNG.integers(0, 256, (N, 12, 10), dtype=np.uint8), (0.0, 255.0)),  # divided by 255
        (RNG.integers(0, 256, (N, 9, 9, 3)), (0.0, 255.0)),  # channels last
        (RNG.random((N, 16, 16)), (0.0, 1.0)),  # kept
        ((RNG.random((N, 3, 9, 9)) * 4 - 2).round(3), None),  # min-max: the data set's range
    ],
)
def test_npz_images_read_again_give_the_training_x(tmp_path, x, rule):
    path = save(tmp_path, "img.npz", x=x, y=np.arange(N) % 2)
    data = load_user_data(path)
    assert data.kind == "image"
    assert data.pixel_range == (rule or (float(x.min()), float(x.max())))
    schema = schema_of(data)
    rows = read_new_rows(path, schema)
    same_inputs(rows, data)
    assert "arrays not read: 'y'" in rows.notes
    if rule is None:
        beyond = x.copy()
        beyond[0] = x.max() + 1
        refused(
            DataFormatError, lambda: read_new_rows(beyond, schema), "pixel values run", "scaled to [0, 1]"
        )


def image_folder(tmp_path, mode="L", size=(12, 10), classes=("zebra", "ant")):
    from PIL import Image

    root = tmp_path / "images"
    for k in range(N):
        folder = root / classes[k % len(classes)] if classes else root
        folder.mkdir(parents=True, exist_ok=True)
        shape = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
        pixels = RNG.integers(0, 256, shape, dtype=np.uint8)
        Image.fromarray(pixels, mode).save(folder / f"{k:02d}{'.jpg' if k % 4 == 1 else '.png'}")
    (root / ".DS_Store").write_bytes(b"\0")
    return root


def test_an_image_folder_read_again_gives_the_training_x(tmp_path):
    pytest.importorskip("PIL")
    root = image_folder(tmp_path)
    data = load_user_data(root)
    schema = schema_of(data)
    assert schema.example_shape == (1, 10, 12) and schema.pixel_range == (0.0, 255.0)
    rows = read_new_rows(root, schema)
    same_inputs(rows, data)
    assert rows.ids[:2] == ("ant/01.jpg", "ant/03.png") and rows.notes == ()
    one = read_new_rows(root / "zebra" / "00.png", schema)
    assert one.ids == ("00.png",) and one.x.shape == (1, 1, 10, 12)
    np.testing.assert_array_equal(one.x[0], data.x[N // 2])
    flat = image_folder(tmp_path / "flat", classes=())
    assert len(read_new_rows(flat, schema)) == N
    rgb = load_user_data(image_folder(tmp_path / "rgb", mode="RGB"))
    same_inputs(read_new_rows(tmp_path / "rgb" / "images", schema_of(rgb)), rgb)


def test_image_files_take_the_training_channels_and_size(tmp_path):
    pytest.importorskip("PIL")
    schema = schema_of(load_user_data(image_folder(tmp_path)))
    color = read_new_rows(image_folder(tmp_path / "rgb", mode="RGB"), schema)
    assert color.x.shape == (N, 1, 10, 12)
    assert f"{N} images converted to grayscale (L), the training images' channels" in color.notes
    refused(
        DataFormatError,
        lambda: read_new_rows(image_folder(tmp_path / "big", size=(16, 16)), schema),
        "ant/01.jpg: images are 16×16",
        "the model was trained on 10×12 images (height×width): resize them",
    )
    refused(ConfigError, lambda: read_new_rows(raw_table(tmp_path), schema), "real.csv is a table", "image")
    empty = tmp_path / "none"
    empty.mkdir()
    refused(DataFormatError, lambda: read_new_rows(empty, schema), "holds no images")


def test_image_files_for_a_model_trained_on_unit_arrays_are_divided_by_255(tmp_path):
    pytest.importorskip("PIL")
    digits = schema_of(load_data("sklearn:digits"))  # arrays already in [0, 1]
    assert digits.pixel_range == (0.0, 1.0)
    root = image_folder(tmp_path, size=(8, 8))
    rows = read_new_rows(root, digits)
    as_trained = load_user_data(root)  # the folder's own reading: 0..255 divided by 255
    np.testing.assert_array_equal(rows.x, as_trained.x)
    assert rows.x.max() <= 1 and rows.x.max() > 0.9


# --------------------------------------------------------------------------- sequences and sets


def test_sequences_read_again_give_the_training_x(tmp_path):
    path = save(tmp_path, "seq.npz", x=RNG.normal(size=(N, 30, 3)), y=RNG.normal(size=N))
    data = load_user_data(path)
    schema = schema_of(data)
    assert (schema.kind, schema.example_shape, schema.masked) == ("sequence", (30, 3), False)
    same_inputs(read_new_rows(path, schema), data)
    refused(
        DataFormatError,
        lambda: read_new_rows(RNG.normal(size=(4, 31, 3)), schema),
        "x holds sequences of 31 steps; the model was trained on 30",
    )
    refused(
        DataFormatError,
        lambda: read_new_rows(RNG.normal(size=(4, 30, 2)), schema),
        "x has 2 features per step; the model was trained on 3",
    )
    univariate = load_user_data(save(tmp_path, "u.npz", x=RNG.normal(size=(N, 7)), y=data.y), kind="sequence")
    same_inputs(read_new_rows(tmp_path / "u.npz", schema_of(univariate)), univariate)


def padded_sets(tmp_path, n=N, size=5, name="sets.npz"):
    x = RNG.normal(size=(n, size, 2))
    mask = np.ones((n, size), bool)
    mask[:, 3:] = RNG.random((n, size - 3)) < 0.5
    x[~mask] = np.nan  # padding may hold anything
    return save(tmp_path, name, x=x, y=np.arange(n) % 3, mask=mask), x, mask


def test_sets_read_again_give_the_training_x_and_mask(tmp_path):
    path, x, mask = padded_sets(tmp_path)
    data = load_user_data(path)
    schema = schema_of(data)
    assert (schema.kind, schema.example_shape, schema.masked) == ("set", (5, 2), True)
    same_inputs(read_new_rows(path, schema), data)
    same_inputs(read_new_rows({"x": x, "mask": mask}, schema), data)
    full = read_new_rows(RNG.normal(size=(4, 5, 2)), schema)
    assert full.mask.all() and "no mask: every set is full" in full.notes
    masked_seq = load_user_data(path, kind="sequence")
    same_inputs(read_new_rows(path, schema_of(masked_seq)), masked_seq)
    unpadded = read_new_rows(RNG.normal(size=(4, 5, 2)), schema_of(masked_seq))
    assert unpadded.mask.all() and "no mask: every step is real" in unpadded.notes
    plain = schema_of(load_user_data(save(tmp_path, "plain.npz", x=x[:, :3], y=np.arange(N) % 3)))
    refused(DataFormatError, lambda: read_new_rows(path, plain), "sets.npz holds a mask", "without padding")


def test_smaller_sets_are_padded_and_larger_ones_refused(tmp_path):
    path, _, _ = padded_sets(tmp_path)
    schema = schema_of(load_user_data(path))
    small = RNG.normal(size=(4, 3, 2))
    rows = read_new_rows(small, schema)
    assert rows.x.shape == (4, 5, 2) and rows.mask.shape == (4, 5)
    assert rows.mask[:, :3].all() and not rows.mask[:, 3:].any() and not rows.x[:, 3:].any()
    np.testing.assert_array_equal(rows.x[:, :3], small.astype(np.float32))
    assert "sets of 3 elements padded to the training's 5 (zeros, masked out)" in rows.notes
    refused(
        DataFormatError,
        lambda: read_new_rows(RNG.normal(size=(4, 7, 2)), schema),
        "x holds sets of 7 elements; the model was trained on at most 5",
    )
    bad_mask = {"x": small, "mask": np.zeros((4, 3), bool)}
    refused(DataFormatError, lambda: read_new_rows(bad_mask, schema), "all-False mask")


# --------------------------------------------------------------------------- what cannot be read


def test_new_molecules_are_their_smiles_each_parsed(tmp_path):
    pytest.importorskip("rdkit")
    molecule = InputSchema("molecule", ())
    (tmp_path / "m.csv").write_text("name,Smiles\nethanol,CCO\nbenzene,c1ccccc1\n")
    rows = read_new_rows(tmp_path / "m.csv", molecule)
    assert rows.smiles == ("CCO", "c1ccccc1") and rows.ids == ("1", "2") and rows.x is None and len(rows) == 2
    assert read_new_rows(["CCO"], molecule).ids == ("0",)
    pd = pytest.importorskip("pandas")
    assert read_new_rows(pd.DataFrame({"SMILES": ["CC", "CCN"]}), molecule).smiles == ("CC", "CCN")
    (tmp_path / "bad.csv").write_text("smiles\nCCO\nC1CC\n")
    refused(
        DataFormatError, lambda: read_new_rows(tmp_path / "bad.csv", molecule), "line 3", "'C1CC'", "parse"
    )
    (tmp_path / "none.csv").write_text("name\nethanol\n")
    refused(
        DataFormatError, lambda: read_new_rows(tmp_path / "none.csv", molecule), "no column named 'smiles'"
    )
    refused(ConfigError, lambda: read_new_rows(np.zeros(3), molecule), "cannot hold molecules")


def graph_arrays(n_graphs=N, features=3):
    """An edge list of ``n_graphs`` chains of 2 to 6 nodes, with labels."""
    sizes = 2 + np.arange(n_graphs) % 5
    starts = np.cumsum([0, *sizes[:-1]])
    edges = np.concatenate(
        [np.stack([np.arange(s, s + n - 1), np.arange(s + 1, s + n)]) for s, n in zip(starts, sizes)], 1
    )
    node_graph = np.repeat(np.arange(n_graphs), sizes)
    x = RNG.normal(size=(len(node_graph), features)).astype(np.float32)
    return {"edge_index": edges, "node_graph": node_graph, "x": x, "y": np.arange(n_graphs) % 2}


def test_graphs_read_again_give_the_training_graphs(tmp_path):
    pytest.importorskip("torch_geometric")
    import torch

    arrays = graph_arrays()
    np.savez(tmp_path / "graphs.npz", **arrays)
    data = load_user_data(tmp_path / "graphs.npz")
    schema = schema_of(data)
    assert schema == InputSchema("graph", (3,))
    unlabelled = {k: v for k, v in arrays.items() if k != "y"}
    np.savez(tmp_path / "new.npz", **unlabelled)
    torch.save(data.graphs, tmp_path / "graphs.pt")
    for source in (tmp_path / "graphs.npz", tmp_path / "new.npz", unlabelled, tmp_path / "graphs.pt"):
        rows = read_new_rows(source, schema)
        assert rows.x is None and rows.ids == tuple(str(i) for i in range(N))
        for new, old in zip(rows.graphs, data.graphs, strict=True):
            assert torch.equal(new.x, old.x) and torch.equal(new.edge_index, old.edge_index)


def test_graphs_that_do_not_fit_are_one_line(tmp_path):
    pytest.importorskip("torch_geometric")
    schema = InputSchema("graph", (3,))
    arrays = {k: v for k, v in graph_arrays().items() if k != "y"}
    refused(
        DataFormatError,
        lambda: read_new_rows({**arrays, "x": arrays["x"][:, :2]}, schema),
        "2 features",
        "trained on 3",
    )
    refused(DataFormatError, lambda: read_new_rows({"x": arrays["x"]}, schema), "no edge_index")
    refused(
        DataFormatError,
        lambda: read_new_rows({"edge_index": arrays["edge_index"], "x": arrays["x"]}, schema),
        "node_graph",
    )
    write_csv(tmp_path / "graphs.csv", ["a"], [[1]])
    refused(DataFormatError, lambda: read_new_rows(tmp_path / "graphs.csv", schema), "new graphs come as")
    refused(ConfigError, lambda: read_new_rows(tmp_path / "none.npz", schema), "no file")
    refused(ConfigError, lambda: read_new_rows(np.zeros(3), schema), "new graphs come as")


def test_odd_sources_are_one_line(tmp_path):
    digits = schema_of(load_data("sklearn:digits"))
    refused(ConfigError, lambda: read_new_rows([1, 2], digits), "not list")
    refused(ConfigError, lambda: read_new_rows(tmp_path / "nothing.npz", digits), "no file or folder")
    (tmp_path / "x.npy").write_bytes(b"")
    refused(DataFormatError, lambda: read_new_rows(tmp_path / "x.npy", digits), "unknown file type '.npy'")
    refused(DataFormatError, lambda: read_new_rows({"inputs": np.zeros(3)}, digits), "no array x")
    refused(DataFormatError, lambda: read_new_rows(np.zeros((0, 8, 8)), digits), "no examples")
    refused(DataFormatError, lambda: read_new_rows(np.array([["a"]]), digits), "x has dtype", "numbers")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"kind": "tree"}, ["'kind' must be one of"]),
        ({"example_shape": [0, 8]}, ["'example_shape' must be"]),
        ({"pixel_range": [1]}, ["'pixel_range' must be"]),
        ({"masked": "yes"}, ["'masked' must be true or false"]),
        ({"colour": 1}, ["unknown keys 'colour'"]),
        ({"example_shape": [8, 8]}, ["do not fit kind 'image'"]),
    ],
)
def test_a_malformed_schema_dict_is_one_line(change, words):
    good = InputSchema.of(load_data("sklearn:digits")).as_dict()
    refused(ValueError, lambda: InputSchema.from_dict({**good, **change}), "input schema", *words)
    refused(ValueError, lambda: InputSchema.from_dict([good]), "a dict, not list")
