"""Metrics as data (biaslab.records): a record's flat key derived from its dimensions, its
direction, malformed records refused; ctx.metric writing records and flat keys into results.json."""

from __future__ import annotations

import dataclasses

import pytest

import biaslab
from biaslab import registry
from biaslab.records import Term, measure, metric_key, param, record, words_from_json, words_to_json
from biaslab.report.labels import labeller
from biaslab.runs import read_json


def test_the_key_joins_the_dimensions_in_order_then_the_name():
    assert metric_key("accuracy", {"model": "penalty", "n": 5000, "split": "turned"}) == (
        "penalty_n5000_turned_accuracy"
    )
    assert (
        metric_key("error", {"model": "deep_sets", "n": 100, "split": "test"}) == "deep_sets_n100_test_error"
    )
    assert metric_key("lr", {"width": 0.5}) == "width0.5_lr" and metric_key("loss", {}) == "loss"


@pytest.mark.parametrize(
    ("name", "better"),
    [("loss", "lower"), ("mae", "lower"), ("rmse", "lower"), ("ece", "lower"), ("accuracy", "higher"),
     ("auroc", "higher")],
)  # fmt: skip
def test_a_record_knows_which_way_it_improves(name, better):
    assert record(name, 0.5, {"split": "val"})["better"] == better
    assert record("gap", 0.1, {}, better="lower")["better"] == "lower"  # declared where the name cannot say


@pytest.mark.parametrize(
    ("dims", "better", "message"),
    [({"better": "x"}, None, "names an argument"), ({"n": [1]}, None, "text or a finite number"),
     ({"n": float("nan")}, None, "text or a finite number"), ({"n": True}, None, "text or a finite number"),
     ({}, "down", "'lower' or 'higher'")],
)  # fmt: skip
def test_a_malformed_record_is_refused(dims, better, message):
    with pytest.raises(ValueError, match=message):
        record("accuracy", 1.0, dims, better)


def test_words_round_trip_through_json():
    words = {
        "none": "no regulariser",
        "gap": measure("gap"),
        "lam": param("λ = {}"),
        "up": Term("up", "modifier"),
    }
    back = words_from_json(words_to_json(words))
    assert back == {k: v if isinstance(v, Term) else Term(v) for k, v in words.items()}
    assert words_from_json({"x": [1, 2, 3], 4: ["a", "b", "c"], "ok": ["a", "name", ""]}) == {"ok": Term("a")}


def _recording(ctx) -> None:
    ctx.metric(plain=3)
    ctx.metric("accuracy", 0.75, model="tiny", n=20, split="test")
    ctx.metric("gap", 0.125, model="tiny", better="lower")
    ctx.metric("ece", 0.05, stage="before", key="ece_before")
    with pytest.raises(ValueError, match="describe one metric"):
        ctx.metric(plain=1, better="lower")


def test_ctx_metric_writes_records_and_their_flat_keys(in_tmp, monkeypatch):
    xor = registry.get("xor")
    words = {"tiny": "tiny model", "gap": measure("gap (training minus test accuracy)")}
    exp = dataclasses.replace(xor, name="test-records", fn=_recording, words=words)
    monkeypatch.setitem(registry._REGISTRY, "test-records", exp)
    run = biaslab.run("test-records", profile="quick", out="run").run_dir
    res = read_json(run / "results.json")
    assert res["metrics"] == {
        "plain": 3,
        "tiny_n20_test_accuracy": 0.75,
        "tiny_gap": 0.125,
        "ece_before": 0.05,
    }
    assert [(r["key"], r["dims"], r["better"]) for r in res["records"]] == [
        ("tiny_n20_test_accuracy", {"model": "tiny", "n": 20, "split": "test"}, "higher"),
        ("tiny_gap", {"model": "tiny"}, "lower"),
        ("ece_before", {"stage": "before"}, "lower"),
    ]
    label = labeller(res)
    assert label("tiny_n20_test_accuracy") == "Test accuracy, tiny model, n = 20"
    assert label("tiny_gap") == "Gap (training minus test accuracy), tiny model"
    assert "Test accuracy, tiny model, n = 20" in (run / "report.html").read_text()
