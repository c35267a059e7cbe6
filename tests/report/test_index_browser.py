"""The index in headless Chromium at 1280 px: its link column inside the window with many runs,
and a click on a column's header sorting the rows (the index's one script).

Skipped without Chromium, except under CI (environment variable ``CI`` set).
"""

import os

import pytest

from biaslab.report import render_index
from biaslab.report.browser import evaluate, find_chromium
from tests.report.test_runs_table import fake_run

pytestmark = pytest.mark.browser

# Where each link cell, the table and the page end, in CSS pixels from the window's left edge.
EDGES = """(function () {
  function right(e) { return e.getBoundingClientRect().right; }
  return {
    links: Array.prototype.map.call(document.querySelectorAll("table.runs td.links"), right),
    table: right(document.querySelector("table.runs")),
    page: document.documentElement.scrollWidth,
    window: window.innerWidth
  };
})()"""

# (day, experiment) of each row after each of the given clicks (header positions).
CLICKS = """(function (clicks) {
  var table = document.querySelector("table.runs");
  function rows() {
    return Array.prototype.map.call(table.tBodies, function (body) {
      return [Number(body.rows[0].cells[0].textContent), body.rows[0].cells[1].textContent];
    });
  }
  var seen = [rows()];
  clicks.forEach(function (i) {
    table.tHead.rows[0].cells[i].querySelector("button").click();
    seen.push(rows());
  });
  return seen;
})(%s)"""


def chromium_or_skip() -> None:
    if find_chromium() is None:
        reason = "headless Chromium not installed (chromium, chromium-browser, google-chrome)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run the browser tests")
        pytest.skip(reason)


def assert_links_inside(index, width: int, rows: int) -> None:
    """Every link cell of ``index`` (``rows`` of them) ends inside a ``width``-px window, and
    nothing makes the page scroll sideways."""
    edges = evaluate(index, EDGES, width=width)
    assert edges["window"] == width
    assert len(edges["links"]) == rows
    assert max(edges["links"]) <= width and edges["table"] <= width, edges
    assert edges["page"] <= width, edges


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory):
    """Twelve rows: runs of labs with long names in deep folders, one lab with three seeds."""
    chromium_or_skip()
    runs = tmp_path_factory.mktemp("index") / "runs"
    names = ["autoencoder-uses", "diffusion-spiral", "mlp-vs-cnn-shift", "self-attention", "bias-variance"]
    for i in range(11):
        name = names[i % len(names)] + ("-with-a-rather-long-name" if i % 3 == 0 else "")
        folder = runs / f"workshop-20261126-0240{i:02d}-0" / "labs" / f"{name}-20261126-024038-{i}"
        fake_run(folder, name=name, seed=i, day=1 + i % 5, config={"i": i})
    for seed in (0, 1, 2):
        fake_run(runs / f"ood-20261126-0240{seed:02d}-{seed}", name="ood", seed=seed, auroc=0.9 + seed / 100)
    return render_index(runs)


def test_the_link_column_stays_inside_1280_pixels(many_runs):
    assert_links_inside(many_runs, 1280, rows=12)  # 14 runs: the three seeds of ood share a row
    with pytest.raises(AssertionError):  # negative control: a window too narrow for the table
        assert_links_inside(many_runs, 640, rows=12)


def test_a_click_on_a_header_sorts_the_rows_and_a_second_click_reverses_them(many_runs):
    start, up, down, by_day = evaluate(many_runs, CLICKS % "[1, 1, 0]")
    names = [name for _, name in up]
    assert sorted(start) == sorted(up) and len(start) == 12
    assert names == sorted(names) and down == up[::-1]  # Experiment, then Experiment again
    assert [day for day, _ in by_day] == sorted(day for day, _ in start)  # Day: as numbers
    sorted_by = 'Array.prototype.map.call(document.querySelectorAll("table.runs > thead th"), '
    sorted_by += 'function (th) { return th.getAttribute("aria-sort"); })'
    headers = evaluate(many_runs, sorted_by)
    assert headers == [None] * 9  # nothing sorted before a click: the workshop's order
