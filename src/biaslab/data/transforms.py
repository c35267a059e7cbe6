"""Tensor transforms written with torch alone (no torchvision).

:func:`standardize` (training-set statistics only; ``in_place=True`` for tensors nobody else holds,
bit-identical), :func:`translate` (whole pixels, a ``fill`` value), :func:`translations` (right,
left, down, up: ``SHIFT_DIRECTIONS``), :func:`jitter` and :func:`translate_each` (each image its own
offset; jitter's seeded, up to ``max_shift``), :func:`rotate` (``affine_grid`` / ``grid_sample``)
and :func:`corrupt_labels`.
"""

from __future__ import annotations

import dataclasses
import math

import torch


def standardize(splits, eps: float = 1e-8, *, in_place: bool = False):
    """Shift and scale every input split by the *training* set's mean and standard deviation.

    Returns ``(new_splits, (mean, std))``. Statistics come from ``x_train`` only, so neither
    the validation nor the test set influences any choice. ``in_place=True`` overwrites the
    splits' tensors instead of allocating new ones, with the same result bit for bit (for
    MNIST's training split 0.1 s instead of 0.4-0.8 s here); only for tensors nobody else holds.
    """
    mean = splits.x_train.mean()
    std = splits.x_train.std().clamp_min(eps)
    keys = ("x_train", "x_val", "x_test")
    if in_place:
        for key in keys:
            getattr(splits, key).sub_(mean).div_(std)
        return splits, (float(mean), float(std))
    scaled = {k: (getattr(splits, k) - mean) / std for k in keys}
    return dataclasses.replace(splits, **scaled), (float(mean), float(std))


def translate(images: torch.Tensor, dx: int = 0, dy: int = 0, fill: float = 0.0) -> torch.Tensor:
    """Shift images by whole pixels, ``dx`` to the right and ``dy`` down, filling with ``fill``
    (default 0; a blank pixel's value for standardized images).

    Not cyclic: what leaves the frame is lost, as when a digit is written off-centre. (The
    symmetry verifier's ``cyclic_shift`` is the wrap-around version, under which circular
    convolution is exactly equivariant.)

    Shapes:
        images ``(..., H, W)`` -> the same shape.
    """
    height, width = images.shape[-2:]
    out = torch.full_like(images, fill)
    if abs(dx) >= width or abs(dy) >= height:
        return out
    rows_to, rows_from = slice(max(dy, 0), height + min(dy, 0)), slice(max(-dy, 0), height - max(dy, 0))
    cols_to, cols_from = slice(max(dx, 0), width + min(dx, 0)), slice(max(-dx, 0), width - max(dx, 0))
    out[..., rows_to, cols_to] = images[..., rows_from, cols_from]
    return out


SHIFT_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1))  # (dx, dy): right, left, down, up


def translations(images: torch.Tensor, shift: int, fill: float = 0.0) -> list[torch.Tensor]:
    """The images moved ``shift`` whole pixels right, left, down and up (:data:`SHIFT_DIRECTIONS`),
    by :func:`translate` with ``fill``: a robustness curve averages a model's accuracy over them.

    Shapes:
        images ``(..., H, W)`` -> four tensors of the same shape.
    """
    return [translate(images, dx * shift, dy * shift, fill) for dx, dy in SHIFT_DIRECTIONS]


def jitter(images: torch.Tensor, max_shift: int, seed: int, fill: float = 0.0) -> torch.Tensor:
    """Shift each image by its own random whole-pixel offset: ``dx`` and ``dy`` drawn uniformly
    from ``-max_shift..max_shift`` (seeded), as digits written anywhere near the centre.

    Args:
        images: ``(N, ..., H, W)``.
        max_shift: the largest shift along each axis, in pixels (>= 0).
        seed: seeds the offsets (``torch.Generator``); the same seed gives the same offsets.
        fill: the value of the pixels that enter the frame (as in :func:`translate`).

    Shapes:
        images ``(N, ..., H, W)`` -> the same shape.
    """
    if max_shift < 0:
        raise ValueError(f"max_shift must be >= 0, got {max_shift}")
    generator = torch.Generator().manual_seed(seed)
    offsets = torch.randint(-max_shift, max_shift + 1, (len(images), 2), generator=generator)  # (N, 2)
    return translate_each(images, offsets, fill)


def translate_each(images: torch.Tensor, offsets: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
    """Image i shifted by its own whole-pixel offset ``offsets[i] = (dx_i, dy_i)``, as
    :func:`translate` does (``dx`` right, ``dy`` down, ``fill`` entering the frame).

    Shapes:
        images ``(N, ..., H, W)``, offsets ``(N, 2)`` integers -> images' shape.
    """
    if offsets.shape != (len(images), 2):
        raise ValueError(f"offsets must have shape ({len(images)}, 2), got {tuple(offsets.shape)}")
    out = torch.empty_like(images)
    for dx, dy in torch.unique(offsets, dim=0).tolist():
        rows = ((offsets[:, 0] == dx) & (offsets[:, 1] == dy)).nonzero().squeeze(1)  # (n_offset,)
        out[rows] = translate(images[rows], dx, dy, fill)
    return out


def rotate(images: torch.Tensor, degrees: float, fill: float = 0.0) -> torch.Tensor:
    """Rotate images counter-clockwise by ``degrees`` about their centre (bilinear, ``fill``
    outside the frame), with ``torch.nn.functional.affine_grid`` / ``grid_sample``.

    Shapes:
        images ``(N, C, H, W)`` (or ``(N, H, W)``) -> the same shape.
    """
    squeeze = images.dim() == 3
    x = images.unsqueeze(1) if squeeze else images  # (N, C, H, W)
    angle = math.radians(degrees)
    cos, sin = math.cos(angle), math.sin(angle)
    # grid_sample maps output to input coordinates: the inverse rotation, in normalised [-1, 1]
    # coordinates (x right, y down; a counter-clockwise turn on screen is clockwise in (x, y)).
    theta = torch.tensor([[cos, -sin, 0.0], [sin, cos, 0.0]], dtype=x.dtype).expand(len(x), 2, 3)
    grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
    out = torch.nn.functional.grid_sample(
        x - fill, grid, mode="bilinear", padding_mode="zeros", align_corners=False
    )
    out = out + fill
    return out.squeeze(1) if squeeze else out


def corrupt_labels(y: torch.Tensor, fraction: float, n_classes: int, seed: int) -> torch.Tensor:
    """Replace a random ``fraction`` of the labels by labels drawn uniformly from all classes.

    A replaced label equals the true one with probability 1/n_classes, so about
    ``fraction * (1 - 1/n_classes)`` of the labels end up wrong. Returns a new tensor.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    gen = torch.Generator().manual_seed(seed)
    hit = torch.rand(len(y), generator=gen) < fraction
    noisy = y.clone()
    noisy[hit] = torch.randint(0, n_classes, (int(hit.sum()),), generator=gen, dtype=y.dtype)
    return noisy
