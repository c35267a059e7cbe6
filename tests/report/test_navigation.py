"""A report a person can find their way around: back to the index, to the run's files, to each
section; labels with the keys as tooltips; a quick run marked as a smoke test."""

import json
import re
from urllib.parse import unquote

from biaslab.report import render_index, render_report
from biaslab.report.navigation import index_link, shorten
from tests.report.test_html import make_run


def _hrefs(text: str) -> list[str]:
    return [unquote(h) for h in re.findall(r'href="([^"]*)"', text)]


def test_a_workshops_lab_links_to_the_index_its_workshop_writes(tmp_path):
    ws = make_run(tmp_path / "ws", "workshop", day=5)
    lab = make_run(ws / "labs" / "xor", "xor")
    assert index_link(lab) == "../../index.html"  # written by the workshop once its labs are done
    text = render_report(lab).read_text(encoding="utf-8")
    assert '<a href="../../index.html">&larr; Index of runs</a>' in text
    render_index(ws / "labs", out=ws / "index.html")
    assert "labs/xor/report.html" in (ws / "index.html").read_text(encoding="utf-8")
    assert (lab / "../../index.html").resolve().is_file()


def test_a_run_links_to_its_folders_index_only_where_biaslab_wrote_one(tmp_path):
    runs = tmp_path / "runs"
    run = make_run(runs / "xor-1", "xor")
    assert index_link(run) is None  # no index (yet): no dead link
    assert "Index of runs" not in render_report(run).read_text(encoding="utf-8")
    render_index(runs)
    assert index_link(run) == "../index.html"
    assert '<a href="../index.html">' in render_report(run).read_text(encoding="utf-8")
    (runs / "index.html").write_text("<html><title>My own page</title></html>")
    assert index_link(run) is None  # the user's page is not biaslab's index
    lone = make_run(tmp_path / "labs" / "xor", "xor")  # a folder named labs, not inside a run
    assert index_link(lone) is None


def test_a_report_links_to_its_files_and_every_link_resolves(tmp_path):
    run = make_run(tmp_path / "run")
    text = render_report(run).read_text(encoding="utf-8")
    nav = re.search(r'<nav class="top".*?</nav>', text, re.DOTALL).group(0)
    assert _hrefs(nav) == ["config.json", "results.json", "metrics.jsonl", "figures"]
    assert "5 training records" in nav and "2 figures" in nav
    for href in _hrefs(text):
        if href.startswith("#"):
            assert f'id="{href[1:]}"' in text, href  # every anchor of the contents exists
        else:
            assert (run / href).exists(), href
    figures = re.findall(r'<figcaption>.*?<a class="file" href="([^"]*)"', text, re.DOTALL)
    assert figures == ["figures/boundaries.png", "figures/loss.png"]


def test_the_contents_list_every_section(tmp_path):
    text = render_report(make_run(tmp_path / "run")).read_text(encoding="utf-8")
    contents = re.search(r'<nav class="contents".*?</nav>', text, re.DOTALL).group(0)
    anchors = re.findall(r'href="#([^"]*)"', contents)
    sections = ["claims", "figures", "figure-1", "figure-2", "tables", "table-1", "metrics", "configuration"]
    assert anchors == sections
    assert "Decision boundaries" in contents and "Extra" in contents


def test_what_a_lab_marks_as_its_answer_comes_first(tmp_path):
    """A table or figure recorded with lead=True opens the report ("The answer"), before the
    claims; the rest follow in their sections, the raw metrics and configuration last."""
    run = make_run(tmp_path / "run")
    res = json.loads((run / "results.json").read_text())
    res["figures"][1]["lead"] = True
    res["tables"] = [{"title": "Recommendation", "columns": ["it"], "rows": [["the CNN"]], "lead": True},
                     *res["tables"]]  # fmt: skip
    (run / "results.json").write_text(json.dumps(res))
    text = render_report(run).read_text(encoding="utf-8")
    contents = re.search(r'<nav class="contents".*?</nav>', text, re.DOTALL).group(0)
    anchors = re.findall(r'href="#([^"]*)"', contents)
    assert anchors == [
        "answer", "table-1", "figure-2", "claims", "figures", "figure-1", "tables", "table-2",
        "metrics", "configuration",
    ]  # fmt: skip
    body = text.split("</nav>", 2)[-1]
    order = [
        body.index(f'id="{a}"') for a in ("answer", "table-1", "figure-2", "claims", "figure-1", "metrics")
    ]
    assert order == sorted(order) and body.count('id="figure-2"') == 1


def test_metric_labels_carry_their_keys_as_tooltips(tmp_path):
    text = render_report(make_run(tmp_path / "run")).read_text(encoding="utf-8")
    assert '<td title="perceptron_accuracy">Accuracy, perceptron</td>' in text
    assert '<td title="mlp_accuracy">Accuracy, MLP</td>' in text


def test_a_quick_run_is_marked_a_smoke_test_at_the_top_and_on_every_figure(tmp_path):
    run = make_run(tmp_path / "run")  # profile "quick"
    text = render_report(run).read_text(encoding="utf-8")
    header = text.split('<nav class="contents"', 1)[0]
    assert "Smoke test: tiny data." in header
    figures = re.findall(r"<figure id=.*?</figure>", text, re.DOTALL)
    assert len(figures) == 2 and all("smoke test: tiny data" in f for f in figures)

    res = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**res, "profile": "default"}))
    text = render_report(run).read_text(encoding="utf-8")
    assert "smoke test" not in text.lower()


def test_shorten_cuts_at_a_word():
    assert shorten("short") == "short"
    assert shorten("one two three four", 10) == "one two\u2026"
    assert shorten("a  b\n c") == "a b c"
