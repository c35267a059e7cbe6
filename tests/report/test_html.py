"""Fast tests of report.html and index.html: embedding, escaping, colours, links, errors."""

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import matplotlib
import pytest

from biaslab.errors import BiaslabError
from biaslab.formatting import format_value
from biaslab.report import render_index, render_report
from biaslab.report.html import FAIL_COLOUR, PASS_COLOUR, UNCHECKED_COLOUR
from biaslab.runs import VERDICTS

matplotlib.use("Agg")

EVIL = "<script>alert(1)</script>"


def make_run(
    run_dir: Path, name="xor", day=1, complete=True, results=True, created="2026-11-21T23:40:00"
) -> Path:
    """Write a fake run directory by hand: config, results, two figures, metrics, COMPLETE."""
    import matplotlib.pyplot as plt

    (run_dir / "figures").mkdir(parents=True)
    config = {
        "experiment": name,
        "profile": "quick",
        "seed": 0,
        "config": {"epochs": 50, "lr": 0.1},
        "versions": {"biaslab": "0.1.0", "python": "3.11.7", "torch": "2.13.0"},
        "created": created,
        "command": f"biaslab run {name} --quick",
    }
    (run_dir / "config.json").write_text(json.dumps(config))
    for i, fname in enumerate(["boundaries", "loss"]):
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        ax.plot([0, 1], [0, i + 1], linewidth=6)
        fig.savefig(run_dir / "figures" / f"{fname}.png", dpi=100)
        plt.close(fig)
    (run_dir / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "train_loss": 1 / (s + 1)}) + "\n" for s in range(5))
    )
    if results:
        res = {
            "experiment": name,
            "title": f"{name}: perceptron vs MLP",
            "day": day,
            "summary": "A summary & a <b>tag</b>.",
            "profile": "quick",
            "seed": 0,
            "elapsed_s": 3.21,
            "metrics": {"perceptron_accuracy": 0.5, "mlp_accuracy": 0.123456789},
            "claims": [
                {
                    "claim": "A perceptron cannot separate XOR",
                    "source": "notes §1.3",
                    "expected": "accuracy <= 0.75",
                    "measured": 0.5,
                    "passed": True,
                },
                {
                    "claim": EVIL,
                    "source": "notes §1.4",
                    "expected": "accuracy == 1",
                    "measured": 0.75,
                    "passed": False,
                },
                {
                    "claim": "Converges",
                    "source": "notes §1.5",
                    "expected": "loss < 0.05",
                    "measured": None,
                    "passed": None,
                },
            ],
            "figures": [
                {"file": "figures/boundaries.png", "caption": "Decision boundaries"},
                {"file": "figures/loss.png", "caption": "Loss"},
            ],
            "tables": [{"title": "Extra", "columns": ["a", "b"], "rows": [[1, 2.5]]}],
        }
        (run_dir / "results.json").write_text(json.dumps(res))
    if complete:
        (run_dir / "COMPLETE").write_text("")
    return run_dir


class _Refs(HTMLParser):
    """Collects every src and href attribute and every tag name of a page."""

    def __init__(self):
        super().__init__()
        self.srcs, self.hrefs, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.srcs += [v for k, v in attrs if k == "src" and v is not None]
        self.hrefs += [v for k, v in attrs if k == "href" and v is not None]

    @property
    def refs(self) -> list[str]:
        return self.srcs + self.hrefs


def _parse(text: str) -> _Refs:
    parser = _Refs()
    parser.feed(text)
    return parser


def test_report_embeds_figures_and_is_self_contained(tmp_path):
    run = make_run(tmp_path / "run")
    out = render_report(run)
    assert out == run / "report.html" and out.is_file()
    text = out.read_text(encoding="utf-8")
    for fname in ("boundaries.png", "loss.png"):
        b64 = base64.b64encode((run / "figures" / fname).read_bytes()).decode()
        assert f'src="data:image/png;base64,{b64}"' in text
    assert text.count("<figure id=") == 2 and text.count("<figcaption>") == 2
    assert 'width="600" height="400"' in text  # natural pixel size
    refs = _parse(text)
    assert refs.srcs and all(r.startswith("data:") for r in refs.srcs)
    for href in refs.hrefs:  # anchors of the page, or files of the run directory beside it
        assert href.startswith("#") or (run / unquote(href)).resolve().is_relative_to(run.resolve()), href
    for bad in ("http://", "https://", 'src="/', 'href="/', "url(", "@import"):
        assert bad not in text, bad
    assert "script" not in refs.tags and "link" not in refs.tags
    assert not list(run.glob(".report.html.*"))  # no temporary file left behind


def test_report_escapes_json_strings(tmp_path):
    text = render_report(make_run(tmp_path / "run")).read_text(encoding="utf-8")
    assert EVIL not in text and "<b>tag</b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "A summary &amp; a &lt;b&gt;tag&lt;/b&gt;." in text


def test_report_claims_table_colours_and_content(tmp_path):
    assert (PASS_COLOUR, FAIL_COLOUR, UNCHECKED_COLOUR) == ("#c8f7c5", "#f7c5c5", "#e0e0e0")
    text = render_report(make_run(tmp_path / "run")).read_text(encoding="utf-8")
    table = re.search(r'<table class="claims">(.*?)</table>', text, re.DOTALL).group(1)
    colours = re.findall(r'class="verdict" style="background:(#[0-9a-f]{6})"', table)
    assert colours == [PASS_COLOUR, FAIL_COLOUR, UNCHECKED_COLOUR]
    for cell in ("A perceptron cannot separate XOR", "notes §1.3", "accuracy &lt;= 0.75"):
        assert cell in table
    assert "findings 1 of 3 hold, 1 fail, 1 not checked" in text
    # status, profile, seed, elapsed, metrics, extra table, config, versions, record count
    for snippet in (
        "complete</span>",
        "quick",
        "3.21 s",
        "0.1235",
        '<h3 id="table-1">Extra</h3>',
        "2.5",
        "epochs",
        "torch",
        "2.13.0",
        "5 training records",
    ):
        assert snippet in text, snippet


def test_report_unfinished_and_missing_figure(tmp_path):
    run = make_run(tmp_path / "run", complete=False)
    res = json.loads((run / "results.json").read_text())
    res["figures"].append({"file": "../outside.png", "caption": "escapes the run dir"})
    (tmp_path / "outside.png").write_bytes((run / "figures" / "loss.png").read_bytes())
    (run / "results.json").write_text(json.dumps(res))
    text = render_report(run).read_text(encoding="utf-8")
    assert 'class="badge unfinished"' in text
    assert text.count("data:image/png") == 2  # the file outside the run is not embedded
    assert "not an image file inside the run directory" in text


@pytest.mark.parametrize("content", [None, "{not json", "[1, 2]"])
def test_report_missing_or_corrupt_results(tmp_path, content):
    run = make_run(tmp_path / "run", results=False)
    if content is not None:
        (run / "results.json").write_text(content)
    with pytest.raises(BiaslabError) as info:
        render_report(run)
    message = str(info.value)
    assert "results.json" in message and "\n" not in message
    assert not (run / "report.html").exists()


def test_format_value():
    assert format_value(0.123456789) == "0.1235"
    assert format_value(1.0) == "1"
    assert format_value(1234567.0) == "1.235e+06"
    assert format_value(42) == "42"
    assert format_value(None) == "\u2014"
    assert format_value(True) == "true"
    assert format_value("a<b") == "a<b"  # escaping is the caller's job
    assert format_value([1, 0.5]) == "[1, 0.5]"
    assert format_value(float("nan")) == "nan"


def _make_runs(runs: Path) -> None:
    """Two finished runs, a workshop with a nested lab, and an unfinished run."""
    for run in (
        make_run(runs / "xor-1", "xor", day=2),
        make_run(runs / "bias-1", "bias<i>", day=1),
        make_run(runs / "ws-1", "workshop", day=5),
        make_run(runs / "ws-1" / "labs" / "conv", "conv", day=3),
    ):
        render_report(run)
    make_run(runs / "late-1", "late", results=False, complete=False)


def _index_rows(text: str) -> list[str]:
    """The first row of each group (a tbody) of a table of runs."""
    return [re.search(r"<tr>(.*?)</tr>", body, re.DOTALL).group(1) for body in _groups(text)]


def _groups(text: str) -> list[str]:
    return re.findall(
        r'<tbody class="group">(.*?)</tbody>', text.split('<table class="runs"', 1)[1], re.DOTALL
    )


def _paths(text: str) -> list[str]:
    """The run paths of a table of runs, in order (each run's report link or note holds it)."""
    return [
        re.search(r'<td class="links"[^>]*><(?:a|span)[^>]*title="([^"]*)"', row).group(1)
        for row in _index_rows(text)
    ]


def test_index_lists_all_runs_with_working_links(tmp_path):
    runs = tmp_path / "runs"
    _make_runs(runs)
    out = render_index(runs)
    assert out == runs / "index.html"
    text = out.read_text(encoding="utf-8")
    rows = _index_rows(text)
    assert len(rows) == 5
    assert _paths(text) == ["bias-1", "xor-1", "ws-1/labs/conv", "ws-1", "late-1"]  # by day, no day last
    hrefs = _parse(text).refs
    assert len(hrefs) == 4
    for href in hrefs:
        assert not href.startswith(("/", "file:", "http"))
        assert (out.parent / unquote(href)).resolve().is_file()
    late = rows[-1]
    assert "unfinished" in late and "no report" in late
    assert "bias&lt;i&gt;" in text and "bias<i>" not in text
    assert "1/3 (1 not checked)" in rows[0] and FAIL_COLOUR in rows[0]
    assert all("complete</span>" in r for r in rows[:4])


def test_index_elsewhere_links_relative_to_it(tmp_path):
    runs = tmp_path / "runs"
    _make_runs(runs)
    out = render_index(runs, out=tmp_path / "site" / "all.html", title="My <runs>")
    text = out.read_text(encoding="utf-8")
    assert "<h1>My &lt;runs&gt;</h1>" in text
    for href in _parse(text).refs:
        assert href.startswith("../runs/")
        assert (out.parent / unquote(href)).resolve().is_file()


def test_index_empty_and_missing_dir(tmp_path):
    text = render_index(tmp_path).read_text(encoding="utf-8")
    assert "No runs found" in text
    with pytest.raises(BiaslabError, match="not found"):
        render_index(tmp_path / "nope")


NOTES_WRONG = {
    "claim": "sigmoid(1) as printed in the notes",
    "source": "notes §2.2 eq. (4)",
    "expected": "0.7113",
    "measured": 0.7311,
    "passed": False,
    "verdict": "notes-wrong",
    "computation": "1/(1+e^-1) = 0.731058... & the notes swap two digits",
}


def _with_claims(run: Path, claims: list) -> Path:
    """Replace the claims of a fake run's results.json."""
    res = json.loads((run / "results.json").read_text())
    res["claims"] = claims
    (run / "results.json").write_text(json.dumps(res))
    return run


def test_report_notes_wrong_claim_has_own_colour_label_and_computation(tmp_path):
    run = make_run(tmp_path / "run")
    claims = json.loads((run / "results.json").read_text())["claims"] + [NOTES_WRONG]
    text = render_report(_with_claims(run, claims)).read_text(encoding="utf-8")
    table = re.search(r'<table class="claims">(.*?)</table>', text, re.DOTALL).group(1)
    colours = re.findall(r'class="verdict" style="background:(#[0-9a-f]{6})"', table)
    notes = VERDICTS["notes-wrong"]
    assert notes.colour not in (PASS_COLOUR, FAIL_COLOUR, UNCHECKED_COLOUR)
    assert colours == [PASS_COLOUR, FAIL_COLOUR, UNCHECKED_COLOUR, notes.colour]
    row = re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL)[-1]
    assert notes.colour in row and notes.label.replace("'", "&#39;") in row
    assert "1/(1+e^-1) = 0.731058... &amp; the notes swap two digits" in row
    assert "findings 1 of 3 hold, 1 fail, 1 not checked; 1 slip in the documents" in text


def test_index_counts_notes_wrong_apart_from_failures(tmp_path):
    runs = tmp_path / "runs"
    passed = {"claim": "ok", "expected": "1", "measured": 1.0, "passed": True}
    failed = {"claim": "bad", "expected": "1", "measured": 0.0, "passed": False}
    _with_claims(make_run(runs / "a-1", "a", day=1), [passed, NOTES_WRONG])
    _with_claims(make_run(runs / "b-1", "b", day=2), [passed, failed, NOTES_WRONG])
    _with_claims(make_run(runs / "c-1", "c", day=3), [passed, passed])
    rows = _index_rows(render_index(runs).read_text(encoding="utf-8"))
    assert "1/1 (1 slip)" in rows[0]
    assert FAIL_COLOUR not in rows[0] and VERDICTS["notes-wrong"].colour in rows[0]
    assert "1/2 (1 slip)" in rows[1] and FAIL_COLOUR in rows[1]
    assert "2/2<" in rows[2] and PASS_COLOUR in rows[2]


def test_index_and_labs_follow_given_order(tmp_path):
    runs = tmp_path / "runs"
    for name in ("alpha", "zeta", "mid"):
        make_run(runs / f"{name}-1", name, day=1)
    make_run(runs / "other-1", "other", day=1)  # not in the order: after the known ones
    make_run(runs / "early-1", "early", day=0)  # an earlier day comes first regardless
    order = ["zeta", "mid", "alpha", "zeta"]
    paths = _paths

    text = render_index(runs, order=order).read_text(encoding="utf-8")
    assert paths(text) == ["early-1", "zeta-1", "mid-1", "alpha-1", "other-1"]
    text = render_index(runs).read_text(encoding="utf-8")  # no order: by day, then name
    assert paths(text) == ["early-1", "alpha-1", "mid-1", "other-1", "zeta-1"]

    ws = make_run(tmp_path / "ws", "workshop", day=5)
    for name in ("alpha", "zeta", "mid"):
        make_run(ws / "labs" / name, name, day=1)
    text = render_report(ws, order=order).read_text(encoding="utf-8")
    labs = text.split('<h2 id="labs">Labs</h2>', 1)[1]
    assert paths(labs) == ["zeta", "mid", "alpha"]


def test_html_module_uses_shared_vocabulary_and_templates():
    import biaslab.report.html as module

    source = Path(module.__file__).read_text(encoding="utf-8")
    assert "biaslab.registry" not in source and "_workshop_order" not in source
    for name in ("def format_value", "def _find_runs", "#c8f7c5", '"results.json"', "html.escape"):
        assert name not in source, name
    assert (PASS_COLOUR, FAIL_COLOUR, UNCHECKED_COLOUR) == tuple(
        VERDICTS[k].colour for k in ("pass", "fail", "unjudged")
    )
    templates = Path(module.__file__).with_name("templates")
    assert {"base.html.j2", "report.html.j2", "index.html.j2"} <= {p.name for p in templates.glob("*.j2")}


def test_the_index_never_overwrites_a_page_biaslab_did_not_write(tmp_path):
    runs = tmp_path / "runs"
    make_run(runs / "a-1", "a", day=1)
    (runs / "index.html").write_text("<html><title>My lab's homepage</title></html>")
    with pytest.raises(BiaslabError, match="is not a page biaslab wrote"):
        render_index(runs)
    assert "homepage" in (runs / "index.html").read_text()
    (runs / "index.html").unlink()
    render_index(runs)
    render_index(runs)  # its own index it rewrites
    with pytest.raises(BiaslabError, match="runs directory is empty"):
        render_index("")
