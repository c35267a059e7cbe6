"""The experiment registry: every experiment is well formed, and names are unique and findable."""

import ast
import dataclasses
import json
import re
import subprocess
import sys
import types
import typing

import pytest

from biaslab import registry
from biaslab.catalog import Problem, read_catalog
from biaslab.config import field_types, flat_values, from_dict, to_dict, unused_keys
from biaslab.data.availability import CHECKS
from biaslab.errors import BiaslabError
from biaslab.train import TrainConfig

EXPERIMENTS = registry.all_experiments()
NAMES = [e.name for e in EXPERIMENTS]
SCALARS = (int, float, bool, str)


def _plain_type(tp) -> bool:
    """int, float, bool, str, ``Literal`` choices of those, ``X | None`` of those, or
    ``tuple[X, ...]`` of those."""
    if tp in SCALARS:
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return all(type(a) in SCALARS for a in args)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return len(args) == 2 and len(rest) == 1 and _plain_type(rest[0])
    if origin is tuple:
        return all(a in SCALARS or a is Ellipsis for a in args)
    return False


def test_day_one_experiments_in_order():
    day1 = [e.name for e in EXPERIMENTS if e.day == 1]
    assert day1 == [
        "xor",
        "mnist-mlp",
        "hidden-pca",
        "autoencoder-2d",
        "latent-dimension",
        "embeddings",
        "universal-approximation",
    ]
    day2 = [e.name for e in EXPERIMENTS if e.day == 2]
    assert day2 == ["gradients", "manual-backprop", "adam-vs-sgd", "lr-sweep", "depth", "sharpness"]


def test_names_unique_and_cli_safe():
    assert len(NAMES) == len(set(NAMES))
    for name in NAMES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), name


def test_workshop_is_day_zero_and_listed_last():
    assert registry.get("workshop").day == 0
    assert EXPERIMENTS[-1].name == "workshop"


def test_ordered_by_day():
    days = [e.day if e.day else 99 for e in EXPERIMENTS]
    assert days == sorted(days)


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=NAMES)
def test_experiment_is_well_formed(exp):
    assert exp.day in registry.DAY_TITLES
    assert isinstance(exp.summary, str) and exp.summary.strip() and "\n" not in exp.summary
    assert isinstance(exp.title, str) and exp.title.strip()
    assert callable(exp.fn)
    assert set(exp.required_data(exp.config())) <= set(CHECKS), "requires names an unknown data set"
    assert dataclasses.is_dataclass(exp.config)
    assert exp.config.__dataclass_params__.frozen, f"{exp.config.__name__} must be frozen"
    for name, tp in field_types(exp.config).items():  # fields only (not ClassVars)
        assert _plain_type(tp), f"{exp.config.__name__}.{name}: {tp} is not a plain type"
    assert set(exp.profiles) == set(registry.PROFILES)


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=NAMES)
@pytest.mark.parametrize("profile", registry.PROFILES)
def test_profiles_give_valid_configs(exp, profile):
    cfg = exp.make_config(profile)
    assert type(cfg) is exp.config
    # JSON round trip, as config.json stores it and --resume reads it.
    assert from_dict(exp.config, json.loads(json.dumps(to_dict(cfg)))) == cfg
    # Profile overrides name real keys with values of the right type (make_config checks).
    assert set(exp.profiles[profile]) <= set(field_types(exp.config))


def test_default_profile_is_the_dataclass_defaults():
    for exp in EXPERIMENTS:
        assert exp.make_config("default") == exp.config()


def test_quick_profile_is_smaller_for_xor():
    quick, default = (registry.get("xor").make_config(p) for p in ("quick", "default"))
    assert quick.train.epochs < default.train.epochs and quick.n_train < default.n_train


def test_make_config_overrides_and_errors():
    exp = registry.get("xor")
    assert exp.make_config("quick", {"epochs": "5"}).train.epochs == 5
    with pytest.raises(BiaslabError, match="unknown profile 'fast'"):
        exp.make_config("fast")
    with pytest.raises(BiaslabError, match="did you mean 'epochs'"):
        exp.make_config("quick", {"epoch": 5})


def test_get_unknown_suggests_closest():
    with pytest.raises(BiaslabError) as info:
        registry.get("xr")
    assert "unknown experiment 'xr'" in str(info.value)
    assert "did you mean 'xor'?" in str(info.value)
    with pytest.raises(BiaslabError, match="did you mean 'mnist-mlp'"):
        registry.get("mnist_mlp")
    with pytest.raises(BiaslabError) as info:
        registry.get("qqqqqqqqqq")
    assert "did you mean" not in str(info.value) and "biaslab list" in str(info.value)


def test_registering_a_name_twice_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @dataclasses.dataclass(frozen=True)
    class C:
        x: int = 1

    def first(ctx):
        pass

    def second(ctx):
        pass

    registry.experiment(name="test-dup", day=1, summary="s", config=C)(first)
    registry.experiment(name="test-dup", day=1, summary="s", config=C)(first)  # same fn: fine
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.experiment(name="test-dup", day=1, summary="s", config=C)(second)
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.experiment(name="xor", day=1, summary="s", config=C)(second)


def test_every_experiment_module_registers_a_lab():
    """A module in biaslab/experiments/ that registers nothing is a lab someone forgot."""
    registered = {e.fn.__module__ for e in EXPERIMENTS}
    for module in registry.experiment_modules():
        assert module in registered, f"{module} registers no experiment (@experiment missing?)"


def test_workshop_order_is_days_then_steps():
    steps = [(e.day or 99, e.step) for e in EXPERIMENTS]
    assert steps == sorted(steps)


def test_catalog_matches_the_registry():
    """What list and config show, read from the sources, equals what the imported labs hold."""
    entries = registry.catalog()
    assert [e.name for e in entries] == NAMES == registry.workshop_order()
    for entry, exp in zip(entries, EXPERIMENTS):
        assert (entry.day, entry.step, entry.title, entry.summary, entry.module) == (
            exp.day,
            exp.step,
            exp.title,
            exp.summary,
            exp.fn.__module__,
        )
        found = registry.configs(exp.name)
        assert found.configs == {p: to_dict(exp.make_config(p)) for p in registry.PROFILES}
        assert found.unused == unused_keys(exp.config)


def test_catalog_writes_no_cache(tmp_path, monkeypatch):
    """Nothing is cached: every call reads the sources as they are (tests/test_catalog.py)."""
    monkeypatch.setenv("BIASLAB_DATA", str(tmp_path))
    registry.catalog()
    registry.configs("xor")
    assert list(tmp_path.iterdir()) == []


def test_a_config_that_cannot_be_built_is_one_line_naming_the_lab(monkeypatch):
    """``biaslab config NAME`` imports the lab and builds each profile; a profile that cannot be
    built is one BiaslabError line naming the lab and the profile, never swallowed."""
    lr_sweep = registry.get("lr-sweep")
    expected = registry.configs("lr-sweep")
    assert expected.configs == {p: to_dict(lr_sweep.make_config(p)) for p in registry.PROFILES}
    assert "lr" in expected.unused
    broken = dataclasses.replace(lr_sweep, name="test-broken", profiles={"quick": {"epochs": -1}})
    monkeypatch.setitem(registry._REGISTRY, "test-broken", broken)
    with pytest.raises(
        BiaslabError, match=r"experiment 'test-broken': its quick config cannot be built: .*epochs"
    ):
        registry.configs("test-broken")


def test_catalog_imports_a_lab_whose_declaration_is_not_literal(monkeypatch):
    """A module the catalog cannot read is imported, not left out (tests/test_catalog.py fails on it)."""
    entries, problems = read_catalog()
    without = [e for e in entries if e.module != "biaslab.experiments.xor"]
    problem = Problem("biaslab.experiments.xor", "xor.py:1: summary= is not a literal")
    monkeypatch.setattr(registry, "read_catalog", lambda: (without, [*problems, problem]))
    assert [e.name for e in registry.catalog()] == NAMES
    assert registry.entry("xor").module == "biaslab.experiments.xor"


def test_unused_keys_are_refused_with_the_reason():
    exp = registry.get("lr-sweep")
    with pytest.raises(BiaslabError, match="'lr' is not used.*learning_rates"):
        exp.make_config("quick", {"lr": "0.1"})


def training_of(cfg) -> TrainConfig | None:
    """A lab config's training: its TrainConfig part, or the TrainConfig that a part made by
    ``training_without`` builds (the left-out keys at their defaults); None without one."""
    for f in dataclasses.fields(cfg):
        part = getattr(cfg, f.name)
        if isinstance(part, TrainConfig):
            return part
        if hasattr(part, "training") and dataclasses.is_dataclass(part):
            return part.training()
    return None


TRAINER_LABS = [e for e in EXPERIMENTS if training_of(e.config()) is not None]


def test_labs_with_every_kind_of_training_part_train():
    names = [e.name for e in TRAINER_LABS]
    assert {"xor", "gnn-nodes", "qm9", "mnist-mlp", "vae", "lr-sweep", "mnist1d"} <= set(names)


def test_no_lab_config_inherits_a_part():
    """A lab's config is made of parts (its training, its data sizes), never derived from one."""
    for exp in EXPERIMENTS:
        assert exp.config.__bases__ == (object,), f"{exp.name}: {exp.config.__bases__}"


@pytest.mark.parametrize("exp", TRAINER_LABS, ids=[e.name for e in TRAINER_LABS])
def test_training_keys_are_settable_where_labs_train_with_the_trainer(exp):
    """weight decay, patience and clipping are --set keys of every lab that trains with the Trainer."""
    cfg = exp.make_config("quick", {"weight_decay": "0.01", "patience": "2", "max_grad_norm": "1"})
    train = training_of(cfg)
    assert (train.weight_decay, train.patience, train.max_grad_norm) == (0.01, 2, 1.0)


def test_catalog_leaves_out_experiments_registered_elsewhere(monkeypatch):
    """A test's experiment (registered from outside biaslab/experiments/) is not in the catalog."""
    fake = dataclasses.replace(EXPERIMENTS[0], name="test-fake", fn=lambda ctx: None)
    monkeypatch.setitem(registry._REGISTRY, "test-fake", fake)
    assert "test-fake" in [e.name for e in registry.all_experiments()]
    assert "test-fake" not in registry.workshop_order()


def test_the_workshop_requires_the_data_of_its_days_labs():
    """Checked before its first lab: a missing data set stops it before anything is written."""
    workshop = registry.get("workshop")
    day1 = workshop.make_config("quick", {"days": "1"})
    assert "mnist" in workshop.required_data(day1)
    cfg = workshop.make_config("quick")
    every = workshop.required_data(cfg)
    labs = {d for e in EXPERIMENTS if e.day in cfg.days for d in e.required_data(e.config())}
    assert set(every) == labs


def _narrows(lab_type, part_type) -> bool:
    """Whether ``lab_type`` is ``part_type`` or narrower: a Literal of ``str`` values over a
    ``str``, or a Literal whose choices are among the part's Literal's."""
    if lab_type == part_type:
        return True
    if typing.get_origin(lab_type) is not typing.Literal:
        return False
    choices = typing.get_args(lab_type)
    if part_type is str:
        return all(isinstance(c, str) for c in choices)
    return typing.get_origin(part_type) is typing.Literal and set(choices) <= set(typing.get_args(part_type))


def _part_classes(cls) -> list[type]:
    """The dataclasses a lab's config is made of: its parts' classes, each with the dataclasses
    it derives from (ClassifierTraining from TrainConfig, HiddenPCASizes from MnistSizes)."""
    found = []
    for tp in typing.get_type_hints(cls).values():
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            found += [c for c in tp.__mro__ if dataclasses.is_dataclass(c)]
    return found


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=NAMES)
def test_no_key_is_typed_more_loosely_than_in_its_part(exp):
    """A part that redeclares a key of the part it derives from (ClassifierTraining's monitor
    over TrainConfig's) keeps its type or narrows it (a Literal stays a Literal); and what early
    stopping watches is a Literal of the keys the lab's trainings log, so a typo is refused when
    the config is made."""
    own = field_types(exp.config)
    for part in _part_classes(exp.config):
        types_ = field_types(part)
        for name, part_type in types_.items():
            if name in own:  # a key training_without leaves out is in no lab
                assert _narrows(own[name], part_type), (
                    f"{exp.name}: {name} is {own[name]}, over {part.__name__}'s {part_type}"
                )
    if "monitor" in own:
        assert typing.get_origin(own["monitor"]) is typing.Literal, f"{exp.name}: monitor is {own['monitor']}"


def _training_set_size(cfg) -> int | None:
    """The training set's size a config's batch is checked against: its own or its data part's."""
    holders = [cfg, *(getattr(cfg, f.name) for f in dataclasses.fields(cfg))]
    sizes = next((h for h in holders if hasattr(h, "training_set")), None)
    if "batch_size" not in flat_values(cfg) or sizes is None:
        return None
    return sizes.training_set()[0]


BATCHED_LABS = [e for e in EXPERIMENTS if _training_set_size(e.make_config("quick")) is not None]


def test_labs_with_a_batch_and_a_data_part_are_found():
    assert {"xor", "mnist-mlp", "lr-sweep", "mnist1d", "manual-backprop"} <= {e.name for e in BATCHED_LABS}


@pytest.mark.parametrize("exp", BATCHED_LABS, ids=[e.name for e in BATCHED_LABS])
def test_a_batch_larger_than_the_training_set_is_refused(exp):
    """Every lab with a batch_size and a data part checks the one against the other."""
    size = _training_set_size(exp.make_config("quick"))
    exp.make_config("quick", {"batch_size": str(size)})  # a batch as large as the training set
    with pytest.raises(BiaslabError, match=f"batch_size={size + 1}: must be <= {size}"):
        exp.make_config("quick", {"batch_size": str(size + 1)})


def test_the_looseness_check_can_fail():
    assert not _narrows(str, typing.Literal["a", "b"])
    assert not _narrows(typing.Literal["a", "c"], typing.Literal["a", "b"])
    assert _narrows(typing.Literal["a"], str) and _narrows(int, int)


def _claim_calls(source: str):
    """The ``*.claim(...)`` calls in Python ``source`` (a lab's module or a notebook cell)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "claim":
            yield node


def _sources_with_claims():
    """(where, Python source) of every lab module and every notebook code cell."""
    from pathlib import Path

    import biaslab

    package = Path(biaslab.__file__).parent
    for path in sorted((package / "experiments").glob("*.py")):
        yield path.name, path.read_text(encoding="utf-8")
    for path in sorted((package / "notebooks").glob("*.ipynb")):
        for n, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                code = "".join(cell["source"])
                code = "\n".join(
                    line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))
                )
                yield f"{path.name} cell {n}", code


def test_every_claim_declares_its_kind():
    """Each claim says what could refute it: kind="finding" (an outcome of training, sampling or
    data) or kind="check" (an identity or a property by construction). Read from the code, so a
    claim that only the default profile reaches is held to it too."""
    missing, found = [], 0
    for where, source in _sources_with_claims():
        for call in _claim_calls(source):
            found += 1
            kinds = [k.value for k in call.keywords if k.arg == "kind"]
            if not (kinds and isinstance(kinds[0], ast.Constant) and kinds[0].value in ("finding", "check")):
                missing.append(f"{where}:{call.lineno}")
    assert found > 150, found  # the scan sees the labs' and the notebooks' claims
    assert not missing, f"claims without kind='finding' or kind='check': {missing}"


def test_finding_the_labs_imports_neither_scikit_learn_nor_scipy_stats():
    """Every biaslab command imports every lab to find them: the heavy libraries a few labs use
    (scikit-learn and scipy.stats: about 1.5 s of a command's start) are imported where used."""
    heavy = ("sklearn", "scipy.stats", "pandas")
    found = f"[m for m in {heavy} if m in sys.modules]"
    code = f"import sys; from biaslab import registry; registry.discover(); print({found})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
