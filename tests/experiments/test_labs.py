"""Every registered lab in its --quick profile: found from the registry, no hand-written list.

In the spirit of scikit-learn's ``parametrize_with_checks``: a lab added to
``biaslab/experiments/`` is run and checked here without touching this file.
"""

import re
import struct
from pathlib import Path

import pytest

from biaslab import registry
from biaslab.documents import place_problem, printed_problem, seeds_folder, source_problem
from biaslab.results import KINDS, SLIPS
from biaslab.runs import VERDICTS, RunDir, read_json, verdict_of

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LABS = [e for e in registry.all_experiments() if e.day != 0]  # the workshop runs them all
CLAIM_KEYS = {"claim", "expected", "measured", "passed", "source", "kind"}
SEEDS = seeds_folder()  # the documents' texts beside the checkout, where there is one


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("exp", LABS, ids=[e.name for e in LABS])
def test_quick_run_is_complete_and_well_formed(quick_run, exp):
    run = quick_run(exp.name).run_dir
    assert (run / "COMPLETE").is_file() and (run / "report.html").is_file()
    saved = read_json(run / "config.json")
    assert saved["profile"] == "quick" and saved["device"] == "cpu"
    res = read_json(run / "results.json")
    assert res["experiment"] == exp.name and res["day"] == exp.day and res["profile"] == "quick"
    assert res["title"] == exp.title and res["summary"] == exp.summary and res["seed"] == 0
    assert isinstance(res["metrics"], dict) and res["metrics"]
    assert isinstance(res["tables"], list)

    for claim in res["claims"]:
        assert CLAIM_KEYS <= set(claim) <= CLAIM_KEYS | {"printed", "verdict", "computation", "timing"}
        assert claim.get("timing", True) is True  # present only on a wall-clock claim
        assert claim["claim"] and claim["expected"] and claim["source"]
        assert claim["passed"] in (True, False, None)
        assert claim["kind"] in KINDS, claim
        assert verdict_of(claim) in VERDICTS
        if verdict_of(claim) in SLIPS:
            assert claim["passed"] is None and claim["computation"] and claim["printed"]
    assert not any(verdict_of(c) == "fail" for c in res["claims"]), [
        c for c in res["claims"] if verdict_of(c) == "fail"
    ]

    assert res["figures"], "a lab draws at least one figure"
    for fig in res["figures"]:
        path = run / fig["file"]
        assert fig["file"].startswith("figures/") and fig["caption"]
        width, height = png_size(path)
        assert width >= 200 and height >= 200 and path.stat().st_size > 5000
    listed = {run / f["file"] for f in res["figures"]}
    assert listed == set((run / "figures").glob("*.png")), "figures on disk but not listed"

    html = (run / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(res["figures"])
    records = RunDir(run).metrics.read()
    if records:
        assert all("tag" in r for r in records)


@pytest.mark.parametrize("exp", LABS, ids=[e.name for e in LABS])
def test_quick_run_claims_cite_the_documents(quick_run, exp):
    """Every claim's source names a document and a place in it, biaslab's target or a paper with
    its year (biaslab.documents); where the documents lie beside the checkout, the places exist
    and every figure, formula or label a claim quotes as printed is printed there."""
    for claim in read_json(quick_run(exp.name).run_dir / "results.json")["claims"]:
        assert source_problem(claim["source"]) is None, (claim["claim"], source_problem(claim["source"]))
        if SEEDS is None:
            continue
        assert place_problem(claim["source"], SEEDS) is None, (
            claim["claim"],
            place_problem(claim["source"], SEEDS),
        )
        if claim.get("printed"):
            problem = printed_problem(claim["printed"], claim["source"], SEEDS)
            assert problem is None, (claim["claim"], problem)


@pytest.mark.parametrize("exp", LABS, ids=[e.name for e in LABS])
def test_quick_run_trains_with_the_shared_recipes(quick_run, exp):
    """Each training a lab logs is tagged, and its records carry a training loss."""
    for record in RunDir(quick_run(exp.name).run_dir).metrics.read():
        assert "train_loss" in record, record


# Words that give a wall-clock measurement away in a metric's name or a caption.
CLOCK_WORDS = re.compile(r"(second|_s$|time|minute|\d\s*s\b|\bs\)|duration)", re.IGNORECASE)


@pytest.mark.parametrize("exp", LABS, ids=[e.name for e in LABS])
def test_quick_run_keeps_wall_clock_out_of_what_the_seed_fixes(quick_run, exp):
    """Timings live in results.json's "timings", in claims marked "timing" and in table columns
    declared ``timing_columns``; never in metrics, other columns or captions, which a seed must
    reproduce bit for bit."""
    res = read_json(quick_run(exp.name).run_dir / "results.json")
    assert isinstance(res["timings"], dict)
    assert all(isinstance(v, float) for v in res["timings"].values())
    assert not [k for k in res["metrics"] if CLOCK_WORDS.search(k)], res["metrics"]
    assert not [f["caption"] for f in res["figures"] if re.search(r"\d\s*s\)|seconds", f["caption"])]
    for table in res["tables"]:
        timed = table.get("timing_columns", [])
        assert not [c for c in table["columns"] if CLOCK_WORDS.search(str(c)) and c not in timed], table
        assert set(timed) <= set(table["columns"])
    for claim in res["claims"]:
        if claim.get("timing"):
            assert "budget" in claim["expected"], "a timing claim states the budget it is judged on"
    html = (quick_run(exp.name).run_dir / "report.html").read_text()
    assert html.count("Machine-dependent") == sum(1 for c in res["claims"] if c.get("timing"))


@pytest.mark.parametrize("exp", LABS, ids=[e.name for e in LABS])
def test_every_key_biaslab_config_lists_is_read_by_the_lab(quick_run, exp):
    """A key the lab never reads would be accepted by --set and change nothing."""
    quick_run(exp.name)
    shown = registry.configs(exp.name)
    listed = set(shown.configs["quick"]) - set(shown.unused)  # what `biaslab config` lists
    unread = sorted(listed - quick_run.reads[exp.name])
    assert not unread, f"{exp.name} lists keys it never reads: {unread}"


def test_the_key_recorder_sees_uses_and_ignores_checks():
    from dataclasses import dataclass

    from tests.experiments.key_reads import recording

    @dataclass(frozen=True)
    class Config:
        used: int = 1
        unused: int = 2

        def __post_init__(self):
            assert self.used > 0 and self.unused > 0  # a check reads every key: not a use

    with recording(Config) as reads:
        cfg = Config()
        total = cfg.used * 2
    assert total == 2 and reads == {"used"}
    assert not hasattr(Config, "__getattribute__") or "__getattribute__" not in Config.__dict__
