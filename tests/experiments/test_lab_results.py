"""What particular labs must show in --quick: the notes' numbers that tiny data can already meet,
and the workshop's index and progress lines."""

import re

import pytest

from biaslab.cli import main
from biaslab.registry import all_experiments
from biaslab.runs import read_json, tally, verdict_of

DAY1 = [e.name for e in all_experiments() if e.day == 1]


def test_xor_quick_claims_pass(quick_run):
    claims = quick_run("xor").claims
    assert [c["passed"] for c in claims] == [True, True], claims
    assert quick_run("xor").passed


def test_mnist_mlp_parameter_count(quick_run):
    result = quick_run("mnist-mlp")
    (params,) = [c for c in result.claims if "parameters" in c["claim"]]
    assert params["passed"] is True and params["measured"] == 203530
    assert result.metrics["parameters"] == 203530 and result.metrics["n_train"] == 2000


def test_gradients_reproduces_the_notes(quick_run):
    res = read_json(quick_run("gradients").run_dir / "results.json")
    m = res["metrics"]
    assert m["z"] == pytest.approx(10.9093, abs=5e-5)
    assert m["forward_tangent_x0"] == pytest.approx(2.9093, abs=5e-5)
    assert m["adjoint_x0"] == pytest.approx(2.9093, abs=5e-5)
    assert m["adjoint_x1"] == pytest.approx(11.5839, abs=5e-5)
    assert m["max_diff_to_torch"] <= 1e-12 and m["forward_vs_reverse"] <= 1e-12
    assert m["bowl_gradient"] == [2.0, 6.0]
    assert m["bowl_hessian"] == [[2.0, 0.0], [0.0, 6.0]]
    assert m["softmax_123"] == pytest.approx([0.0900, 0.2447, 0.6652], abs=5e-5)
    # The exact values; the ML-for-physics slides print 0.8670 for the last one (a rounding slip).
    assert m["softmax_246"] == pytest.approx([0.0159, 0.1173, 0.8668], abs=5e-5)
    assert m["softmax_1000"] == pytest.approx(m["softmax_123"], abs=1e-12)
    assert abs(m["cross_entropy_on_logits"] - m["softmax_then_nll"]) <= 1e-12
    titles = [t["title"] for t in res["tables"]]
    assert any("primal" in t for t in titles) and any("tangent" in t for t in titles)
    assert any("adjoint" in t for t in titles)


def test_gradients_softmax_slip_is_the_notes_not_a_failure(quick_run):
    """softmax([2, 4, 6]): the ML-for-physics slides' 0.8670 is proven wrong, not a failure."""
    result = quick_run("gradients")
    (claim,) = [c for c in result.claims if c["claim"] == "softmax([2, 4, 6])"]
    assert verdict_of(claim) == "notes-wrong" and claim["passed"] is None
    assert "0.8668" in claim["computation"] and claim["expected"] == "[0.0159, 0.1173, 0.8670]"
    assert claim["printed"] == "[0.0159, 0.1173, 0.8670]" and claim["kind"] == "check"
    assert claim["source"] == "ML-for-physics slides, 'Lack of scaling invariance'"
    counts = tally(result.claims)
    assert counts.failed == 0 and counts.slips == 1 and result.passed
    html = (result.run_dir / "report.html").read_text()
    assert "the printed figure is wrong" in html


def test_manual_backprop_gradient_report(quick_run):
    m = read_json(quick_run("manual-backprop").run_dir / "results.json")["metrics"]
    assert m["max_diff_torch"] <= 1e-12 and m["max_diff_tensor_engine"] <= 1e-12
    assert m["max_diff_finite_differences"] <= 1e-7
    assert m["parameters"] == 203_530


def test_lr_sweep_labels_every_curve(quick_run):
    m = read_json(quick_run("lr-sweep").run_dir / "results.json")["metrics"]
    shapes = [m[f"lr{lr:g}_shape"] for lr in (1e-1, 1e-2, 1e-3, 1e-4)]
    assert set(shapes) <= {"healthy", "overfitting", "underfitting", "diverging"}


def test_workshop_day1_index_and_progress_lines(capsys, tmp_path):
    out = tmp_path / "workshop"
    rc = main(["run", "workshop", "--quick", "--out", str(out), "--set", "days=1"])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    assert (out / "COMPLETE").is_file()
    res = read_json(out / "results.json")
    assert res["metrics"]["labs"] == len(DAY1)
    assert res["metrics"]["index"] == "index.html"
    assert sorted(p.name for p in (out / "labs").iterdir()) == sorted(DAY1)
    index = (out / "index.html").read_text()
    hrefs = re.findall(r'href="([^"]+)"', index)
    for name in DAY1:
        lab = out / "labs" / name
        assert (lab / "COMPLETE").is_file()
        assert read_json(lab / "config.json")["profile"] == "quick"
        assert f"labs/{name}/report.html" in hrefs, f"index does not link {name}"
    assert [h for h in hrefs if h.startswith("labs/")] == [f"labs/{n}/report.html" for n in DAY1]
    assert all((out / h).is_file() for h in hrefs)
    report = (out / "report.html").read_text()
    assert all(f'href="labs/{name}/report.html"' in report for name in DAY1)
    # One line per lab as it finishes (name, time, claims), in workshop order, then a table.
    lines = printed.out.splitlines()
    lab_lines = [line for line in lines if re.match(r"\s+\S+\s+\d.*\bs\s+claims \d+/\d+", line)]
    assert [line.split()[0] for line in lab_lines] == DAY1, printed.out
    # the columns aligned, the longest name (universal-approximation) included
    assert len({line.index("   claims ") for line in lab_lines}) == 1, printed.out
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["day", "lab"])
    assert [lines[header + 2 + i].split()[1] for i in range(len(DAY1))] == DAY1
    assert any(line.startswith("workshop: findings ") and " hold" in line for line in lines)


def test_decision_verdicts_follow_from_the_recorded_evidence(quick_run):
    """Each situation's verdict is decide() of the evidence results.json records (--quick data)."""
    from biaslab.evaluate.decision import Evidence, decide

    result = quick_run("decision")
    m, cfg = result.metrics, read_json(result.run_dir / "config.json")["config"]
    keys = ("min_accuracy", "max_ece", "min_shift_accuracy", "min_ood_auroc", "still_falling")
    thresholds = {k: cfg[k] for k in keys}
    for key in ("cnn_all", "cnn_small", "mlp_all"):
        size = m[f"{key}_train_size"]
        evidence = Evidence(
            train_sizes=[size // 2, size],  # the quick profile's two curve points
            val_errors=m[f"{key}_val_errors"],
            accuracy=m[f"{key}_test_accuracy"],
            ece=m[f"{key}_ece"],
            shift_accuracy=m[f"{key}_shift_accuracy"],
            shift_val_errors=m[f"{key}_shift_val_errors"],
            ood_auroc=m[f"{key}_ood_auroc"],
        )
        d = decide(evidence, **thresholds)
        assert (d.verdict, d.rule) == (m[f"{key}_verdict"], m[f"{key}_rule"]), key
        assert m[f"{key}_ood_detector"] in ("MSP", "energy", "Mahalanobis", "kNN")
    assert m["cnn_small_train_size"] == round(cfg["small_fraction"] * m["cnn_all_train_size"])
    res = read_json(result.run_dir / "results.json")
    (why,) = [t for t in res["tables"] if t["title"].startswith("Why")]
    assert [row[0] for row in why["rows"]] == [c["claim"].split(":")[0] for c in result.claims]


def test_bayesian_view_quick_measures_the_identity_and_the_evidences_choices(quick_run):
    result = quick_run("bayesian-view")
    m = result.metrics
    assert m["map_minus_ridge"] <= 1e-9 < 1e-3 < m["map_minus_ridge_tenfold"]  # exact at σ²/τ² only
    assert m["true_lambda"] == pytest.approx(0.25)  # σ = 0.5, τ = 1
    assert m["evidence_degree"] in range(1, 12) and m["degree12_train_mse"] < m["degree0_train_mse"]
    by_claim = {c["claim"].split(":")[0]: c for c in result.claims}
    assert by_claim["L2 weight decay is the MAP estimate under a Gaussian prior"]["passed"] is True
    assert by_claim["Dropout trains an ensemble"]["passed"] is None  # judged in the default profile
    records = {
        (r["name"], tuple(sorted(r["dims"].items())))
        for r in read_json(result.run_dir / "results.json")["records"]
    }
    assert ("accuracy", (("inference", "mc_dropout"), ("samples", 20))) in records


def test_test_set_quick_measures_the_spread_and_the_choice(quick_run):
    result = quick_run("test-set")
    m = result.metrics
    assert m["size100_sigma"] > m["size1000_sigma"] > 0  # a larger test set moves less
    assert m["size100_sigma_theory"] == pytest.approx(m["size100_sigma"], rel=0.3)
    assert "tried8_optimism" in m and "tried1_optimism" in m
    by_claim = {c["claim"].split(":")[0]: c for c in result.claims}
    assert by_claim["The spread follows the sampling law σ(n) = sqrt(p(1 − p)/n · (P − n)/(P − 1))"]["passed"]


def test_test_set_refuses_sizes_beyond_the_unseen_digits_before_training(tmp_path, monkeypatch):
    """The unseen population is known once the draws are made: too large a test set is one line
    then, before any of the models trains."""
    import biaslab
    from biaslab.errors import BiaslabError
    from biaslab.experiments import held_out

    def no_training(*args, **kwargs):
        raise AssertionError("the models trained before the sizes were checked")

    monkeypatch.setattr(held_out, "fit_ensemble", no_training)
    overrides = {"n_train": "5000", "models": "20", "sizes": "100,30000"}  # ~18,000 digits unseen
    with pytest.raises(BiaslabError, match=r"sizes up to 30000.*at most \d+, the digits no model saw"):
        biaslab.run("test-set", profile="quick", out=tmp_path / "run", overrides=overrides, progress=False)
