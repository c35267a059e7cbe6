"""The index groups runs of one lab that differ only in their seed: one row, mean ± std of each
numeric metric, how often each claim held, a link to each run."""

import json
import re
from pathlib import Path

from biaslab.report import render_index
from biaslab.report.runs_table import runs_groups


def fake_run(
    path: Path,
    name: str = "ood",
    seed: int = 0,
    profile: str = "quick",
    auroc: float = 0.9,
    passed: bool = True,
    config: dict | None = None,
    day: int = 5,
) -> Path:
    """A finished run with a report file, one metric, one claim."""
    path.mkdir(parents=True)
    created = f"2026-11-2{seed % 10}T10:00:00"
    cfg = {
        "experiment": name,
        "profile": profile,
        "seed": seed,
        "config": config or {"hidden": 256},
        "created": created,
    }
    (path / "config.json").write_text(json.dumps(cfg))
    claim = {
        "claim": "AUROC is high",
        "source": "notes",
        "expected": ">= 0.8",
        "measured": auroc,
        "passed": passed,
    }
    metrics = {"auroc_animal-mnist_msp": auroc, "animal_mnist_duplicates": 284, "verdict": "ship"}
    res = {"experiment": name, "day": day, "profile": profile, "seed": seed, "elapsed_s": 2.0 + seed}
    res.update(metrics=metrics, claims=[claim])
    (path / "results.json").write_text(json.dumps(res))
    (path / "report.html").write_text("<html></html>")
    (path / "COMPLETE").write_text("")
    return path


def _rows(runs: Path) -> list[dict]:
    from biaslab.runs import find_runs

    return runs_groups(find_runs(runs), runs, runs, order=None)


def test_seeds_of_one_lab_share_a_row_with_mean_std_and_claims_held(tmp_path):
    runs = tmp_path / "runs"
    for seed, auroc, passed in ((0, 0.8, True), (1, 0.9, True), (2, 1.0, False)):
        fake_run(runs / f"ood-{seed}", seed=seed, auroc=auroc, passed=passed)
    fake_run(runs / "xor-0", "xor", day=1)
    rows = _rows(runs)
    assert [r["name"]["text"] for r in rows] == ["xor", "ood"]
    ood = rows[1]
    assert ood["n"] == 3 and ood["seeds"]["text"] == "0, 1, 2"
    assert [link["text"] for link in ood["links"]] == ["seed 0", "seed 1", "seed 2"]
    assert [link["href"] for link in ood["links"]] == [f"ood-{s}/report.html" for s in range(3)]
    assert ood["claims"]["text"] == "2/3"  # the verdicts of all three runs
    metrics = {m["key"]: m for m in ood["metrics"]}
    assert set(metrics) == {"auroc_animal-mnist_msp", "animal_mnist_duplicates"}  # numbers only
    assert metrics["auroc_animal-mnist_msp"]["value"] == "0.9 \u00b1 0.1"  # sample std over the seeds
    assert metrics["auroc_animal-mnist_msp"]["label"] == "AUROC, Animal-MNIST, max softmax probability"
    assert metrics["animal_mnist_duplicates"]["value"] == "284 \u00b1 0"
    assert ood["claim_rows"] == [{"claim": "AUROC is high", "held": "held in 2 of 3"}]
    assert ood["elapsed"]["text"] == "mean 3 s" and rows[0]["metrics"] == []  # a single run: no summary


def test_other_profiles_configs_and_repeated_seeds_are_not_merged(tmp_path):
    runs = tmp_path / "runs"
    fake_run(runs / "a", seed=0)
    fake_run(runs / "b", seed=1, profile="default")  # another profile
    fake_run(runs / "c", seed=2, config={"hidden": 64})  # another config
    fake_run(runs / "d", seed=0, config={"hidden": 32})
    fake_run(runs / "e", seed=0, config={"hidden": 32})  # the same seed again: a repeat, not a sample
    assert [r["n"] for r in _rows(runs)] == [1, 1, 1, 1, 1]


def test_the_index_shows_one_row_per_group_with_a_summary_and_a_sort_key_per_cell(tmp_path):
    runs = tmp_path / "runs"
    for seed in range(3):
        fake_run(runs / f"ood-{seed}", seed=seed, auroc=0.8 + seed / 10)
    text = render_index(runs).read_text(encoding="utf-8")
    groups = re.findall(
        r'<tbody class="group">(.*?)</tbody>\s*(?=<tbody class="group">|</table></div>)', text, re.DOTALL
    )
    assert len(groups) == 1
    assert groups[0].count("<a href=") == 3 and "3 seeds: mean ± std of 2 metrics" in groups[0]
    assert '<td title="auroc_animal-mnist_msp">AUROC, Animal-MNIST, max softmax probability</td>' in groups[0]
    first_row = re.search(r"<tr>(.*?)</tr>", groups[0], re.DOTALL).group(1)
    assert first_row.count("data-sort=") == 9  # one per column: what the sort script reads
    assert text.count('<button type="button">') == 9  # every header sorts
