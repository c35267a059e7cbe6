"""Smoke test: every Day-1 lab in its --quick profile, and the workshop over Day 1."""

import re
import struct
from pathlib import Path

import pytest

import biaslab
from biaslab.cli import main
from biaslab.registry import get
from biaslab.runs import RunDir, read_json

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DAY1 = ["xor", "mnist-mlp", "hidden-pca", "autoencoder-2d"]
N_CLAIMS = {"xor": 2, "mnist-mlp": 3, "hidden-pca": 1, "autoencoder-2d": 1}


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("day1")
    return {name: biaslab.run(name, profile="quick", out=root / name) for name in DAY1}


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("name", DAY1)
def test_quick_run_structure(quick_runs, name):
    result = quick_runs[name]
    run = result.run_dir
    assert (run / "COMPLETE").is_file() and (run / "report.html").is_file()
    assert read_json(run / "config.json")["profile"] == "quick"
    res = read_json(run / "results.json")
    exp = get(name)
    assert res["experiment"] == name and res["day"] == 1 and res["profile"] == "quick"
    assert res["title"] == exp.title and res["summary"] == exp.summary and res["seed"] == 0
    assert isinstance(res["metrics"], dict) and res["metrics"]
    assert isinstance(res["tables"], list)

    assert len(res["claims"]) == N_CLAIMS[name]
    for claim in res["claims"]:
        assert set(claim) == {"claim", "expected", "measured", "passed", "source"}
        assert claim["claim"] and claim["expected"] and claim["source"]
        assert claim["passed"] in (True, False, None)

    assert res["figures"], "a lab must draw at least one figure"
    for fig in res["figures"]:
        path = run / fig["file"]
        assert fig["file"].startswith("figures/") and fig["caption"]
        width, height = png_size(path)
        assert width >= 200 and height >= 200 and path.stat().st_size > 5000
    listed = {run / f["file"] for f in res["figures"]}
    assert listed == set((run / "figures").glob("*.png")), "figures on disk but not listed"

    records = RunDir(run).read_metrics()
    assert records and all("tag" in r and "train_loss" in r for r in records)
    html = (run / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(res["figures"])


def test_xor_quick_claims_pass(quick_runs):
    claims = quick_runs["xor"].claims
    assert [c["passed"] for c in claims] == [True, True], claims
    assert quick_runs["xor"].passed


def test_mnist_mlp_parameter_count(quick_runs):
    (params,) = [c for c in quick_runs["mnist-mlp"].claims if "parameters" in c["claim"]]
    assert params["passed"] is True and params["measured"] == 203530
    assert quick_runs["mnist-mlp"].metrics["parameters"] == 203530
    assert quick_runs["mnist-mlp"].metrics["n_train"] == 2000


def test_workshop_day1_index(capsys, tmp_path):
    out = tmp_path / "workshop"
    rc = main(["run", "workshop", "--quick", "--out", str(out), "--set", "days=1"])
    assert rc == 0, capsys.readouterr().err
    assert (out / "COMPLETE").is_file()
    res = read_json(out / "results.json")
    assert res["metrics"]["labs"] == 4
    assert res["metrics"]["index"] == "index.html"
    assert sorted(p.name for p in (out / "labs").iterdir()) == sorted(DAY1)
    index = (out / "index.html").read_text()
    hrefs = re.findall(r'href="([^"]+)"', index)
    for name in DAY1:
        lab = out / "labs" / name
        assert (lab / "COMPLETE").is_file()
        assert read_json(lab / "config.json")["profile"] == "quick"
        assert f"labs/{name}/report.html" in hrefs, f"index does not link {name}"
    assert all((out / h).is_file() for h in hrefs)
    # The workshop's own report links every lab as well.
    report = (out / "report.html").read_text()
    assert all(f'href="labs/{name}/report.html"' in report for name in DAY1)
