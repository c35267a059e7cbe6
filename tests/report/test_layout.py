"""Figures of several panels stay readable in the report: a grid as wide as the page, text of
at least 9 pt as the page shows it, and a log axis for a score that spans decades."""

import matplotlib
import numpy as np
import pytest

from biaslab.report import plots, plots_distributions
from biaslab.report.layout import FIGURE_DPI, REPORT_WIDTH_PX, grid_shape, log_scale_suits, pyplot

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    pyplot().close("all")


def shown_points(fig) -> float:
    """The smallest text of ``fig`` in CSS points as the report shows it: saved at
    FIGURE_DPI, shrunk to the page's width when wider (1 CSS pt = 96/72 px)."""
    fig.canvas.draw()  # tick labels exist once drawn
    texts = [t for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    for ax in fig.axes:
        if ax.axison:  # a hidden spare cell shows only its legend
            texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
            texts += ax.texts
    sizes = [t.get_fontsize() for t in texts if t.get_visible() and t.get_text().strip()]
    scale = min(1.0, REPORT_WIDTH_PX / (fig.get_figwidth() * FIGURE_DPI))
    return min(sizes) * FIGURE_DPI / 96 * scale


def rows_of(axes) -> int:
    """How many rows of panels ``axes`` make (distinct top edges)."""
    return len({round(ax.get_position().y1, 3) for ax in axes})


def test_grid_shape_fits_the_page_and_balances_rows():
    assert grid_shape(5, 3.4) == (2, 3)  # 3 + 2, not a row of five
    assert grid_shape(4, 3.8) == (2, 2)  # 2 + 2, not 3 + 1
    assert grid_shape(3, 3.4) == (1, 3)
    assert grid_shape(2, 4.2) == (1, 2)
    assert grid_shape(1, 20.0) == (1, 1)
    assert grid_shape(6, 3.0) == (2, 3)
    for n in range(1, 12):
        rows, cols = grid_shape(n, 3.4)
        assert rows * cols >= n and cols * 3.4 * FIGURE_DPI <= REPORT_WIDTH_PX


def test_log_scale_by_a_rule_on_the_data():
    rng = np.random.default_rng(0)
    mahalanobis = np.concatenate(
        [rng.lognormal(5.5, 0.4, 200), rng.lognormal(7.5, 0.8, 200)]
    )  # ~250 .. 25,000
    knn = rng.uniform(0.3, 0.8, 400)
    assert log_scale_suits(mahalanobis)
    assert not log_scale_suits(knn)
    assert not log_scale_suits(-mahalanobis)  # negative scores: no log axis
    assert not log_scale_suits(np.full(10, 5.0))
    assert not log_scale_suits([*np.linspace(1, 2, 200), 1e6])  # one outlier decides nothing


def test_ood_histograms_are_a_readable_grid_with_a_log_axis_where_heavy_tailed():
    rng = np.random.default_rng(1)
    panels = {
        "MSP": (-rng.uniform(0.6, 1.0, 300), -rng.uniform(0.2, 0.9, 300)),
        "max logit": (-rng.normal(6, 1, 300), -rng.normal(3, 1, 300)),
        "energy": (-rng.normal(7, 1, 300), -rng.normal(4, 1, 300)),
        "Mahalanobis": (rng.lognormal(5.5, 0.4, 300), rng.lognormal(8.0, 0.8, 300)),
        "kNN": (rng.uniform(0.3, 0.6, 300), rng.uniform(0.5, 0.8, 300)),
    }
    fig = plots.score_histograms(panels)
    drawn = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert len(drawn) == 5 and rows_of(drawn) == 2  # 3 + 2
    assert fig.get_figwidth() * FIGURE_DPI <= REPORT_WIDTH_PX  # shown at natural size
    assert shown_points(fig) >= 9
    scales = {ax.get_title(): ax.get_xscale() for ax in drawn}
    assert scales == {
        "MSP": "linear",
        "max logit": "linear",
        "energy": "linear",
        "Mahalanobis": "log",
        "kNN": "linear",
    }
    assert any(ax.get_legend() for ax in fig.axes)  # one legend, in the spare cell


def test_other_multi_panel_figures_are_readable_at_page_width():
    rng = np.random.default_rng(2)
    history = [
        {"epoch": e, "train_loss": 1 / e, "val_loss": 1.2 / e, "val_accuracy": 1 - 1 / e} for e in (1, 2, 3)
    ]
    measures = {
        m: {"good CNN": 0.5, "CNN on 2% of the data": 0.6, "MLP for shifted digits": 0.7} for m in "abcd"
    }
    figures = {
        "learning curves": plots.learning_curves(
            {"MLP": history}, keys=("train_loss", "val_loss", "val_accuracy")
        ),
        "requirements": plots.requirement_panels(measures, {m: (0.9, ">=") for m in measures}),
        "point clouds": plots_distributions.point_clouds(
            {f"t = {i}": rng.normal(size=(50, 2)) for i in range(6)}
        ),
    }
    for name, fig in figures.items():
        assert fig.get_figwidth() * FIGURE_DPI <= REPORT_WIDTH_PX, name
        assert shown_points(fig) >= 9, name
    requirement_axes = [ax for ax in figures["requirements"].axes if ax.axison]
    assert rows_of(requirement_axes) == 2  # four panels: 2 x 2


def test_an_image_grid_is_one_mosaic_with_each_image_in_its_place():
    """Row r, column c of the mosaic is images[r, c]; the blank lines between images are masked
    (drawn white); the row labels sit at the rows' centres, inside the figure."""
    rng = np.random.default_rng(0)
    images = rng.random((3, 5, 28, 28))  # (rows, cols, H, W)
    fig = plots.image_grid(images, row_labels=["a", "b", "c"])
    (ax,) = fig.axes
    (shown,) = ax.images
    pixels, blank = np.ma.getdata(shown.get_array()), np.ma.getmaskarray(shown.get_array())
    step = 28 + 3  # an image and its blank line (a tenth of 28 pixels)
    assert pixels.shape == (3 * step - 3, 5 * step - 3)
    for r in range(3):
        for c in range(5):
            block = (slice(r * step, r * step + 28), slice(c * step, c * step + 28))
            assert np.array_equal(pixels[block], images[r, c]) and not blank[block].any()
    assert blank[28:31].all() and blank[:, 28:31].all()  # the first blank lines
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert list(ax.get_yticks()) == [13.5, 13.5 + step, 13.5 + 2 * step]
    pyplot().close(fig)
    fig = plots.image_grid(images[:2], row_labels=["test", "in use (≤ 2 px)"])  # a long label: not cut
    fig.canvas.draw()
    (ax,) = fig.axes
    assert all(label.get_window_extent().x0 >= 0 for label in ax.get_yticklabels())
    pyplot().close(fig)
