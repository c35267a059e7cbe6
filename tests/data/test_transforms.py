"""Tests for biaslab.data.transforms: translation against a NumPy reference, standardization."""

import numpy as np
import pytest
import torch

from biaslab.data.transforms import SHIFT_DIRECTIONS, translate, translations


def numpy_translate(image: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """Pixel by pixel: out[r, c] = image[r - dy, c - dx] where that lies inside, else 0."""
    height, width = image.shape
    out = np.zeros_like(image)
    for r in range(height):
        for c in range(width):
            if 0 <= r - dy < height and 0 <= c - dx < width:
                out[r, c] = image[r - dy, c - dx]
    return out


@pytest.mark.parametrize("dx, dy", [(0, 0), (2, 0), (0, -3), (4, 5), (-6, 1), (7, -7), (8, 0), (-9, 9)])
def test_translate_matches_a_pixel_by_pixel_reference(dx, dy):
    images = torch.rand(3, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    shifted = translate(images, dx, dy)
    assert shifted.shape == images.shape
    for k in range(3):
        np.testing.assert_array_equal(shifted[k, 0].numpy(), numpy_translate(images[k, 0].numpy(), dx, dy))


def test_translations_move_right_left_down_and_up_with_the_fill():
    images = torch.rand(2, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    moved = translations(images, 3, fill=-1.0)
    assert len(moved) == len(SHIFT_DIRECTIONS) == 4
    right, left, down, up = moved
    np.testing.assert_array_equal(right[0, 0, :, 3:].numpy(), images[0, 0, :, :5].numpy())
    np.testing.assert_array_equal(left[0, 0, :, :5].numpy(), images[0, 0, :, 3:].numpy())
    np.testing.assert_array_equal(down[0, 0, 3:].numpy(), images[0, 0, :5].numpy())
    np.testing.assert_array_equal(up[0, 0, :5].numpy(), images[0, 0, 3:].numpy())
    assert (right[..., :3] == -1.0).all() and (up[..., 5:, :] == -1.0).all()
    assert all(torch.equal(m, images) for m in translations(images, 0))


def test_translate_loses_what_leaves_the_frame_and_undoes_inside_it():
    images = torch.rand(2, 28, 28, generator=torch.Generator().manual_seed(1))
    there_and_back = translate(translate(images, 3, -2), -3, 2)
    assert torch.equal(there_and_back[:, 2:, :25], images[:, 2:, :25])  # the part that stayed
    assert there_and_back[:, :2].abs().sum() == 0 and there_and_back[:, :, 25:].abs().sum() == 0


@pytest.mark.parametrize("quarter_turns", [0, 1, 2, 3, 4])
def test_rotate_by_quarter_turns_equals_rot90(quarter_turns):
    from biaslab.data.transforms import rotate

    images = torch.rand(3, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    expected = torch.rot90(images, quarter_turns, dims=(-2, -1))  # counter-clockwise
    torch.testing.assert_close(rotate(images, 90 * quarter_turns), expected, atol=1e-5, rtol=0)


def test_rotate_fills_the_corners_and_keeps_the_centre():
    from biaslab.data.transforms import rotate

    images = torch.ones(1, 9, 9)
    turned = rotate(images, 45, fill=-0.5)
    assert turned.shape == images.shape
    assert float(turned[0, 0, 0]) == pytest.approx(-0.5)  # a corner came from outside the frame
    assert float(turned[0, 4, 4]) == pytest.approx(1.0)


def test_translate_fills_with_the_given_value():
    images = torch.rand(2, 1, 6, 6, generator=torch.Generator().manual_seed(3))
    shifted = translate(images, 2, -1, fill=-0.5)
    assert torch.equal(shifted[..., :2], torch.full_like(shifted[..., :2], -0.5))  # entered from the left
    assert torch.equal(shifted[..., 5:, :], torch.full_like(shifted[..., 5:, :], -0.5))  # from below
    assert torch.equal(shifted[..., :5, 2:], images[..., 1:, :4])


def test_jitter_shifts_each_image_by_its_own_offset_within_the_bound():
    from biaslab.data.transforms import jitter

    images = torch.rand(300, 1, 9, 9, generator=torch.Generator().manual_seed(4)) + 1  # no pixel is 0
    moved = jitter(images, 2, seed=5, fill=0.0)
    assert moved.shape == images.shape
    assert torch.equal(moved, jitter(images, 2, seed=5)) and not torch.equal(moved, jitter(images, 2, seed=6))
    offsets = []
    for image, out in zip(images, moved):
        (found,) = [
            (dx, dy)
            for dx in range(-2, 3)
            for dy in range(-2, 3)
            if torch.equal(out, translate(image, dx, dy))  # exactly one offset fits
        ]
        offsets.append(found)
    assert set(offsets) == {(dx, dy) for dx in range(-2, 3) for dy in range(-2, 3)}  # all 25 drawn
    assert torch.equal(jitter(images, 0, seed=5), images)
    with pytest.raises(ValueError, match="max_shift"):
        jitter(images, -1, seed=0)
