"""Every lab's pages in a quick workshop run: labels for every metric, no number shown twice, no
"issue" wording, links that resolve, the smoke-test marks; in Chromium, the index within 1280 px."""

import re
from html import unescape
from urllib.parse import unquote

import pytest

from biaslab import registry
from biaslab.records import words_from_json, words_to_json
from biaslab.report.labels import labeller, unknown_words
from biaslab.runs import read_json
from tests.report.test_overlap import numeric_sets

pytestmark = pytest.mark.slow


def _labs(workshop) -> list:
    return sorted(p for p in (workshop / "labs").iterdir() if (p / "results.json").is_file())


def _visible_text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script)>.*?</\1>", "", html, flags=re.DOTALL)))


def test_every_metric_of_every_lab_gets_a_readable_label(quick_workshop):
    unreadable = {}
    for run in [quick_workshop, *_labs(quick_workshop)]:
        res = read_json(run / "results.json")
        # The lab's words travel in its results (the report holds none of a lab's own).
        assert res["words"] == words_to_json(registry.get(res["experiment"]).words)
        label, words = labeller(res), words_from_json(res["words"])
        recorded = {r["key"] for r in res.get("records", [])}
        for key in res["metrics"]:
            unknown = [] if key in recorded else unknown_words(key, words)
            if label(key) == key or "_" in label(key) or unknown:
                unreadable[f"{res['experiment']}: {key}"] = (label(key), unknown)
    assert not unreadable, unreadable


def _without_slide_titles(text: str, titles: set[str]) -> str:
    """``text`` less the slide titles the sources quote (a slide may say "issues": the
    ML-for-physics slides' 'Numerical issues and translation invariance')."""
    for title in titles:
        text = text.replace(title, "")
    return text


def test_no_claim_source_and_no_page_speaks_of_issues(quick_workshop):
    for run in [quick_workshop, *_labs(quick_workshop)]:
        res = read_json(run / "results.json")
        titles = {t for c in res["claims"] for t in re.findall(r"'([^']+)'", str(c["source"]))}
        for claim in res["claims"]:
            source = _without_slide_titles(str(claim["source"]), titles)
            assert "issue" not in source.lower(), (res["experiment"], claim["source"])
            assert claim["source"].strip(), (res["experiment"], claim["claim"])
        text = _without_slide_titles(_visible_text((run / "report.html").read_text(encoding="utf-8")), titles)
        assert "issue" not in text.lower(), res["experiment"]
    assert "issue" not in _visible_text((quick_workshop / "index.html").read_text(encoding="utf-8")).lower()


def test_no_two_tables_of_a_lab_report_hold_the_same_numbers(quick_workshop):
    for run in _labs(quick_workshop):
        sets = [s for s in numeric_sets((run / "report.html").read_text(encoding="utf-8")) if s]
        repeated = [sorted(a) for i, a in enumerate(sets) for b in sets[i + 1 :] if a == b]
        assert not repeated, (run.name, repeated)


def test_the_ood_report_shows_its_aurocs_once_in_a_table(quick_workshop):
    html = (quick_workshop / "labs" / "ood" / "report.html").read_text(encoding="utf-8")
    metrics = html.split('<h2 id="metrics">', 1)[1].split("<h2", 1)[0]
    assert "20 metrics of results.json are shown in" in metrics
    assert re.findall(r'<td title="([^"]*)">', metrics) == ["test_accuracy", "animal_mnist_duplicates"]
    sets = [s for s in numeric_sets(html) if s]
    assert len(sets) == 2 and not sets[0] & sets[1]  # the metrics left, and the table: apart


def test_every_lab_report_links_back_to_the_index_and_to_its_files(quick_workshop):
    index = (quick_workshop / "index.html").read_text(encoding="utf-8")
    for run in _labs(quick_workshop):
        html = (run / "report.html").read_text(encoding="utf-8")
        assert '<a href="../../index.html">' in html, run.name
        assert f'href="labs/{run.name}/report.html"' in index, run.name
        for href in re.findall(r'href="([^"#][^"]*)"', html):
            assert (run / unquote(href)).resolve().exists(), (run.name, href)
        for anchor in re.findall(r'href="#([^"]*)"', html):
            assert f'id="{anchor}"' in html, (run.name, anchor)


def test_a_quick_report_marks_every_figure_and_its_header_as_a_smoke_test(quick_workshop):
    for run in _labs(quick_workshop):
        html = (run / "report.html").read_text(encoding="utf-8")
        figures = re.findall(r"<figure id=.*?</figure>", html, re.DOTALL)
        assert figures and all("smoke test: tiny data" in f for f in figures), run.name
        assert "Smoke test: tiny data." in html.split('<nav class="contents"', 1)[0], run.name


@pytest.mark.browser
def test_the_workshops_index_fits_1280_pixels_in_chromium(quick_workshop):
    from tests.report.test_index_browser import assert_links_inside, chromium_or_skip

    chromium_or_skip()
    labs = len([e for e in registry.all_experiments() if 1 <= e.day <= 5])  # one row per workshop lab
    assert_links_inside(quick_workshop / "index.html", 1280, rows=labs)
