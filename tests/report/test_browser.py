"""Render a report in headless Chromium and check, pixel by pixel, that students would see it.

Skipped when no Chromium is installed, except under CI (environment variable ``CI`` set),
where a missing browser is a failure: CI must really run these checks.
"""

import json
import os
import re

import matplotlib
import numpy as np
import pytest
from PIL import Image  # pillow is a matplotlib dependency
from scipy import ndimage

from biaslab.report import render_report
from biaslab.report.browser import dump_dom, find_chromium, screenshot
from biaslab.report.html import FAIL_COLOUR, PASS_COLOUR

matplotlib.use("Agg")
pytestmark = pytest.mark.browser

CLAIM_PASS = "A single perceptron cannot separate XOR"
CLAIM_FAIL = "A linear model fits the spiral <script>alert(1)</script>"


@pytest.fixture(scope="module", autouse=True)
def chromium():
    exe = find_chromium()
    if exe is None:
        reason = "headless Chromium not installed (chromium, chromium-browser, google-chrome)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run the browser tests")
        pytest.skip(reason)
    return exe


def _figure(path, kind):
    """A 600x400 PNG (dpi 100) with thick, strongly coloured default-cycle content."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    rng = np.random.default_rng(0 if kind == "line" else 1)
    if kind == "line":
        ax.plot([0, 1], [0, 1], linewidth=10)
        ax.scatter(rng.random(25), rng.random(25), s=300, color="C1")
    else:
        ax.bar(range(5), rng.random(5) + 0.3, color=["C0", "C1", "C2", "C3", "C4"])
    fig.savefig(path, dpi=100)
    plt.close(fig)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run = tmp_path_factory.mktemp("browser") / "run"
    (run / "figures").mkdir(parents=True)
    _figure(run / "figures" / "line.png", "line")
    _figure(run / "figures" / "bars.png", "bars")
    (run / "config.json").write_text(
        json.dumps(
            {
                "experiment": "xor",
                "profile": "quick",
                "seed": 0,
                "config": {"epochs": 50},
                "versions": {"biaslab": "0.1.0"},
                "created": "2026-11-21T23:40:00",
            }
        )
    )
    (run / "results.json").write_text(
        json.dumps(
            {
                "experiment": "xor",
                "title": "XOR: perceptron vs MLP",
                "day": 1,
                "summary": "A perceptron draws one line; an MLP bends it.",
                "profile": "quick",
                "seed": 0,
                "elapsed_s": 3.21,
                "metrics": {"mlp_accuracy": 1.0},
                "claims": [
                    {
                        "claim": CLAIM_PASS,
                        "source": "notes §1.3",
                        "expected": "accuracy <= 0.75",
                        "measured": 0.5,
                        "passed": True,
                    },
                    {
                        "claim": CLAIM_FAIL,
                        "source": "notes §2.1",
                        "expected": "accuracy > 0.9",
                        "measured": 0.61,
                        "passed": False,
                    },
                ],
                "figures": [
                    {"file": "figures/line.png", "caption": "A line and points"},
                    {"file": "figures/bars.png", "caption": "Bars"},
                ],
            }
        )
    )
    (run / "COMPLETE").write_text("")
    render_report(run)
    return run


def _load(path) -> np.ndarray:
    """An RGB uint8 array of a PNG (alpha composited on white)."""
    img = Image.open(path).convert("RGBA")
    white = Image.new("RGBA", img.size, (255, 255, 255, 255))
    return np.asarray(Image.alpha_composite(white, img).convert("RGB"))


def _colourful(a: np.ndarray) -> np.ndarray:
    """Mask of strongly coloured pixels (channel max - min > 60)."""
    a = a.astype(int)
    return (a.max(axis=-1) - a.min(axis=-1)) > 60


def _locate(screen: np.ndarray, fig: np.ndarray):
    """Where ``fig`` appears in ``screen`` at natural size, or ``None``.

    Cross-correlates the colourful-pixel masks (FFT) to find the best offset, then requires
    the region there to match the figure nearly exactly (98% of pixels within 12 levels).
    """
    ms, mf = _colourful(screen).astype(float), _colourful(fig).astype(float)
    (H, W), (h, w) = ms.shape, mf.shape
    corr = np.fft.irfft2(np.fft.rfft2(ms) * np.conj(np.fft.rfft2(mf, s=(H, W))), s=(H, W))
    y, x = np.unravel_index(np.argmax(corr), corr.shape)
    if y + h > H or x + w > W:
        return None
    diff = np.abs(screen[y : y + h, x : x + w].astype(int) - fig.astype(int)).max(axis=-1)
    return (int(y), int(x)) if (diff <= 12).mean() >= 0.98 else None


def _figures_visible(screen: np.ndarray, figures: list) -> bool:
    """Every figure is found in place, and the page shows >= 90% of their colourful pixels."""
    needed = sum(int(_colourful(f).sum()) for f in figures)
    return int(_colourful(screen).sum()) >= 0.9 * needed and all(
        _locate(screen, f) is not None for f in figures
    )


def _colour_cells(screen: np.ndarray, hex_colour: str) -> list:
    """Bounding boxes (height, width, fill fraction) of regions of exactly ``hex_colour``."""
    rgb = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    labels, _ = ndimage.label(np.all(screen == rgb, axis=-1))
    boxes = []
    for i, sl in enumerate(ndimage.find_objects(labels), start=1):
        h, w = sl[0].stop - sl[0].start, sl[1].stop - sl[1].start
        boxes.append((h, w, float((labels[sl] == i).sum()) / (h * w)))
    return boxes


def _assert_verdict_cell(screen: np.ndarray, colour: str) -> None:
    """The screenshot shows a claims-table verdict cell filled with ``colour``."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    assert np.all(screen == rgb, axis=-1).sum() >= 300, f"too few {colour} pixels"
    # A verdict cell: a filled box at least 80 px wide and 28 px tall (the text inside
    # leaves holes, so the fill fraction is below 1 but well above a thin outline's).
    cells = [b for b in _colour_cells(screen, colour) if b[0] >= 28 and b[1] >= 80]
    assert cells and max(b[2] for b in cells) > 0.6, f"no table cell coloured {colour}"


def test_figures_render_at_natural_size(run_dir, tmp_path):
    figures = [_load(run_dir / "figures" / f) for f in ("line.png", "bars.png")]
    assert all(f.shape == (400, 600, 3) and _colourful(f).sum() > 5000 for f in figures)
    shot = _load(screenshot(run_dir / "report.html", tmp_path / "report.png"))
    assert shot.shape == (4000, 1280, 3)
    spots = [_locate(shot, f) for f in figures]
    assert None not in spots, "a figure is not visible in the screenshot"
    assert spots[0][0] < spots[1][0], "figures out of order"
    assert _figures_visible(shot, figures)

    # Negative control: the same page with broken images must fail the same check.
    broken = re.sub(
        r'src="data:image/png;base64,[^"]*"',
        'src="data:,"',
        (run_dir / "report.html").read_text(encoding="utf-8"),
    )
    assert broken.count('src="data:,"') == 2
    (tmp_path / "broken.html").write_text(broken, encoding="utf-8")
    broken_shot = _load(screenshot(tmp_path / "broken.html", tmp_path / "broken.png"))
    assert not _figures_visible(broken_shot, figures)
    assert all(_locate(broken_shot, f) is None for f in figures)


def test_claims_table_visible_with_verdict_colours(run_dir, tmp_path):
    shot = _load(screenshot(run_dir / "report.html", tmp_path / "report.png"))
    for colour in (PASS_COLOUR, FAIL_COLOUR):
        _assert_verdict_cell(shot, colour)


def test_claims_text_in_dom(run_dir):
    dom = dump_dom(run_dir / "report.html")
    assert '<table class="claims">' in dom
    assert CLAIM_PASS in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>" not in dom
    assert dom.count("data:image/png;base64,") == 2
