"""A run in Jupyter and in a terminal: Result._repr_html_, biaslab.show and biaslab.load."""

import re
import sys
import types

import pytest

import biaslab
from biaslab.errors import BiaslabError
from biaslab.report.display import Result, load
from biaslab.report.html import FAIL_COLOUR, PASS_COLOUR, render_inline
from tests.report.test_html import EVIL, _parse, make_run


def test_the_fragment_shows_claims_in_verdict_colours_and_embeds_the_figures(tmp_path):
    run = make_run(tmp_path / "run")
    page = load(run)._repr_html_()
    assert page == render_inline(run)
    assert not re.search(r"<(html|head|body)\b", page)  # a fragment, not a page
    assert page.count('class="verdict"') == 3
    assert f"background:{PASS_COLOUR}" in page and f"background:{FAIL_COLOUR}" in page
    images = [r for r in _parse(page).refs if r.startswith("data:image/png;base64,")]
    assert len(images) == 2 and "Decision boundaries" in page
    assert all(rule.lstrip().startswith(".biaslab-run") for rule in _css_rules(page))  # scoped


def test_the_fragment_escapes_what_the_run_wrote(tmp_path):
    page = render_inline(make_run(tmp_path / "run"))
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "script" not in _parse(page).tags


def test_a_moved_run_displays_one_escaped_line_instead_of_raising(tmp_path):
    result = Result(tmp_path / EVIL, {"claims": []})
    page = result._repr_html_()
    assert page.startswith("<p><b>biaslab</b>:") and EVIL not in page


def test_text_display_and_repr(tmp_path, capsys):
    run = make_run(tmp_path / "run")
    result = biaslab.load(run)
    assert repr(result) == (
        f"Result('xor', run_dir='{run}', claims: findings 1 of 3 hold, 1 fail, 1 not checked)"
    )
    biaslab.show(run)  # no Jupyter kernel here: the text the CLI prints
    out = capsys.readouterr().out
    assert out.startswith("xor  profile=quick  seed=0  [complete]") and "[FAIL]" in out
    assert str(result) + "\n" == out


def test_in_a_kernel_show_displays_the_html(tmp_path, monkeypatch):
    shown = []
    shell = types.SimpleNamespace(config={"IPKernelApp": {}})
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell
    display = types.ModuleType("IPython.display")
    display.display = shown.append
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    biaslab.show(make_run(tmp_path / "run"))
    assert len(shown) == 1 and 'class="verdict"' in shown[0]._repr_html_()


@pytest.mark.parametrize("make", [lambda p: p, lambda p: make_run(p, results=False)])
def test_not_a_finished_run_is_one_clear_error(tmp_path, make):
    path = make(tmp_path / "nothing")
    with pytest.raises(BiaslabError, match="run directory|results"):
        biaslab.show(path)


def _css_rules(page: str) -> list[str]:
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    return [rule.split("{")[0] for rule in style.split("}") if "{" in rule]
