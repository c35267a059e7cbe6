"""No string a run carries can inject markup or script into report.html or index.html.

A run directory is built by hand in which every string (results.json, config.json, figure file
names, the run directory's own name) holds script-injection payloads. The fast test parses the
written HTML; the browser tests load the pages in headless Chromium and check that no payload
ran (the title is unchanged, no element or event handler came from a payload) and that every
payload shows as plain text. A negative control proves the check catches a payload that runs.
"""

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from PIL import Image  # pillow is a matplotlib dependency

from biaslab.report import render_index, render_report
from biaslab.report.browser import dump_dom, find_chromium

PAYLOADS = (
    "<script>document.title='PWNED'</script>",
    '"><img src=x onerror="document.title=\'PWNED\'">',
    "'><img src=x onerror='document.title=\"PWNED\"'>",
    "</textarea><svg onload=\"document.title='PWNED'\">",
    "</title></style><script>document.title='PWNED'</script>",
    "javascript:document.title='PWNED'",
    "{{ 7 * 7 }}{% raw %}",
)
EVIL = "".join(PAYLOADS)
# A file or directory name cannot hold "/": these break out of attributes and text without it.
EVIL_NAME = "\"><img src=x onerror=\"document.title='PWNED'\">'><svg onload=document.title=1>"


def evil(field: str) -> str:
    """The payloads, tagged with the field that carries them (so each can be found as text)."""
    return f"[{field}]{EVIL}"


def _png(path: Path) -> None:
    """A small solid PNG (what the figure shows does not matter here)."""
    Image.new("RGB", (60, 30), (200, 40, 40)).save(path)


def make_evil_run(run: Path, labs: bool = True) -> Path:
    """A run (a workshop with one lab, if ``labs``) whose every string is a payload."""
    (run / "figures").mkdir(parents=True)
    _png(run / "figures" / f"{EVIL_NAME}.png")
    _png(run / "figures" / "plain.png")
    (run / "config.json").write_text(
        json.dumps(
            {
                "experiment": evil("cfg-experiment"),
                "profile": evil("cfg-profile"),
                "seed": evil("cfg-seed"),
                "created": evil("created"),
                "command": evil("command"),
                "config": {evil("config-key"): evil("config-value"), "nested": {"k": [evil("nested")]}},
                "versions": {"biaslab": evil("version"), evil("version-key"): "1"},
            }
        )
    )
    (run / "results.json").write_text(
        json.dumps(
            {
                "experiment": evil("experiment"),
                "title": evil("title"),
                "day": 1,
                "summary": evil("summary"),
                "profile": evil("profile"),
                "seed": evil("seed"),
                "elapsed_s": evil("elapsed"),
                "metrics": {evil("metric-key"): evil("metric-value")},
                "claims": [
                    {
                        "claim": evil("claim"),
                        "source": evil("source"),
                        "expected": evil("expected"),
                        "measured": evil("measured"),
                        "passed": False,
                        "verdict": "notes-wrong",
                        "computation": evil("computation"),
                    },
                    {"claim": evil("claim2"), "source": None, "expected": 1, "measured": 0.5, "passed": True},
                    evil("bare-claim"),
                ],
                "figures": [
                    {"file": f"figures/{EVIL_NAME}.png", "caption": ""},
                    {"file": "figures/plain.png", "caption": evil("caption")},
                    {"file": evil("missing-file"), "caption": evil("missing-caption")},
                ],
                "tables": [
                    {
                        "title": evil("table-title"),
                        "columns": [evil("column"), "n"],
                        "rows": [[evil("cell"), 1], evil("row")],
                    }
                ],
            }
        )
    )
    (run / "metrics.jsonl").write_text(json.dumps({"step": 0, "loss": evil("log")}) + "\n")
    (run / "COMPLETE").write_text("")
    if labs:
        render_report(make_evil_run(run / "labs" / EVIL_NAME, labs=False))
    return run


FIELDS = (
    "title",
    "summary",
    "experiment",
    "profile",
    "seed",
    "claim",
    "source",
    "expected",
    "measured",
    "computation",
    "claim2",
    "bare-claim",
    "caption",
    "missing-file",
    "missing-caption",
    "table-title",
    "column",
    "cell",
    "row",
    "metric-key",
    "metric-value",
    "config-key",
    "config-value",
    "nested",
    "version",
    "version-key",
    "command",
    "created",
    "cfg-experiment",
    "cfg-profile",
    "cfg-seed",
)


class _Page(HTMLParser):
    """Tags, attributes, the <title> and the visible text of a page (entities decoded)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.title, self.body = [], [], "", []
        self._where = []
        self.feed(text)
        self.close()
        self.text = "".join(self.body)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag in ("title", "style", "script"):
            self._where.append(tag)

    def handle_endtag(self, tag):
        if self._where and self._where[-1] == tag:
            self._where.pop()

    def handle_data(self, data):
        if not self._where:
            self.body.append(data)
        elif self._where[-1] == "title":
            self.title += data

    def count(self, tag: str) -> int:
        return self.tags.count(tag)


def _assert_inert(page: _Page, title: str, images: int, scripts: int = 0) -> None:
    """Nothing from a payload became markup: only the page's own elements and attributes
    (``scripts``: the page's own, the index's sort script; checked apart by its text)."""
    assert page.title == title  # a payload that ran would have set it to PWNED
    expected = {
        "script": scripts,
        "svg": 0,
        "img": images,
        "title": 1,
        "style": 1,
        "meta": 3,  # charset, viewport, generator
        "textarea": 0,
        "iframe": 0,
        "object": 0,
        "embed": 0,
        "link": 0,
        "base": 0,
    }
    assert {tag: page.count(tag) for tag in expected} == expected
    handlers = [(t, k) for t, k, _ in page.attrs if k.startswith("on")]
    assert not handlers, handlers
    for tag, key, value in page.attrs:
        if key == "src":
            assert value.startswith("data:image/png;base64,"), (tag, value[:80])
        if key == "href":
            assert not value.startswith(("javascript:", "/", "data:", "http")), (tag, value)


def _assert_report(page: _Page) -> None:
    _assert_inert(page, evil("title"), images=2)
    for field in FIELDS:
        assert evil(field) in page.text, field
    titles = [v for t, k, v in page.attrs if k == "title"]
    assert evil("metric-key") in titles  # the metric's key, the tooltip of its label, intact
    assert EVIL_NAME in page.text  # the run directory's name, in the labs table and the footer
    alts = [v for t, k, v in page.attrs if t == "img" and k == "alt"]
    assert alts == [f"figures/{EVIL_NAME}.png", evil("caption")]  # names in attributes, intact


def _assert_index(page: _Page, out: Path) -> None:
    _assert_inert(page, evil("index-title"), images=0, scripts=1)
    for field in ("index-title", "experiment", "profile", "seed", "created"):
        assert evil(field) in page.text, field
    assert f"{EVIL_NAME}/labs/{EVIL_NAME}" in page.text  # the workshop's lab, shown as its path
    hrefs = [v for t, k, v in page.attrs if k == "href"]
    assert len(hrefs) == 2
    for href in hrefs:
        assert (out.parent / unquote(href)).resolve().is_file()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The evil run's report.html and an index.html over its parent directory."""
    runs = tmp_path_factory.mktemp("xss") / "runs"
    run = make_evil_run(runs / EVIL_NAME)
    report = render_report(run)
    index = render_index(runs, title=evil("index-title"))
    return report, index


_SCRIPT = re.compile(r"<script>.*?</script>", re.DOTALL)


def _own_script(tmp: Path) -> str:
    """The index's sort script, as an index of an empty folder holds it."""
    return _SCRIPT.search(render_index(tmp).read_text(encoding="utf-8")).group(0)


def test_raw_html_has_no_unescaped_payload(pages, tmp_path):
    report, index = pages
    own = _own_script(tmp_path)
    for path in (report, index):
        text = path.read_text(encoding="utf-8")
        if path == index:  # its one script is the page's own, word for word; the rest is checked
            assert _SCRIPT.findall(text) == [own]
            text = text.replace(own, "")
        for payload in (*PAYLOADS[:-1], EVIL_NAME, "<svg", "<script", "<img src=x", 'onerror="'):
            assert payload not in text, payload
        assert PAYLOADS[-1] in text  # template syntax in data is shown as written, not evaluated
    _assert_report(_Page(report.read_text(encoding="utf-8")))
    _assert_index(_Page(index.read_text(encoding="utf-8")), index)


@pytest.mark.browser
def test_no_payload_runs_in_chromium(pages, tmp_path):
    if find_chromium() is None:
        reason = "headless Chromium not installed (chromium, chromium-browser, google-chrome)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run the browser tests")
        pytest.skip(reason)
    report, index = pages
    _assert_report(_Page(dump_dom(report)))
    _assert_index(_Page(dump_dom(index)), index)

    # Negative control: the same report with one payload left unescaped is caught.
    broken = report.read_text(encoding="utf-8").replace("<footer>", f"<footer>{PAYLOADS[1]}", 1)
    (tmp_path / "broken.html").write_text(broken, encoding="utf-8")
    dom = _Page(dump_dom(tmp_path / "broken.html"))
    assert dom.title == "PWNED"
    with pytest.raises(AssertionError):
        _assert_report(dom)
