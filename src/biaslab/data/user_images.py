"""Reading a folder of images, one subfolder per class, for ``biaslab compare`` (and the images
to predict, :func:`read_image_files`, as those were read).

Each image is checked from its header before it is decoded (Pillow opens lazily: its size and mode
first): at most ``MAX_IMAGE_PIXELS`` pixels, one size for all, the whole set within the free memory;
then decoded, stacked and scaled to [0, 1] as (N, C, H, W) float32
(:func:`~biaslab.data.user_arrays.to_unit_range`, whose rule ``pixel_range`` keeps).
Pillow's warnings never print: a decompression bomb is refused in one line, others become a note.
Pillow is imported only here, when a folder is read.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np

from biaslab.data.user_arrays import to_unit_range
from biaslab.data.user_formats import Loaded, check_memory_for, listed, reason, where
from biaslab.errors import ConfigError, DataFormatError, DataMissingError
from biaslab.formatting import quoted

__all__ = ["IMAGE_SUFFIXES", "MAX_IMAGE_PIXELS", "read_image_files", "read_image_folder"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
MAX_IMAGE_PIXELS = 89_478_485  # Pillow's default decompression-bomb limit, whatever Pillow's is set to
BYTES_PER_PIXEL = 30  # up to 3 channels of: the decoded image, the stacked uint8, two float32 copies
GRAY_MODES = ("1", "L", "LA", "I", "I;16", "F")  # Pillow modes read as one channel


def read_image_folder(path: Path, kind: str | None, image_size: tuple[int, int] | None) -> Loaded:
    """A folder with one subfolder per class of PNG / JPEG images (subfolder name = class).

    Grayscale images give C = 1; any color image makes every image RGB (C = 3, alpha dropped).

    Guaranteed before any image is decoded (from the headers alone): no image has more than
    ``MAX_IMAGE_PIXELS`` pixels, the images share a size (or ``image_size`` is given) and they fit
    in memory (:func:`check_memory_for`, ``BYTES_PER_PIXEL`` each). No warning of Pillow's is
    printed: a decompression bomb is refused, any other warning is counted in the notes.

    Raises:
        ConfigError: a kind other than ``image``.
        DataFormatError: no class subfolder with images, an unreadable image, one of too many
            pixels, images of mixed sizes without ``image_size`` (naming two files and their
            sizes), images too many for the free memory.
        DataMissingError: Pillow is not installed.
    """
    if kind not in (None, "image"):
        raise ConfigError(
            f"kind '{kind}' contradicts {where(path)}: a folder is read as images, one subfolder per class"
        )
    Image = _pillow(path)
    files, labels, notes = _image_files(path)
    notes.insert(0, "kind image: a folder of class subfolders")
    choose = lambda headers: _common_mode(path, files, headers, image_size, notes)  # noqa: E731
    x = _decoded_all(Image, files, choose, image_size, notes)
    if image_size is not None:
        notes.append(f"images resized to {image_size[0]}×{image_size[1]} (bilinear)")
    x, rule = to_unit_range(x, notes)
    return Loaded("image", x, np.array(labels, dtype=object), notes=notes, pixel_range=rule)


def read_image_files(
    files: list[Path], root: Path, channels: int, size: tuple[int, int], notes: list[str]
) -> np.ndarray:
    """Images to predict (``root``: their folder, for messages), read as a folder's training
    images were: each checked from its header (at most ``MAX_IMAGE_PIXELS`` pixels, the training's
    ``size`` (H, W), all within the free memory) before any is decoded, then decoded in the
    training's ``channels`` (1: grayscale ``L``, 3: ``RGB``, 4: ``RGBA``; the images converted
    are counted in ``notes``), unscaled.

    Shapes:
        returns (M, channels, H, W) uint8 for M ``files``.

    Raises:
        DataFormatError: an unreadable image, one of too many pixels or of another size than
            ``size`` (naming it), images too many for the free memory.
        DataMissingError: Pillow is not installed.
    """
    Image = _pillow(root)
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]

    def choose(headers: list) -> str:
        for file, ((width, height), _) in zip(files, headers):
            if (height, width) != tuple(size):
                raise DataFormatError(
                    f"{where(file)}: images are {height}×{width}; the model was trained on "
                    f"{size[0]}×{size[1]} images (height×width): resize them"
                )
        check_memory_for(
            f"the {len(files):,} images of {where(root)}", BYTES_PER_PIXEL * len(files) * size[0] * size[1]
        )
        switched = sum((m in GRAY_MODES) != (channels == 1) for _, m in headers)
        if switched:
            to = "grayscale" if channels == 1 else "color"
            notes.append(f"{switched} images converted to {to} ({mode}), the training images' channels")
        return mode

    return _decoded_all(Image, files, choose, None, notes)


def _pillow(path: Path):
    """Pillow's ``Image`` module, or one line naming its pip command."""
    if importlib.util.find_spec("PIL") is None:
        raise DataMissingError(f"reading the images of {where(path)} needs Pillow: pip install pillow")
    from PIL import Image

    return Image


def _decoded_all(Image, files: list[Path], choose, image_size, notes: list[str]) -> np.ndarray:
    """Every file decoded in the mode ``choose`` (headers -> mode) picks after reading every
    header, as (N, C, H, W) uint8: no warning of Pillow's is printed (a decompression bomb is
    refused, any other is counted in ``notes``)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("error", Image.DecompressionBombWarning)  # raised, then refused
        headers = [_image_header(Image, file) for file in files]
        mode = choose(headers)
        images = [_decoded(Image, file, mode, image_size) for file in files]
    if caught:
        times = "once" if len(caught) == 1 else f"{len(caught)} times"
        notes.append(f"Pillow warned {times} (first: {quoted(str(caught[0].message), 80)})")
    x = np.stack(images)
    return x[:, None] if x.ndim == 3 else np.moveaxis(x, -1, 1)


def _image_header(Image, file: Path) -> tuple[tuple[int, int], str]:
    """An image's (width, height) and Pillow mode, from its header (nothing decoded); one line
    for an unreadable file or one of more than ``MAX_IMAGE_PIXELS`` pixels."""
    try:
        with Image.open(file) as image:
            size, mode = image.size, image.mode
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise DataFormatError(f"{where(file)} is refused as a decompression bomb: {reason(exc)}") from None
    except Exception as exc:  # Pillow's format plugins raise many types on corrupt headers
        raise DataFormatError(f"{where(file)} cannot be read as an image: {quoted(str(exc), 80)}") from None
    (width, height), pixels = size, size[0] * size[1]
    if pixels > MAX_IMAGE_PIXELS:
        raise DataFormatError(
            f"{where(file)} is {height}×{width} (height×width), {pixels:,} pixels, more than the "
            f"{MAX_IMAGE_PIXELS:,} an image may have; shrink it"
        )
    return size, mode


def _common_mode(path: Path, files: list[Path], headers: list, image_size, notes: list[str]) -> str:
    """The mode every image is read in (``L`` when all are grayscale, else ``RGB``), after the
    checks of the headers together: one size (or ``image_size``), and memory for them all."""
    sizes = [size for size, _ in headers]
    if image_size is None and len(set(sizes)) > 1:
        other = next(i for i, size in enumerate(sizes) if size != sizes[0])
        (w0, h0), (w1, h1) = sizes[0], sizes[other]
        first, second = (where(files[i].relative_to(path)) for i in (0, other))
        raise DataFormatError(
            f"images in {where(path)} differ in size: {first} is {h0}×{w0}, {second} is {h1}×{w1} "
            "(height×width); pass image_size=(H, W) to resize them"
        )
    pixels = len(sizes) * image_size[0] * image_size[1] if image_size else sum(w * h for w, h in sizes)
    hint = "" if image_size else "pass image_size=(H, W) to shrink them, or use fewer images"
    check_memory_for(f"the {len(files):,} images of {where(path)}", BYTES_PER_PIXEL * pixels, hint)
    gray = [mode in GRAY_MODES for _, mode in headers]
    if all(gray):
        return "L"
    if any(gray):
        notes.append("grayscale images converted to RGB (the folder mixes both)")
    return "RGB"


def _decoded(Image, file: Path, mode: str, image_size: tuple[int, int] | None) -> np.ndarray:
    """One image decoded as ``mode`` (grayscale through ``L``), resized to ``image_size`` (H, W)
    when given: (H, W) or (H, W, 3) uint8."""
    try:
        with Image.open(file) as image:
            image.load()
            read = image.convert("L") if image.mode in GRAY_MODES else image.convert("RGB")
        if read.mode != mode:
            read = read.convert(mode)
        if image_size is not None:
            read = read.resize((image_size[1], image_size[0]), Image.Resampling.BILINEAR)
        return np.asarray(read)
    except Exception as exc:  # Pillow's decoders raise many types on corrupt data
        raise DataFormatError(f"{where(file)} cannot be read as an image: {quoted(str(exc), 80)}") from None


def _image_files(path: Path) -> tuple[list[Path], list[str], list[str]]:
    """The PNG / JPEG files of each class subfolder (sorted), their class names, and notes on what
    was passed over (hidden entries are skipped silently)."""
    files, labels, skipped, empty = [], [], 0, []
    for folder in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
        before = len(files)
        for file in sorted(folder.iterdir()):
            if file.name.startswith("."):
                continue
            if file.is_file() and file.suffix.lower() in IMAGE_SUFFIXES:
                files.append(file)
                labels.append(folder.name)
            else:
                skipped += 1
        if len(files) == before:
            empty.append(folder.name)
    if not files:
        raise DataFormatError(
            f"{where(path)} holds no class subfolders of images ({', '.join(IMAGE_SUFFIXES)}); "
            "put each class's images in a subfolder named after the class"
        )
    notes = []
    if skipped:
        notes.append(f"passed over {skipped} entries that are not {'/'.join(IMAGE_SUFFIXES)} files")
    if empty:
        notes.append(f"subfolders without images, not classes: {listed(empty)}")
    return files, labels, notes
