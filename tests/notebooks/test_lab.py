"""The notebooks' Lab: the profile, claims judged as the experiments judge them, the day's runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from biaslab import registry
from biaslab.errors import BiaslabError
from biaslab.notebooks.lab import PROFILE_VARIABLE, SMOKE_MARK, STRICT_VARIABLE, ClaimFailed, Lab
from biaslab.report.display import FigureImage
from biaslab.report.plots import pyplot


def test_the_profile_comes_from_the_argument_then_the_environment(monkeypatch):
    monkeypatch.delenv(PROFILE_VARIABLE, raising=False)
    assert Lab(day=1).profile == "default"
    monkeypatch.setenv(PROFILE_VARIABLE, "quick")
    assert Lab(day=1).quick and Lab(day=1).pick(3, 30) == 3
    assert Lab(day=1, profile="default").pick(3, 30) == 30


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"profile": "fast"}, "choose one of"), ({"day": 6}, "days 1 to 5")]
)
def test_bad_settings_are_one_clear_error(kwargs, message):
    with pytest.raises(BiaslabError, match=message):
        Lab(**{"day": 1, **kwargs})


@pytest.mark.parametrize("profile", ["quick", "default"])
def test_claims_follow_the_experiments_quick_rule(profile, capsys, monkeypatch):
    monkeypatch.delenv(STRICT_VARIABLE, raising=False)
    lab = Lab(day=2, profile=profile)
    lab.claim("exact", expected="== 1", measured=1, passed=True, source="s", kind="check")
    lab.claim(
        "trained",
        expected=">= 0.9",
        measured=0.5,
        passed=False,
        source="s",
        kind="finding",
        checked_in_quick=False,
    )
    assert "[PASS] check: exact" in capsys.readouterr().out
    if profile == "quick":
        assert lab.claims[1]["passed"] is None and "(not judged in --quick)" in lab.claims[1]["expected"]
        lab.finish()  # nothing judged failed
    else:
        lab.finish()  # a failed claim is a result: shown, never raised outside strict mode
        assert "1 claim(s) did not hold" in capsys.readouterr().out
        monkeypatch.setenv(STRICT_VARIABLE, "1")
        with pytest.raises(ClaimFailed, match="1 claim\\(s\\) failed: trained"):
            lab.finish()
    assert "claims:" in capsys.readouterr().out  # finish shows the table before it judges


def test_run_adds_the_experiments_claims_and_run_day_knows_the_day(tmp_path, capsys):
    lab = Lab(day=1, profile="quick", runs_dir=tmp_path)
    assert lab.experiments() == [e.name for e in registry.all_experiments() if e.day == 1]  # in order
    result = lab.run("xor")
    assert result.run_dir.parent == tmp_path and (result.run_dir / "COMPLETE").is_file()
    assert lab.claims and all(c["claim"].startswith("xor: ") for c in lab.claims)
    assert len(lab.claims) == len(result.claims)


def test_show_draws_a_figure_as_png_and_closes_it(capsys):
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    image = FigureImage(fig)
    assert image._repr_png_().startswith(b"\x89PNG") and not plt.fignum_exists(fig.number)
    fig2, _ = plt.subplots()
    Lab(day=1, profile="quick").show(fig2)
    assert "bytes of PNG" in capsys.readouterr().out and not plt.fignum_exists(fig2.number)


@pytest.mark.parametrize("profile", ["quick", "default"])
def test_quick_figures_carry_the_smoke_test_mark(profile, monkeypatch, capsys):
    shown = []
    monkeypatch.setattr("biaslab.notebooks.lab.FigureImage", lambda fig: shown.append(fig) or "figure")
    fig, _ = pyplot().subplots()
    lab = Lab(day=1, profile=profile)
    lab.show(fig)
    marks = [t.get_text() for t in shown[0].texts]
    assert marks == ([SMOKE_MARK] if profile == "quick" else [])
    assert (SMOKE_MARK in capsys.readouterr().out) == (profile == "quick")  # said when the lab opens


def test_cells_train_on_the_labs_device_and_seed():
    lab = Lab(day=1, profile="quick", seed=3, device="cpu")
    setup = lab.setup("mlp")
    assert (setup.tag, setup.seed, setup.device) == ("mlp", 3, "cpu")
    assert Lab(day=1, profile="quick").device == "cpu"  # auto, on a machine without a GPU
    with pytest.raises(BiaslabError, match="device=cuda"):
        Lab(day=1, device="cuda")


class Unreadable:
    """An answer NumPy cannot even read."""

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array here")


@pytest.mark.parametrize(
    ("answer", "expected", "tolerance", "verdict", "says"),
    [
        (None, 203_530, None, "unanswered", "not answered yet"),
        (203_530, 203_530, None, "correct", "correct"),
        (200_000, 203_530, None, "not yet", "not yet: 200000 is too low"),
        (0.7502, 0.75, 1e-3, "correct", "correct"),
        (0.76, 0.75, 1e-3, "not yet", "0.76 is too high (by more than 0.001)"),
        (torch.tensor(0.25), 0.25, 1e-9, "correct", "correct"),  # a tensor from a cell's own code
        (" Healthy ", "healthy", None, "correct", "correct"),  # text: case and spaces ignored
        ("overfitting", "healthy", None, "not yet", "'overfitting' is not the answer"),
        ([1.0, 2.0], np.array([1.0, 2.5]), 1e-6, "not yet", "1 of 2 entries are off"),
        (("a", " C ", "b"), ("A", "C", "B"), None, "correct", "correct"),  # a matching: letters in order
        (("A", "B", "B"), ("A", "C", "B"), None, "not yet", "1 of 3 entries are off"),
        (("A", "C"), ("A", "C", "B"), None, "not yet", "the answer has 3 entries"),
        ([1, 2], 3, None, "not yet", "the answer has shape ()"),
        ("ten", 10, None, "not yet", "'ten' is not a number"),
        (float("nan"), 1.0, 0.1, "not yet", "nan is not a number"),
        (Unreadable(), 1.0, None, "not yet", "cannot be compared with the answer (RuntimeError)"),
    ],
)
def test_check_says_whether_an_answer_is_right_and_never_raises(
    answer, expected, tolerance, verdict, says, capsys
):
    lab = Lab(day=1, profile="quick")
    capsys.readouterr()
    lab.check("Exercise 1", answer, expected=expected, tolerance=tolerance)
    assert lab.answers == {"Exercise 1": verdict}
    out = capsys.readouterr().out
    assert out.startswith("Exercise 1: ") and says in out
    assert str(expected) not in out.removeprefix("Exercise 1: ")  # it never tells the answer


def test_answers_are_kept_apart_from_the_claims(capsys, monkeypatch):
    monkeypatch.setenv(STRICT_VARIABLE, "1")
    lab = Lab(day=1, profile="default")
    lab.claim("exact", expected="== 1", measured=1, passed=True, source="s", kind="check")
    lab.check("Exercise 1", 3, expected=4)  # wrong, yet no claim fails
    lab.check("Exercise 2", None, expected=4)
    assert len(lab.claims) == 1 and lab.answers == {"Exercise 1": "not yet", "Exercise 2": "unanswered"}
    lab.finish()  # strict, and nothing raised
    assert "Exercise" not in capsys.readouterr().out.split("claims:")[-1]


@pytest.mark.parametrize("online", [True, False])
def test_day_5_fetches_fashion_mnist_when_it_can_and_says_so_in_one_line_when_not(
    online, monkeypatch, capsys
):
    """The workshop book's OOD set is fetched with the day's data when online; offline the day runs
    without it and one line says why and how to add it."""
    import biaslab.data.fetch as fetching
    import biaslab.data.ood as ood
    from biaslab.errors import DataMissingError
    from biaslab.notebooks.lab import prepare_day

    asked = []

    def fetch(name, *args, **kwargs):
        asked.append(name)
        assert name != "fashion-mnist" or kwargs.get("progress") is False  # no progress lines before the one
        if not online:
            raise DataMissingError("Fashion-MNIST: cannot download (Name or service not known)\nmore")

    monkeypatch.setattr(fetching, "fetch", fetch)
    monkeypatch.setattr(ood, "fashion_mnist_fetched", lambda: False)
    prepare_day(5)
    lines = capsys.readouterr().out.splitlines()
    assert asked[-1] == "fashion-mnist"
    absent = [line for line in lines if "Fashion-MNIST" in line]
    if online:
        assert absent == ["Fashion-MNIST fetched (a one-time download, checksummed)"]
    else:
        assert absent == [
            "Fashion-MNIST is not here and could not be fetched, so the day runs without it "
            "(Fashion-MNIST: cannot download (Name or service not known)); "
            "`biaslab data fetch fashion-mnist` adds it"
        ]
    monkeypatch.setattr(ood, "fashion_mnist_fetched", lambda: True)
    asked.clear()
    prepare_day(5)
    assert "fashion-mnist" not in asked  # here already: nothing fetched
