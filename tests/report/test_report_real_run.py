"""A real ``xor --quick`` run's report, rendered in headless Chromium: figures and claims show.

Uses the pixel checks of test_browser.py. Skipped without Chromium, except under CI (environment
variable ``CI`` set), where a missing browser is a failure.
"""

import numpy as np
import pytest

import biaslab
from biaslab.report.browser import dump_dom, screenshot
from biaslab.report.html import FAIL_COLOUR, PASS_COLOUR
from biaslab.runs import read_json
from tests.report.test_browser import (  # noqa: F401  (chromium: autouse skip/fail fixture)
    _assert_verdict_cell,
    _colourful,
    _figures_visible,
    _load,
    _locate,
    chromium,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def xor_run(tmp_path_factory):
    return biaslab.run("xor", profile="quick", out=tmp_path_factory.mktemp("real") / "xor").run_dir


def test_real_report_shows_figures_and_claims(xor_run, tmp_path):
    res = read_json(xor_run / "results.json")
    assert [c["passed"] for c in res["claims"]] == [True, True]
    figures = [_load(xor_run / f["file"]) for f in res["figures"]]
    assert len(figures) == 2 and all(_colourful(f).sum() > 5000 for f in figures)

    shot = _load(screenshot(xor_run / "report.html", tmp_path / "report.png"))
    assert shot.shape == (4000, 1280, 3)
    spots = [_locate(shot, f) for f in figures]
    assert None not in spots, "a figure of the run is not visible at its natural size"
    assert spots[0][0] < spots[1][0], "figures out of order"
    assert _figures_visible(shot, figures)

    _assert_verdict_cell(shot, PASS_COLOUR)  # both claims pass: green verdict cells ...
    fail = [int(FAIL_COLOUR[i : i + 2], 16) for i in (1, 3, 5)]
    assert np.all(shot == fail, axis=-1).sum() == 0  # ... and no red ones


def test_real_report_dom(xor_run):
    dom = dump_dom(xor_run / "report.html")
    assert '<table class="claims">' in dom
    assert "findings 2 of 2 hold" in dom
    for claim in read_json(xor_run / "results.json")["claims"]:
        assert claim["claim"] in dom
    assert dom.count("data:image/png;base64,") == 2
    assert '<span class="badge complete">complete</span>' in dom
    assert 'class="badge unfinished"' not in dom
