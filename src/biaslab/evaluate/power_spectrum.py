"""The power spectrum: a summary statistic that keeps each Fourier mode's amplitude and drops its phase.

Lecture notes §1 (Modeling unknown functions), "Summary statistics as projections": "much of what
we care about is captured by the *power spectrum* P(k): how much structure exists at each spatial
scale." It "preserves certain information (the amplitude of fluctuations at each scale) while
discarding other information (the phases—where exactly the structures are located)", and it "is
translation-invariant by construction—shifting the field doesn't change P(k)."

For an image x of H x W pixels, its discrete Fourier transform (``numpy.fft.fft2``) is

    F(k) = Σ_n x(n) exp(−2πi (k_y n_y / H + k_x n_x / W)),   k = (k_y, k_x) integers

(wavenumbers in cycles per image, ``numpy.fft.fftfreq`` order), and its 2-D power spectrum

    P(k) = |F(k)|² / (H W),   so that   Σ_k P(k) = Σ_n x(n)²   (Parseval's theorem).

The radially averaged spectrum P(|k|) is the mean of P(k) over the modes whose |k| falls in one
annulus ("binned by |k|"); by default the annuli are one fundamental mode wide, centred on
|k| = 0, 1, 2, ... (the cosmologist's Δk = 2π/L, here 1 cycle per image).

Translation invariance is an identity of the DFT: the image moved circularly by s has
F_s(k) = exp(−2πi k·s / N) F(k), a phase factor of modulus 1, so |F_s(k)| = |F(k)| exactly; only
rounding separates the two spectra computed in floating point. Shifts that are not circular (a
digit moved with blank pixels entering the frame) keep P(k) only as far as the wrapped-around
pixels were blank.

:func:`random_phases` builds the other members of an image's equivalence class ("Infinitely many
cosmological fields share the same power spectrum—they differ only in their phases"):
x̃ = IDFT(|F(k)| e^{iφ(k)}) with φ the phases of the DFT of real white noise. Those phases are
Hermitian-symmetric, φ(−k) = −φ(k), and 0 or π where k = −k (mod the grid), so x̃ is real (its
imaginary part is rounding, dropped) and |F̃(k)| = |F(k)|: the same P(k), another image. The
mean (the k = 0 mode) keeps its own phase, so x̃ keeps x's mean.

:func:`gaussian_random_field` draws fields with P(k) ∝ |k|^(−slope) (white noise filtered in
Fourier space), the notes' "cosmological density field" in two dimensions. :func:`random_rolls`
moves each image circularly by its own offset; :func:`summary_features` turns images into the
inputs of a classifier: pixels, log P(|k|) or log P(k).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "SUMMARIES",
    "gaussian_random_field",
    "power_spectrum_2d",
    "radial_power_spectrum",
    "random_phases",
    "random_rolls",
    "roll_each",
    "summary_features",
    "wavenumbers",
]

SUMMARIES = ("pixels", "radial", "2d")  # what summary_features hands a classifier


def _images(images, least_dims: int = 2) -> np.ndarray:
    x = np.asarray(images, dtype=np.float64)
    if x.ndim < least_dims or min(x.shape[-2:]) < 2:
        raise ValueError(f"images must have shape (..., H, W) with H, W >= 2, got {x.shape}")
    return x


def wavenumbers(shape: tuple[int, int]) -> np.ndarray:
    """|k| = sqrt(k_y² + k_x²) of every mode of an H x W grid, in cycles per image, in
    ``numpy.fft.fft2``'s order (k = 0 at ``[0, 0]``).

    Shapes:
        shape ``(H, W)`` -> ``(H, W)`` float64.
    """
    height, width = shape
    k_y = np.fft.fftfreq(height) * height  # integers 0, 1, ..., -1
    k_x = np.fft.fftfreq(width) * width
    return np.hypot(k_y[:, None], k_x[None, :])


def power_spectrum_2d(images) -> np.ndarray:
    """The 2-D power spectrum P(k) = |F(k)|² / (H W) of each image (module docstring).

    Σ_k P(k) = Σ_n x(n)² (Parseval), and P is unchanged by any circular shift of the image.

    Args:
        images: real images, the last two axes the grid.

    Shapes:
        images ``(..., H, W)`` -> ``(..., H, W)`` float64, in ``numpy.fft.fft2``'s order.
    """
    x = _images(images)
    height, width = x.shape[-2:]
    return np.abs(np.fft.fft2(x)) ** 2 / (height * width)


def _radial_edges(shape: tuple[int, int], bins) -> np.ndarray:
    k_max = float(wavenumbers(shape).max())
    if bins is None:  # annuli one mode wide, centred on |k| = 0, 1, 2, ...: [0, ½), [½, 3/2), ...
        return np.r_[0.0, np.arange(int(np.floor(k_max + 0.5)) + 1) + 0.5]
    if isinstance(bins, (int, np.integer)):
        if bins < 1:
            raise ValueError(f"bins must be >= 1, got {bins}")
        edges = np.linspace(0.0, k_max, int(bins) + 1)
        edges[-1] = np.nextafter(k_max, np.inf)  # the largest |k| falls in the last annulus
        return edges
    edges = np.asarray(bins, dtype=np.float64)
    if edges.ndim != 1 or len(edges) < 2 or not np.all(np.diff(edges) > 0):
        raise ValueError("bins given as edges must be 2 or more increasing numbers")
    return edges


def radial_power_spectrum(images, bins: int | Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The radially averaged power spectrum P(|k|): the mean of P(k) over each annulus of |k|.

    Args:
        images: real images, the last two axes the grid.
        bins: ``None`` (default): annuli one mode wide, centred on |k| = 0, 1, 2, ... up to the
            largest |k| of the grid (21 annuli for 28 x 28, the last holding the corner modes);
            an int n: n annuli of equal width from 0 to the largest |k|; or the edges of the
            annuli (increasing; a mode belongs to [edge_j, edge_j+1), modes outside are left out).

    Returns:
        ``(k, power)``: the mean |k| of the modes in each annulus, and P(|k|) of each image.

    Raises:
        ValueError: an annulus holds no mode of the grid.

    Shapes:
        images ``(..., H, W)`` -> k ``(B,)``, power ``(..., B)`` float64.
    """
    x = _images(images)
    shape = x.shape[-2:]
    k = wavenumbers(shape).ravel()  # (H W,)
    edges = _radial_edges(shape, bins)
    which = np.digitize(k, edges) - 1  # annulus of each mode; -1 or B: outside the edges
    inside = (which >= 0) & (which < len(edges) - 1)
    counts = np.bincount(which[inside], minlength=len(edges) - 1)  # (B,)
    if np.any(counts == 0):
        empty = int(np.flatnonzero(counts == 0)[0])
        raise ValueError(
            f"the annulus {edges[empty]:.3g} <= |k| < {edges[empty + 1]:.3g} holds no mode of the "
            f"{shape[0]} x {shape[1]} grid: use wider bins"
        )
    onto = np.zeros((len(k), len(counts)))  # (H W, B): averages each annulus's modes
    onto[np.flatnonzero(inside), which[inside]] = 1.0 / counts[which[inside]]
    power = power_spectrum_2d(x).reshape(*x.shape[:-2], -1)  # (..., H W)
    return k @ onto, power @ onto


def random_phases(images, seed: int) -> np.ndarray:
    """Each image with its Fourier amplitudes |F(k)| kept and new random phases: the same P(k),
    another image (module docstring).

    The phases are those of the DFT of real Gaussian white noise (one draw per image), which are
    Hermitian-symmetric, so the result is real up to rounding (its imaginary part is dropped);
    the k = 0 mode keeps the image's own phase, so the mean is kept.

    Args:
        images: real images, the last two axes the grid.
        seed: seeds the noise (``numpy.random.default_rng``); the same seed, the same phases.

    Shapes:
        images ``(..., H, W)`` -> ``(..., H, W)`` float64.
    """
    x = _images(images)
    spectrum = np.fft.fft2(x)
    noise = np.fft.fft2(np.random.default_rng(seed).standard_normal(x.shape))
    phase = noise / np.maximum(np.abs(noise), np.finfo(np.float64).tiny)  # e^{iφ(k)}, |.| = 1
    phase[..., 0, 0] = np.where(spectrum[..., 0, 0].real < 0, -1.0, 1.0)  # the mean's own sign
    return np.fft.ifft2(np.abs(spectrum) * phase).real


def gaussian_random_field(count: int, size: int, slope: float, seed: int) -> np.ndarray:
    """``count`` periodic Gaussian random fields of ``size`` x ``size`` pixels with
    E[P(k)] ∝ |k|^(−slope) (and no k = 0 mode: zero mean): white noise whose DFT is multiplied by
    |k|^(−slope/2), a real and symmetric filter, so the field stays real.

    Shapes:
        -> ``(count, size, size)`` float64, each field scaled to unit standard deviation.
    """
    if count < 1 or size < 2:
        raise ValueError(f"count must be >= 1 and size >= 2, got count={count}, size={size}")
    k = wavenumbers((size, size))
    gain = np.zeros_like(k)
    gain[k > 0] = k[k > 0] ** (-slope / 2)
    noise = np.random.default_rng(seed).standard_normal((count, size, size))
    fields = np.fft.ifft2(np.fft.fft2(noise) * gain).real
    return fields / fields.std(axis=(-2, -1), keepdims=True)


def roll_each(images, offsets) -> np.ndarray:
    """Image i moved circularly by its own whole-pixel offset ``offsets[i] = (dx_i, dy_i)``
    (``dx`` right, ``dy`` down): what leaves one side enters at the other, as ``np.roll`` does.

    Shapes:
        images ``(N, H, W)``, offsets ``(N, 2)`` integers -> ``(N, H, W)``.
    """
    x = np.asarray(images)
    offsets = np.asarray(offsets, dtype=np.int64)
    if x.ndim != 3 or offsets.shape != (len(x), 2):
        raise ValueError(f"images (N, H, W) and offsets (N, 2), got {x.shape} and {offsets.shape}")
    height, width = x.shape[1:]
    rows = (np.arange(height)[None, :] - offsets[:, 1:2]) % height  # (N, H): out row r <- row r - dy
    cols = (np.arange(width)[None, :] - offsets[:, 0:1]) % width  # (N, W)
    return x[np.arange(len(x))[:, None, None], rows[:, :, None], cols[:, None, :]]


def random_rolls(images, max_shift: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each image moved circularly by ``(dx, dy)`` drawn uniformly from ``-max_shift..max_shift``
    (seeded, ``numpy.random.default_rng``): ``(moved, offsets)``.

    Shapes:
        images ``(N, H, W)`` -> moved ``(N, H, W)``, offsets ``(N, 2)`` int64.
    """
    if max_shift < 0:
        raise ValueError(f"max_shift must be >= 0, got {max_shift}")
    offsets = np.random.default_rng(seed).integers(-max_shift, max_shift + 1, (len(images), 2))
    return roll_each(images, offsets), offsets


def summary_features(images, summary: str, floor: float = 1e-6) -> np.ndarray:
    """What a classifier of one summary sees of each image, as float32 rows.

    * ``"pixels"``: the image itself, flattened (H W values);
    * ``"radial"``: log(P(|k|) + floor) over the default annuli (:func:`radial_power_spectrum`,
      21 values for 28 x 28): the notes' P(k), how much structure at each scale;
    * ``"2d"``: log(P(k) + floor) of every mode (H W values): the amplitudes with their
      directions, still without a phase.

    Both spectra are invariant under circular shifts; ``floor`` (in the units of P for images of
    pixels in [0, 1]) keeps the logarithm of a mode without power finite.

    Shapes:
        images ``(N, H, W)`` -> ``(N, F)`` float32.
    """
    x = _images(images)
    if summary == "pixels":
        rows = x.reshape(len(x), -1)
    elif summary == "radial":
        rows = np.log(radial_power_spectrum(x)[1] + floor)
    elif summary == "2d":
        rows = np.log(power_spectrum_2d(x).reshape(len(x), -1) + floor)
    else:
        raise ValueError(f"summary must be one of {SUMMARIES}, got {summary!r}")
    return rows.astype(np.float32)
