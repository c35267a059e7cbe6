"""OOD inputs for ``biaslab compare --ood``: read as the data are, refused in one line otherwise."""

import numpy as np
import pytest

from biaslab.data.user_data import UserData
from biaslab.data.user_ood import MIN_OOD_ROWS, load_ood_inputs
from biaslab.errors import ConfigError, DataFormatError


def images(n=30):
    x = np.random.default_rng(0).uniform(size=(n, 1, 8, 8)).astype(np.float32)
    return UserData("image", "classify", x, np.arange(n) % 2, classes=(0, 1))


def test_images_are_read_channels_first_and_labels_are_not_needed(tmp_path):
    pixels = np.random.default_rng(1).integers(0, 256, size=(12, 8, 8)).astype(np.uint8)
    np.savez(tmp_path / "ood.npz", x=pixels)
    ood = load_ood_inputs(tmp_path / "ood.npz", images())
    assert ood.x.shape == (12, 1, 8, 8) and ood.x.dtype == np.float32 and ood.mask is None
    np.testing.assert_allclose(ood.x[:, 0], pixels / 255.0, rtol=1e-6)  # scaled as the data's pixels


@pytest.mark.parametrize(
    ("arrays", "path", "error", "needle"),
    [
        ({"x": np.zeros((MIN_OOD_ROWS - 1, 8, 8))}, "ood.npz", DataFormatError, "needs at least"),
        ({"x": np.zeros((20, 10, 10))}, "ood.npz", DataFormatError, "the data's are 1×8×8"),
        ({"x": np.full((20, 8, 8), np.nan)}, "ood.npz", DataFormatError, "NaN"),
        ({"x": np.zeros((20, 8, 8))}, "ood.csv", ConfigError, ".npz file"),
    ],
)
def test_bad_ood_inputs_are_one_line(tmp_path, arrays, path, error, needle):
    target = tmp_path / path
    np.savez(tmp_path / "ood.npz", **arrays)
    if path != "ood.npz":
        target.write_text("a,b\n1,2\n")
    with pytest.raises(error, match=needle) as caught:
        load_ood_inputs(target, images())
    assert "\n" not in str(caught.value)


def test_graphs_take_no_ood_inputs(tmp_path):
    np.savez(tmp_path / "ood.npz", x=np.zeros((20, 3)))
    graphs = UserData("graph", "classify", None, np.arange(20) % 2, classes=(0, 1), graphs=[])
    with pytest.raises(ConfigError, match="not graph data"):
        load_ood_inputs(tmp_path / "ood.npz", graphs)
