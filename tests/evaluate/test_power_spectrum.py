"""Tests for biaslab.evaluate.power_spectrum against references: the DFT summed by hand and
SciPy's FFT, Parseval's theorem, the radial average by a loop over the modes, np.roll."""

import numpy as np
import pytest
import scipy.fft

from biaslab.evaluate.power_spectrum import (
    gaussian_random_field,
    power_spectrum_2d,
    radial_power_spectrum,
    random_phases,
    random_rolls,
    roll_each,
    summary_features,
    wavenumbers,
)


def images(*shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape)


def dft_by_hand(x: np.ndarray) -> np.ndarray:
    """F(k) = Σ_n x(n) exp(−2πi (k_y n_y / H + k_x n_x / W)), summed term by term."""
    height, width = x.shape
    out = np.zeros((height, width), dtype=complex)
    for k_y in range(height):
        for k_x in range(width):
            for n_y in range(height):
                for n_x in range(width):
                    out[k_y, k_x] += x[n_y, n_x] * np.exp(
                        -2j * np.pi * (k_y * n_y / height + k_x * n_x / width)
                    )
    return out


def test_the_power_spectrum_is_the_squared_dft_over_the_pixel_count():
    x = images(5, 6)
    expected = np.abs(dft_by_hand(x)) ** 2 / 30
    np.testing.assert_allclose(power_spectrum_2d(x), expected, rtol=1e-12, atol=1e-14)


def test_parseval_the_power_sums_to_the_energy_for_any_batch_shape():
    x = images(2, 3, 28, 20)
    power = power_spectrum_2d(x)
    assert power.shape == x.shape
    np.testing.assert_allclose(power.sum(axis=(-2, -1)), (x**2).sum(axis=(-2, -1)), rtol=1e-12)


def test_wavenumbers_are_the_integer_frequencies_in_fft_order():
    k = wavenumbers((4, 6))
    assert k[0, 0] == 0 and k[0, 1] == 1 and k[1, 0] == 1 and k[0, 5] == 1  # fftfreq: 0, 1, 2, -3, -2, -1
    assert k[2, 3] == pytest.approx(np.hypot(2, 3)) and k[3, 4] == pytest.approx(np.hypot(1, 2))


def radial_by_loop(x: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean power over each annulus [edge_j, edge_j+1), mode by mode."""
    height, width = x.shape
    power = np.abs(scipy.fft.fft2(x)) ** 2 / x.size
    sums, ks, counts = np.zeros(len(edges) - 1), np.zeros(len(edges) - 1), np.zeros(len(edges) - 1)
    for row in range(height):
        for col in range(width):
            k_y = row if row < height - height // 2 else row - height  # 0..H/2-1 then negative
            k_x = col if col < width - width // 2 else col - width
            k = np.hypot(k_y, k_x)
            for j in range(len(edges) - 1):
                if edges[j] <= k < edges[j + 1]:
                    sums[j] += power[row, col]
                    ks[j] += k
                    counts[j] += 1
    return ks / counts, sums / counts


@pytest.mark.parametrize("shape", [(28, 28), (9, 12)])
def test_the_default_annuli_are_one_mode_wide_around_the_integers(shape):
    x = images(*shape, seed=1)
    k, power = radial_power_spectrum(x)
    k_max = np.hypot(*(s // 2 for s in shape))
    edges = np.r_[0.0, np.arange(int(np.floor(k_max + 0.5)) + 1) + 0.5]
    k_loop, power_loop = radial_by_loop(x, edges)
    np.testing.assert_allclose(k, k_loop, rtol=1e-12)
    np.testing.assert_allclose(power, power_loop, rtol=1e-10)
    if shape == (28, 28):
        assert len(k) == 21 and k[0] == 0 and k[1] == pytest.approx((1 + np.sqrt(2)) / 2)


def test_equal_annuli_and_given_edges_match_the_loop_and_a_batch_matches_one_by_one():
    x = images(3, 16, 16, seed=2)
    k_max = np.hypot(8, 8)
    k, power = radial_power_spectrum(x, bins=6)
    assert k.shape == (6,) and np.all(np.diff(k) > 0)
    edges = np.linspace(0, k_max, 7)
    edges[-1] = np.nextafter(k_max, np.inf)
    for one, row in zip(x, power):
        np.testing.assert_allclose(row, radial_by_loop(one, edges)[1], rtol=1e-10)
    given = [0.5, 2.5, 4.0, 7.5]  # the mean and the corners are left out
    k_given, power_given = radial_power_spectrum(x, bins=given)
    np.testing.assert_allclose(power_given[1], radial_by_loop(x[1], np.array(given))[1], rtol=1e-10)
    assert k_given.shape == (3,) and power_given.shape == (3, 3)


def test_an_empty_annulus_and_bad_bins_are_refused():
    with pytest.raises(ValueError, match="holds no mode"):
        radial_power_spectrum(images(28, 28), bins=60)
    with pytest.raises(ValueError, match="increasing"):
        radial_power_spectrum(images(8, 8), bins=[2.0, 1.0])
    with pytest.raises(ValueError, match=r"\(\.\.\., H, W\)"):
        power_spectrum_2d(np.ones(5))


def test_the_spectra_are_unchanged_by_any_circular_shift():
    x = images(4, 28, 28, seed=3)
    for shift in [(1, 0), (0, 5), (13, -7), (27, 27)]:
        moved = np.roll(x, shift, axis=(-2, -1))
        assert not np.allclose(moved, x)
        np.testing.assert_allclose(power_spectrum_2d(moved), power_spectrum_2d(x), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(radial_power_spectrum(moved)[1], radial_power_spectrum(x)[1], rtol=1e-10)


def test_a_zero_filled_shift_changes_the_spectrum_when_ink_leaves_the_frame():
    x = np.zeros((8, 8))
    x[2:6, 5:8] = 1.0
    cut = np.zeros_like(x)
    cut[:, 2:] = x[:, :-2]  # two pixels right, what leaves the frame lost
    assert not np.allclose(power_spectrum_2d(cut), power_spectrum_2d(x))


def test_random_phases_keep_every_amplitude_and_the_mean_and_give_another_real_image():
    x = images(5, 28, 28, seed=4)
    twin = random_phases(x, seed=7)
    assert twin.dtype == np.float64 and twin.shape == x.shape
    # the same |F(k)| (SciPy's FFT): had the dropped imaginary part been more than rounding, the
    # real part alone would have other amplitudes
    np.testing.assert_allclose(np.abs(scipy.fft.fft2(twin)), np.abs(scipy.fft.fft2(x)), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(twin.mean(axis=(-2, -1)), x.mean(axis=(-2, -1)), rtol=1e-12)
    distance = np.linalg.norm((twin - x).reshape(5, -1), axis=1) / np.linalg.norm(x.reshape(5, -1), axis=1)
    assert distance.min() > 0.1
    np.testing.assert_array_equal(random_phases(x, seed=7), twin)
    assert not np.allclose(random_phases(x, seed=8), twin)


@pytest.mark.parametrize("shape", [(28, 28), (9, 12), (7, 7)])
def test_the_phase_field_is_hermitian_so_the_inverse_is_real(shape):
    x = images(*shape, seed=5)
    rng_noise = np.fft.fft2(np.random.default_rng(11).standard_normal(shape))
    phase = rng_noise / np.abs(rng_noise)
    flipped = np.roll(np.flip(phase, axis=(0, 1)), 1, axis=(0, 1))  # phase(−k)
    np.testing.assert_allclose(flipped, np.conj(phase), atol=1e-12)  # φ(−k) = −φ(k)
    complex_twin = np.fft.ifft2(np.abs(np.fft.fft2(x)) * phase)
    assert np.abs(complex_twin.imag).max() < 1e-12 * np.abs(complex_twin.real).max()


def test_a_negative_mean_keeps_its_sign():
    x = images(6, 6, seed=6) - 2.0
    assert random_phases(x, seed=0).mean() == pytest.approx(x.mean())


def test_gaussian_random_fields_follow_their_power_law():
    fields = gaussian_random_field(64, 64, slope=3.0, seed=0)
    assert fields.shape == (64, 64, 64)
    np.testing.assert_allclose(fields.mean(axis=(-2, -1)), 0, atol=1e-12)
    np.testing.assert_allclose(fields.std(axis=(-2, -1)), 1, rtol=1e-12)
    k, power = radial_power_spectrum(fields)
    inside = (k >= 2) & (k <= 16)
    slope = np.polyfit(np.log(k[inside]), np.log(power.mean(0)[inside]), 1)[0]
    assert slope == pytest.approx(-3.0, abs=0.15)
    np.testing.assert_array_equal(
        gaussian_random_field(2, 16, 2.0, seed=1), gaussian_random_field(2, 16, 2.0, seed=1)
    )


def test_roll_each_is_np_roll_per_image_and_random_rolls_stay_in_range():
    x = images(6, 5, 7, seed=7)
    offsets = np.array([[0, 0], [1, 0], [0, 1], [-3, 2], [7, -5], [13, 4]])  # (dx right, dy down)
    moved = roll_each(x, offsets)
    for one, out, (dx, dy) in zip(x, moved, offsets):
        np.testing.assert_array_equal(out, np.roll(one, (dy, dx), axis=(0, 1)))
    rolled, drawn = random_rolls(images(500, 4, 4), max_shift=2, seed=3)
    assert rolled.shape == (500, 4, 4) and drawn.min() == -2 and drawn.max() == 2
    np.testing.assert_array_equal(random_rolls(x, 3, seed=9)[1], random_rolls(x, 3, seed=9)[1])
    with pytest.raises(ValueError, match="offsets"):
        roll_each(x, offsets[:2])


def test_summary_features_are_float32_rows_and_the_spectra_ignore_shifts():
    x = images(3, 28, 28, seed=8)
    moved = np.roll(x, (4, -3), axis=(-2, -1))
    shapes = {summary: summary_features(x, summary).shape for summary in ("pixels", "radial", "2d")}
    assert shapes == {"pixels": (3, 784), "radial": (3, 21), "2d": (3, 784)}
    assert summary_features(x, "radial").dtype == np.float32
    for summary in ("radial", "2d"):
        np.testing.assert_allclose(summary_features(moved, summary), summary_features(x, summary), atol=1e-5)
    np.testing.assert_allclose(
        summary_features(x, "radial"), np.log(radial_power_spectrum(x)[1] + 1e-6), rtol=1e-6
    )
    with pytest.raises(ValueError, match="summary must be one of"):
        summary_features(x, "phases")
