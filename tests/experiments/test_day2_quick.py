"""Smoke test: every Day-2 lab in its --quick profile, plus the notes' numbers of `gradients`."""


import pytest

import biaslab
from biaslab.runs import read_json

DAY2 = ["gradients", "manual-backprop", "adam-vs-sgd", "lr-sweep"]


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("day2")
    return {name: biaslab.run(name, profile="quick", out=root / name) for name in DAY2}


@pytest.mark.parametrize("name", DAY2)
def test_quick_run_completes_with_figures(quick_runs, name):
    run = quick_runs[name].run_dir
    assert (run / "COMPLETE").is_file() and (run / "report.html").is_file()
    res = read_json(run / "results.json")
    assert res["day"] == 2 and res["profile"] == "quick" and res["metrics"]
    assert res["figures"]
    for fig in res["figures"]:
        assert (run / fig["file"]).stat().st_size > 1000


def test_gradients_reproduces_the_notes(quick_runs):
    res = read_json(quick_runs["gradients"].run_dir / "results.json")
    m = res["metrics"]
    assert m["z"] == pytest.approx(10.9093, abs=5e-5)
    assert m["forward_tangent_x0"] == pytest.approx(2.9093, abs=5e-5)
    assert m["adjoint_x0"] == pytest.approx(2.9093, abs=5e-5)
    assert m["adjoint_x1"] == pytest.approx(11.5839, abs=5e-5)
    assert m["max_diff_to_torch"] <= 1e-12 and m["forward_vs_reverse"] <= 1e-12
    assert m["bowl_gradient"] == [2.0, 6.0]
    assert m["bowl_hessian"] == [[2.0, 0.0], [0.0, 6.0]]
    assert m["softmax_123"] == pytest.approx([0.0900, 0.2447, 0.6652], abs=5e-5)
    # The exact values; the notes print 0.8670 for the last one (a rounding slip).
    assert m["softmax_246"] == pytest.approx([0.0159, 0.1173, 0.8668], abs=5e-5)
    assert m["softmax_1000"] == pytest.approx(m["softmax_123"], abs=1e-12)
    assert abs(m["cross_entropy_on_logits"] - m["softmax_then_nll"]) <= 1e-12
    titles = [t["title"] for t in res["tables"]]
    assert any("primal" in t for t in titles) and any("tangent" in t for t in titles)
    assert any("adjoint" in t for t in titles)


def test_manual_backprop_gradient_report(quick_runs):
    m = read_json(quick_runs["manual-backprop"].run_dir / "results.json")["metrics"]
    assert m["max_diff_torch"] <= 1e-12 and m["max_diff_tensor_engine"] <= 1e-12
    assert m["max_diff_finite_differences"] <= 1e-7
    assert m["parameters"] == 203_530


def test_lr_sweep_labels_every_curve(quick_runs):
    m = read_json(quick_runs["lr-sweep"].run_dir / "results.json")["metrics"]
    shapes = [m[f"lr{lr:g}_shape"] for lr in (1e-1, 1e-2, 1e-3, 1e-4)]
    assert set(shapes) <= {"healthy", "overfitting", "underfitting", "diverging"}
