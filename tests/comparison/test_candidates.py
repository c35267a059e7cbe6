"""The candidates of ``biaslab compare``: the decision guide, each model's shapes and symmetries,
the augmentation, and a user's own model (src/biaslab/comparison/candidates.py, models.py)."""

import sys

import numpy as np
import pytest
import torch
from torch import nn

from biaslab.comparison.candidates import Candidate, candidates_for
from biaslab.comparison.models import random_shifts
from biaslab.comparison.user_models import check_candidate, user_candidate
from biaslab.errors import ConfigError

N = 40
SHAPES = [
    ("table", (20,)),
    ("image", (1, 8, 8)),
    ("image", (1, 28, 28)),
    ("image", (3, 16, 16)),
    ("sequence", (30, 2)),
    ("set", (7, 3)),
]
TASKS = [("classify", 3), ("regress", 1)]


def batch(shape, seed=0):
    """N random examples of ``shape`` and, for sets, a mask with 1 to S real elements each."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, *shape, generator=g)
    sizes = torch.randint(1, shape[0] + 1, (N,), generator=g)  # (N,)
    mask = torch.arange(shape[0])[None, :] < sizes[:, None]  # (N, S)
    return x, mask


def one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message and message
    return message


def test_the_decision_guide_names_each_kinds_candidates():
    names = {
        kind: [c.name for c in candidates_for(kind, task="classify")]
        for kind in ("table", "image", "sequence", "set")
    }
    assert names == {
        "table": ["gradient-boosted trees", "linear model", "k-nearest neighbours", "MLP"],
        "image": ["linear model", "k-nearest neighbours", "MLP", "CNN", "CNN + augmentation"],
        "sequence": ["MLP", "1-D CNN", "GRU", "Transformer"],
        "set": ["Deep Sets", "Transformer without positions"],
    }
    priors = {c.name: c.prior for kind in names for c in candidates_for(kind, task="regress")}
    assert priors["CNN"] == "locality and translation equivariance"
    assert priors["Deep Sets"] == "permutation invariance"
    assert priors["MLP"].startswith("none beyond smoothness")
    assert all(c.takes_mask for c in candidates_for("set", task="classify"))
    augmented = [c for c in candidates_for("image", task="classify") if c.augment is not None]
    assert [c.name for c in augmented] == ["CNN + augmentation"]


@pytest.mark.parametrize("kind", ["graph", "molecule"])
def test_graphs_and_molecules_offer_candidates_that_read_graphs(kind):
    # the graph candidates themselves: tests/comparison/test_graph_candidates.py
    offered = candidates_for(kind, task="classify", has_positions=kind == "molecule")
    assert offered and all(c.reads in ("graph", "geometry", "fingerprint") for c in offered)


def test_an_unknown_kind_or_task_is_one_line():
    with pytest.raises(ConfigError, match="unknown kind 'audio'"):
        candidates_for("audio", task="classify")
    with pytest.raises(ConfigError, match="unknown task 'rank'"):
        candidates_for("table", task="rank")


@pytest.mark.parametrize(("task", "k"), TASKS)
@pytest.mark.parametrize(("kind", "shape"), SHAPES, ids=[f"{k}-{'x'.join(map(str, s))}" for k, s in SHAPES])
def test_every_candidate_maps_a_batch_to_one_output_per_class(kind, shape, task, k):
    x, mask = batch(shape)
    for candidate in candidates_for(kind, task=task):
        check_candidate(candidate, x, k, task, mask if candidate.takes_mask else None)
        model = candidate.build(shape, k, task)
        if candidate.engine == "sklearn":
            rows = x.reshape(N, -1).numpy()
            y = np.arange(N) % k if task == "classify" else rows[:, 0]
            model.fit(rows, y)
            out = model.predict_proba(rows) if task == "classify" else model.predict(rows)
            assert out.shape == ((N, k) if task == "classify" else (N,)), candidate.name
            continue
        torch.manual_seed(0)
        out = model(x, mask) if candidate.takes_mask else model(x)
        assert out.shape == (N, k), candidate.name
        assert torch.isfinite(out).all(), candidate.name


def test_the_trees_are_seeded_by_a_fixed_random_state():
    (trees,) = [c for c in candidates_for("table", task="regress") if c.name == "gradient-boosted trees"]
    assert trees.build((20,), 1, "regress").random_state == 0
    assert trees.build((20,), 2, "classify").random_state == 0


@pytest.mark.parametrize("task", ["classify", "regress"])
def test_the_linear_model_and_nearest_neighbours_equal_scikit_learns(task):
    """The two simplest priors are scikit-learn's estimators, fitted by the protocol's path."""
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 6))
    y = (x[:, 0] - x[:, 1] > 0).astype(np.int64) if task == "classify" else x @ np.arange(6.0)
    guide = {c.name: c for c in candidates_for("table", task=task)}
    references = {
        "linear model": LogisticRegression(max_iter=1000) if task == "classify" else Ridge(alpha=1.0),
        "k-nearest neighbours": (KNeighborsClassifier if task == "classify" else KNeighborsRegressor)(5),
    }
    for name, reference in references.items():
        ours = guide[name].build((6,), 2 if task == "classify" else 1, task).fit(x[:150], y[:150])
        reference.fit(x[:150], y[:150])
        np.testing.assert_allclose(ours.predict(x[150:]), reference.predict(x[150:]))
        assert guide[name].engine == "sklearn" and guide[name].prior


def permuted(x, mask, seed=1):
    """Each set's elements in another order, the mask moved with them."""
    g = torch.Generator().manual_seed(seed)
    order = torch.stack([torch.randperm(x.shape[1], generator=g) for _ in range(len(x))])  # (N, S)
    return x[torch.arange(len(x))[:, None], order], mask[torch.arange(len(x))[:, None], order]


@pytest.mark.parametrize("name", ["Deep Sets", "Transformer without positions"])
def test_set_models_are_permutation_invariant_and_ignore_padding(name):
    (candidate,) = [c for c in candidates_for("set", task="classify") if c.name == name]
    x, mask = batch((7, 3))
    x = x.masked_fill(~mask[..., None], 0.0)  # padding zeroed, as UserData holds it
    torch.manual_seed(0)
    model = candidate.build((7, 3), 4, "classify").eval()
    with torch.no_grad():
        out = model(x, mask)
        assert torch.allclose(model(*permuted(x, mask)), out, atol=1e-5)
        noisy = torch.where(mask[..., None], x, 100.0 * torch.randn_like(x))  # padded entries changed
        assert torch.allclose(model(noisy, mask), out, atol=1e-5)
        assert not torch.allclose(model(noisy, torch.ones_like(mask)), out, atol=1e-3)  # the check can fail


def test_the_sequence_transformer_depends_on_order():
    (transformer,) = [c for c in candidates_for("sequence", task="classify") if c.name == "Transformer"]
    x, _ = batch((12, 2))
    torch.manual_seed(0)
    model = transformer.build((12, 2), 3, "classify").eval()
    with torch.no_grad():
        out = model(x)
        reordered = model(x[:, torch.randperm(12, generator=torch.Generator().manual_seed(3))])
        assert torch.allclose(model(x.clone()), out)
        assert (reordered - out).abs().max() > 1e-3


def test_the_augmentation_is_seeded_keeps_the_shape_and_shifts():
    x = torch.rand(16, 1, 28, 28)
    first = random_shifts(x, torch.Generator().manual_seed(5))
    assert first.shape == x.shape
    assert torch.equal(first, random_shifts(x, torch.Generator().manual_seed(5)))
    assert not torch.equal(first, x)
    g = torch.Generator().manual_seed(5)
    assert not torch.equal(random_shifts(x, g), random_shifts(x, g))  # a call advances the generator
    # whole-pixel shifts of at most 28 // 8 = 3 pixels: each image's centre is the original moved
    for image, shifted in zip(x, first):
        assert any(
            torch.equal(shifted[..., 3:-3, 3:-3], image[..., 3 - dy : 25 - dy, 3 - dx : 25 - dx])
            for dx in range(-3, 4)
            for dy in range(-3, 4)
        )
    # the edges are repeated: no constant enters, so a flat image stays flat at any scaling
    flat = torch.full((4, 3, 8, 8), -1.7)
    assert torch.equal(random_shifts(flat, torch.Generator().manual_seed(0)), flat)


FACTORIES = """
import torch
from torch import nn


def good(input_shape, n_outputs):
    return nn.Sequential(nn.Flatten(), nn.Linear(int(torch.tensor(input_shape).prod()), n_outputs))


def raises(input_shape, n_outputs):
    raise RuntimeError("cannot build\\nthis one")


def not_a_module(input_shape, n_outputs):
    return 42


def wrong_shape(input_shape, n_outputs):
    return nn.Flatten()


def crashes(input_shape, n_outputs):
    return nn.Linear(3, n_outputs)


def masked(input_shape, n_outputs):
    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(input_shape[-1], n_outputs)

        def forward(self, x, mask):
            return self.linear((x * mask[..., None]).sum(1))

    return Pool()


masked.takes_mask = True
NOT_CALLABLE = 3
"""


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "my_models.py"
    path.write_text(FACTORIES)
    return path


def test_a_user_model_loads_from_a_file_or_a_module(model_file, monkeypatch):
    x, _ = batch((1, 8, 8))
    candidate = user_candidate(f"{model_file}:good")
    assert (candidate.name, candidate.prior, candidate.engine, candidate.takes_mask) == (
        "good",
        "your model",
        "torch",
        False,
    )
    check_candidate(candidate, x, 3, "classify")
    assert candidate.build((1, 8, 8), 3, "classify")(x).shape == (N, 3)
    monkeypatch.syspath_prepend(str(model_file.parent))
    check_candidate(user_candidate("my_models:good"), x.numpy(), 1, "regress")
    sets, set_mask = batch((5, 2))
    masked = user_candidate(f"{model_file}:masked")
    assert masked.takes_mask
    check_candidate(masked, sets, 2, "classify", set_mask.numpy())


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("my_models.py", "MODULE:FACTORY or FILE.py:FACTORY"),
        ("{file}:", "MODULE:FACTORY or FILE.py:FACTORY"),
        ("{dir}/absent.py:good", "no model file at"),
        ("no_such_module_anywhere:good", "no module named 'no_such_module_anywhere'"),
        ("{file}:absent", "has no 'absent'; it defines crashes, good, masked, not_a_module"),
        ("{file}:NOT_CALLABLE", "is a int, not a function"),
        ("{dir}/broken.py:good", "importing .*broken.py failed: SyntaxError"),
    ],
)
def test_a_bad_model_spec_is_one_line(model_file, spec, match):
    (model_file.parent / "broken.py").write_text("def good(:\n")
    spec = spec.format(file=model_file, dir=model_file.parent)
    with pytest.raises(ConfigError, match=match) as excinfo:
        user_candidate(spec)
    one_line(excinfo)


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        ("raises", r"candidate 'raises' could not be built for input shape \(1, 8, 8\) with 3 outputs: "),
        ("not_a_module", "candidate 'not_a_module': its factory returned a int, not a torch.nn.Module"),
        (
            "wrong_shape",
            r"candidate 'wrong_shape' maps input \(40, 1, 8, 8\) to \(40, 64\); expected \(40, 3\)",
        ),
        ("crashes", r"candidate 'crashes' failed on a batch of shape \(40, 1, 8, 8\): RuntimeError"),
    ],
)
def test_a_bad_factory_is_one_line_naming_the_candidate_and_the_shapes(model_file, factory, match):
    x, _ = batch((1, 8, 8))
    with pytest.raises(ConfigError, match=match) as excinfo:
        check_candidate(user_candidate(f"{model_file}:{factory}"), x, 3, "classify")
    one_line(excinfo)


def test_a_regression_model_must_give_one_column():
    wide = Candidate("wide", "none", "torch", lambda shape, k, task: nn.Linear(shape[0], 2))
    with pytest.raises(ConfigError, match=r"to \(40, 2\); expected \(40, 1\) \(one value per example\)"):
        check_candidate(wide, torch.randn(N, 5), 1, "regress")
    estimator = Candidate("odd", "none", "sklearn", lambda shape, k, task: object())
    with pytest.raises(ConfigError, match="not a scikit-learn estimator"):
        check_candidate(estimator, torch.randn(N, 5), 1, "regress")


EXITING = """
import sys

from torch import nn


def quits(input_shape, n_outputs):
    sys.exit(0)


def aborts(input_shape, n_outputs):
    return nn.Sequential(nn.Flatten(), Abort())


class Abort(nn.Module):
    def forward(self, x):
        raise SystemExit(3)
"""
# A script's habit: parse the command line at import.
PARSES = "import argparse\n\nargparse.ArgumentParser().parse_args()\n" + EXITING
NEEDS_AN_ARGUMENT = (
    "import argparse\n\np = argparse.ArgumentParser()\np.add_argument('epochs')\np.parse_args()\n"
)


def test_a_users_code_cannot_end_biaslab(tmp_path, capsys):
    """A factory or a model that calls sys.exit is one line naming it; a model file that parses the
    command line at import sees none of biaslab's arguments, and one that exits there (argparse
    wanting an argument) is one line, its usage naming its own file, never biaslab."""
    calm = tmp_path / "calm.py"
    calm.write_text(EXITING)
    x, _ = batch((1, 8, 8))
    with pytest.raises(ConfigError, match=r"calm.py:quits ended the program \(exit code 0") as excinfo:
        check_candidate(user_candidate(f"{calm}:quits"), x, 3, "classify")
    one_line(excinfo)
    with pytest.raises(ConfigError, match=r"candidate 'aborts' ended the program \(exit code 3") as excinfo:
        check_candidate(user_candidate(f"{calm}:aborts"), x, 3, "classify")
    one_line(excinfo)

    (tmp_path / "parses.py").write_text(PARSES)
    (tmp_path / "needs.py").write_text(NEEDS_AN_ARGUMENT + "\ndef good(shape, k):\n    return None\n")
    saved = sys.argv
    sys.argv = ["biaslab", "compare", "data.csv", "--model", "parses.py:quits"]
    try:
        assert user_candidate(f"{tmp_path / 'parses.py'}:quits").name == "quits"  # imported as it is
        with pytest.raises(ConfigError, match=r"importing .*needs.py: it ended the program \(exit code 2"):
            user_candidate(f"{tmp_path / 'needs.py'}:good")
    finally:
        sys.argv = saved
    printed = capsys.readouterr().err
    assert "needs.py" in printed and "biaslab" not in printed and "compare" not in printed
