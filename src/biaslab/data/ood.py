"""Out-of-distribution images for an MNIST classifier: Animal-MNIST, Fashion-MNIST, noise, inverted digits.

Every set is a uint8 array (N, 28, 28) like MNIST's: 0 is the black background, 255 a white stroke;
:func:`images_to_tensor` turns one into float32 in [0, 1] shaped as :func:`mnist_splits` shapes MNIST.

Animal-MNIST comes from the PyPI package ``animal-mnist==0.4``: ``biaslab data fetch animal-mnist``
downloads its wheel and caches the images, or install it with ``--no-deps`` (its loader imports
TensorFlow). The package is never imported: its file ``animal_data_version_3.gz`` is found with
:func:`importlib.util.find_spec` and read without unpickling: its opcodes are checked to be NumPy's
pickle of one plain array and the array is built from the raw bytes (:func:`read_pickled_array`).
The first load caches the array as ``<data_dir()>/animal-mnist.npz`` (uncompressed); later loads read
that cache.

Fashion-MNIST is in no installable package: ``biaslab data fetch fashion-mnist`` downloads the
official IDX files into the cache ``<data_dir()>/fashion-mnist-raw.npz`` (MNIST's layout), and the
OOD labs use it whenever it is there; a folder of IDX files a user has works too.

:func:`ood_sets` gives the lab's sets by name (Animal-MNIST, Gaussian and uniform noise, inverted
digits, and Fashion-MNIST whenever fetched); :func:`ood_pool` is what ``decision``'s detector must
flag (Animal-MNIST, then Fashion-MNIST when fetched); :func:`count_duplicates`. A missing set's
message names ``biaslab data fetch NAME`` (or the pip command).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import torch

from biaslab.data.mnist import read_cache, read_idx
from biaslab.data.pickled_array import read_pickled_array
from biaslab.data.store import atomic_save_npz, data_dir, load_npz
from biaslab.errors import BiaslabError, DataFormatError, DataMissingError

__all__ = [
    "check_animal_mnist",
    "count_duplicates",
    "fashion_mnist_fetched",
    "gaussian_noise",
    "images_to_tensor",
    "inverted",
    "load_animal_mnist",
    "load_fashion_mnist",
    "ood_pool",
    "ood_sets",
    "read_pickled_array",
    "uniform_noise",
]

ANIMAL_PIP_HINT = "pip install --no-deps animal-mnist==0.4"
ANIMAL_MISSING = f"Animal-MNIST is missing: run `biaslab data fetch animal-mnist` (or {ANIMAL_PIP_HINT})"
ANIMAL_CACHE_NAME = "animal-mnist.npz"
ANIMAL_FILE = ("data", "Animal_MNIST", "animal_data_version_3.gz")
N_ANIMAL_IMAGES = 10_000
FASHION_TEST_IMAGES = "t10k-images-idx3-ubyte"
FASHION_CACHE_NAME = "fashion-mnist-raw.npz"  # written by `biaslab data fetch fashion-mnist`
FASHION_MISSING = "Fashion-MNIST is missing: run `biaslab data fetch fashion-mnist`"


def _check_images(images: np.ndarray, where: str) -> np.ndarray:
    """``images`` if it is uint8 (N, 28, 28), else a one-line DataFormatError."""
    if not isinstance(images, np.ndarray):
        raise DataFormatError(f"{where} is a {type(images).__name__}, expected a uint8 array (N, 28, 28)")
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise DataFormatError(f"{where} is {images.dtype} {images.shape}, expected uint8 (N, 28, 28)")
    return images


# ----------------------------------------------------------------------------- Animal-MNIST


def _animal_file() -> Path:
    """``animal_data_version_3.gz`` of the installed ``animal_mnist`` package, found without importing it."""
    try:
        spec = importlib.util.find_spec("animal_mnist")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location).joinpath(*ANIMAL_FILE)
        if path.is_file():
            return path
    raise DataMissingError(ANIMAL_MISSING)


def check_animal_mnist() -> None:
    """Raise a one-line DataMissingError unless Animal-MNIST can be loaded (cache or data package)."""
    if not (data_dir() / ANIMAL_CACHE_NAME).is_file():
        _animal_file()


def load_animal_mnist(
    cache_dir: str | os.PathLike | None = None, source: str | os.PathLike | None = None
) -> np.ndarray:
    """Load Animal-MNIST's 10,000 animal outlines, caching them on first use.

    Args:
        cache_dir: folder of the cache ``animal-mnist.npz``; default :func:`data_dir`.
        source: a gzipped pickle of a uint8 (N, 28, 28) array; default the package's
            ``animal_data_version_3.gz``. A cache made from another source is rebuilt; with the
            default, any existing cache is used (the package is then not needed).

    Returns:
        uint8 (10000, 28, 28): white outlines (255) on black (0). Of the 10,000 images, 284 are
        exact copies of an earlier one (:func:`count_duplicates`); they are kept, in file order.

    Raises:
        DataMissingError: no cache (``biaslab data fetch animal-mnist`` writes it) and
            ``animal-mnist`` is not installed.
        DataFormatError: the file or the cache is malformed.
    """
    cache = (Path(cache_dir).expanduser() if cache_dir is not None else data_dir()) / ANIMAL_CACHE_NAME
    wanted = str(Path(source).expanduser().resolve()) if source is not None else None
    if cache.is_file():
        arrays = load_npz(cache)
        if "images" not in arrays:
            raise DataFormatError(f"{cache} lacks the array images; delete it so it is rebuilt")
        if wanted is None or str(arrays.get("source", "")) == wanted:
            return _check_images(arrays["images"], str(cache))
    path = Path(wanted) if wanted is not None else _animal_file()
    images = _check_images(read_pickled_array(path), str(path))
    if source is None and len(images) != N_ANIMAL_IMAGES:
        raise DataFormatError(f"{path} holds {len(images)} images, expected {N_ANIMAL_IMAGES}")
    atomic_save_npz(cache, compress=False, images=images, source=np.array(str(path.resolve())))
    return images


def count_duplicates(images: np.ndarray) -> int:
    """The number of images that are exact (bit-for-bit) copies of an earlier image in ``images``."""
    return len(images) - len({np.ascontiguousarray(image).tobytes() for image in images})


# ----------------------------------------------------------------------------- Fashion-MNIST


def fashion_mnist_fetched() -> bool:
    """Whether ``biaslab data fetch fashion-mnist`` has written its cache in :func:`data_dir`."""
    return (data_dir() / FASHION_CACHE_NAME).is_file()


def load_fashion_mnist(folder: str | os.PathLike | None = None) -> np.ndarray:
    """The 10,000 Fashion-MNIST test images: from the fetched cache, or a folder of IDX files.

    Args:
        folder: a folder holding the official ``t10k-images-idx3-ubyte`` (or ``...ubyte.gz``;
            github.com/zalandoresearch/fashion-mnist); only that file is read, for all four
            files with labels use :func:`biaslab.data.mnist.load_idx_dataset`. Default: the
            cache ``biaslab data fetch fashion-mnist`` wrote in :func:`data_dir`.

    Returns:
        uint8 (N, 28, 28), white garments on black like MNIST.

    Raises:
        DataMissingError: no cache (the message names the fetch command), or the folder lacks
            the test-image file.
        DataFormatError: the file or the cache is malformed or not uint8 (N, 28, 28).
    """
    if folder is None:
        cache = data_dir() / FASHION_CACHE_NAME
        if not cache.is_file():
            raise DataMissingError(FASHION_MISSING)
        return _check_images(read_cache(cache).x_test, str(cache))
    folder = Path(folder).expanduser()
    try:
        if not folder.is_dir():
            raise DataMissingError(f"Fashion-MNIST: {folder} is not a folder")
        for name in (FASHION_TEST_IMAGES, FASHION_TEST_IMAGES + ".gz"):
            if (folder / name).is_file():
                return _check_images(read_idx(folder / name), str(folder / name))
    except OSError as exc:  # a name too long for the file system, a folder that cannot be read
        raise DataMissingError(f"Fashion-MNIST: cannot read {folder} ({exc.strerror or exc})") from None
    raise DataMissingError(
        f"Fashion-MNIST: {folder} lacks {FASHION_TEST_IMAGES} (or {FASHION_TEST_IMAGES}.gz); "
        "download the official IDX files into it"
    )


def ood_pool() -> np.ndarray:
    """The images an OOD detector must flag: Animal-MNIST's 10,000 (:func:`load_animal_mnist`),
    followed by Fashion-MNIST's 10,000 test images when fetched (:func:`fashion_mnist_fetched`).

    Returns:
        uint8 (10000, 28, 28), or (20000, 28, 28) with Fashion-MNIST; Animal-MNIST's rows first.
    """
    animals = load_animal_mnist()
    return np.concatenate([animals, load_fashion_mnist()]) if fashion_mnist_fetched() else animals


# ----------------------------------------------------------------------------- synthetic sets


def gaussian_noise(n: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    """``n`` images of independent pixels N(0.5, 0.25²)·255, rounded and clipped to 0..255 (uint8)."""
    pixels = np.random.default_rng(seed).normal(0.5, 0.25, size=(n, 28, 28)) * 255.0
    return np.clip(np.rint(pixels), 0, 255).astype(np.uint8)


def uniform_noise(n: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    """``n`` images of independent pixels uniform on 0..255 (uint8)."""
    return np.random.default_rng(seed).integers(0, 255, size=(n, 28, 28), dtype=np.uint8, endpoint=True)


def inverted(images: np.ndarray) -> np.ndarray:
    """``255 - images``: black strokes on a white background (a new uint8 array)."""
    return 255 - _check_images(images, "the images to invert")


def images_to_tensor(images: np.ndarray, flatten: bool = True) -> torch.Tensor:
    """uint8 (N, 28, 28) -> float32 in [0, 1], (N, 784) or with ``flatten=False`` (N, 1, 28, 28)."""
    images = _check_images(images, "the images")
    shape = (len(images), 28 * 28) if flatten else (len(images), 1, 28, 28)
    return torch.from_numpy(images.reshape(shape).astype(np.float32) / np.float32(255.0))


def ood_sets(
    mnist_test_images: np.ndarray,
    n: int,
    seed: int,
    fashion_folder: str | os.PathLike | None = None,
) -> dict[str, np.ndarray]:
    """The out-of-distribution sets of the lab, ``n`` uint8 (n, 28, 28) images each, by name.

    Keys, in this order:
        ``"animal-mnist"``: the first ``n`` Animal-MNIST images (:func:`load_animal_mnist`).
        ``"gaussian-noise"``, ``"uniform-noise"``: :func:`gaussian_noise`, :func:`uniform_noise`
            seeded by the two children of ``np.random.SeedSequence(seed).spawn(2)`` (independent
            streams; so they differ from ``gaussian_noise(n, seed)`` called directly).
        ``"inverted-mnist"``: the first ``n`` of ``mnist_test_images``, inverted (:func:`inverted`).
        ``"fashion-mnist"``: the first ``n`` Fashion-MNIST test images (:func:`load_fashion_mnist`),
            from ``fashion_folder`` when given, else from the fetched cache when it is there
            (:func:`fashion_mnist_fetched`); without either, no such key.

    Raises:
        BiaslabError: ``n`` is below 1 or above the images a set has.
        DataMissingError: Animal-MNIST (or the Fashion-MNIST file) is not available.
    """
    mnist_test_images = _check_images(mnist_test_images, "mnist_test_images")
    gauss_seed, uniform_seed = np.random.SeedSequence(seed).spawn(2)
    sources = {"animal-mnist": load_animal_mnist(), "inverted-mnist": mnist_test_images}
    if fashion_folder is not None or fashion_mnist_fetched():
        sources["fashion-mnist"] = load_fashion_mnist(fashion_folder)
    for name, images in sources.items():
        if not 1 <= n <= len(images):
            raise BiaslabError(f"n must be in 1..{len(images)} ({name} has {len(images)} images), got {n}")
    sets = {
        "animal-mnist": sources["animal-mnist"][:n],
        "gaussian-noise": gaussian_noise(n, gauss_seed),
        "uniform-noise": uniform_noise(n, uniform_seed),
        "inverted-mnist": inverted(mnist_test_images[:n]),
    }
    if "fashion-mnist" in sources:
        sets["fashion-mnist"] = sources["fashion-mnist"][:n]
    return sets
