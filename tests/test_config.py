"""Config values from the command line: parsing, type errors, unknown keys, JSON round-trip."""

import dataclasses
import json
import math
from typing import Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

import biaslab.config
from biaslab.config import (
    apply_overrides,
    available_memory,
    check_batch_fits,
    check_memory,
    check_range,
    field_types,
    from_dict,
    parse_set_args,
    parse_value,
    to_dict,
)
from biaslab.errors import BiaslabError, ConfigError


@dataclasses.dataclass(frozen=True)
class Cfg:
    epochs: int = 10
    lr: float = 1e-3
    shuffle: bool = True
    activation: str = "relu"
    n_train: int | None = None
    n_test: int | None = 100
    hidden: tuple[int, ...] = (64, 32)
    scales: tuple[float, ...] = (0.5,)


# -- parse_value ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, expected", [("3", 3), (" 42 ", 42), ("-7", -7), ("0", 0)])
def test_parse_int(raw, expected):
    value = parse_value("epochs", raw, int)
    assert value == expected and type(value) is int


@pytest.mark.parametrize("raw, expected", [("0.1", 0.1), ("1e-3", 1e-3), ("2", 2.0), ("-3.5", -3.5)])
def test_parse_float(raw, expected):
    value = parse_value("lr", raw, float)
    assert value == expected and type(value) is float


@pytest.mark.parametrize("raw", ["true", "True", "1", "yes", "on", "ON"])
def test_parse_bool_true(raw):
    assert parse_value("shuffle", raw, bool) is True


@pytest.mark.parametrize("raw", ["false", "False", "0", "no", "off"])
def test_parse_bool_false(raw):
    assert parse_value("shuffle", raw, bool) is False


def test_parse_str_is_stripped_and_kept():
    assert parse_value("activation", " tanh ", str) == "tanh"
    assert parse_value("activation", "3", str) == "3"  # a string field takes digits as text


@pytest.mark.parametrize("tp", [int | None, Optional[int]])  # noqa: UP045 (both spellings)
def test_parse_optional(tp):
    assert parse_value("n_train", "none", tp) is None
    assert parse_value("n_train", "None", tp) is None
    assert parse_value("n_train", "null", tp) is None
    assert parse_value("n_train", None, tp) is None
    assert parse_value("n_train", "5", tp) == 5
    assert parse_value("n_train", 5, tp) == 5
    with pytest.raises(ConfigError, match=r"n_train.*expected an integer"):
        parse_value("n_train", "many", tp)


def test_non_optional_rejects_none():
    with pytest.raises(ConfigError, match="epochs"):
        parse_value("epochs", None, int)
    with pytest.raises(ConfigError, match="epochs"):
        parse_value("epochs", "none", int)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("64,32", (64, 32)),
        ("(64, 32)", (64, 32)),
        ("(64,)", (64,)),
        ("8", (8,)),
        ([1, 2], (1, 2)),
        ((3,), (3,)),
    ],
)
def test_parse_tuple_of_ints(raw, expected):
    value = parse_value("hidden", raw, tuple[int, ...])
    assert value == expected and isinstance(value, tuple)
    assert all(type(v) is int for v in value)


def test_parse_tuple_of_floats_and_bad_items():
    assert parse_value("scales", "0.5,1,2e-1", tuple[float, ...]) == (0.5, 1.0, 0.2)
    with pytest.raises(ConfigError, match=r"hidden.*expected an integer"):
        parse_value("hidden", "64,abc", tuple[int, ...])
    with pytest.raises(ConfigError, match="hidden"):
        parse_value("hidden", 64, tuple[int, ...])  # a bare number is not a list


@pytest.mark.parametrize(
    "key, raw, tp, expected_type",
    [
        ("epochs", "abc", int, "an integer"),
        ("epochs", "1.5", int, "an integer"),
        ("epochs", "", int, "an integer"),
        ("lr", "fast", float, "a number"),
        ("shuffle", "maybe", bool, "true or false"),
    ],
)
def test_wrong_type_from_string_names_key_and_type(key, raw, tp, expected_type):
    with pytest.raises(ConfigError) as info:
        parse_value(key, raw, tp)
    message = str(info.value)
    assert key in message and expected_type in message and raw in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "key, raw, tp",
    [
        ("epochs", 1.5, int),
        ("epochs", True, int),
        ("epochs", "x", int),
        ("lr", True, float),
        ("lr", "x", float),
        ("shuffle", 1, bool),
        ("activation", 3, str),
    ],
)
def test_wrong_python_values(key, raw, tp):
    with pytest.raises(ConfigError, match=key):
        parse_value(key, raw, tp)


def test_python_values_of_the_right_type():
    assert parse_value("lr", 1, float) == 1.0 and type(parse_value("lr", 1, float)) is float
    assert parse_value("epochs", 7, int) == 7
    assert parse_value("shuffle", False, bool) is False


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_int_string_round_trip(i):
    assert parse_value("k", str(i), int) == i


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_string_round_trip(x):
    assert parse_value("k", repr(x), float) == x


# -- apply_overrides --------------------------------------------------------------------------


def test_apply_overrides_parses_and_copies():
    cfg = Cfg()
    new = apply_overrides(
        cfg, {"epochs": "3", "lr": "0.5", "shuffle": "no", "hidden": "16,8", "n_train": "1000"}
    )
    assert new == Cfg(epochs=3, lr=0.5, shuffle=False, hidden=(16, 8), n_train=1000)
    assert cfg == Cfg()  # the original is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.epochs = 5
    assert apply_overrides(cfg, {}) is cfg


def test_unknown_key_suggests_closest():
    with pytest.raises(ConfigError) as info:
        apply_overrides(Cfg(), {"epoch": "3"}, context="experiment 'xor'")
    message = str(info.value)
    assert "unknown config key 'epoch'" in message
    assert "did you mean 'epochs'?" in message
    assert "experiment 'xor'" in message
    assert "\n" not in message


def test_unknown_key_without_close_match_lists_keys():
    with pytest.raises(ConfigError) as info:
        apply_overrides(Cfg(), {"zzzzzz": "1"})
    assert "did you mean" not in str(info.value)
    assert "epochs" in str(info.value) and "lr" in str(info.value)


@pytest.mark.parametrize(
    "key, raw, expected_type",
    [
        ("epochs", "abc", "an integer"),
        ("epochs", "1.5", "an integer"),
        ("lr", "fast", "a number"),
        ("shuffle", "maybe", "true or false"),
    ],
)
def test_apply_overrides_wrong_type(key, raw, expected_type):
    with pytest.raises(ConfigError) as info:
        apply_overrides(Cfg(), {key: raw})
    assert key in str(info.value) and expected_type in str(info.value)


def test_config_error_is_a_biaslab_error():
    assert issubclass(ConfigError, BiaslabError)


def test_field_types_resolves_annotations():
    types = field_types(Cfg)
    assert types["epochs"] is int and types["lr"] is float
    assert types["hidden"] == tuple[int, ...]


# -- JSON round trip --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cfg",
    [
        Cfg(),
        Cfg(
            epochs=1,
            lr=0.25,
            shuffle=False,
            activation="tanh",
            n_train=7,
            n_test=None,
            hidden=(3,),
            scales=(1.0, 2.5),
        ),
    ],
)
def test_json_round_trip(cfg):
    data = to_dict(cfg)
    assert isinstance(data["hidden"], list)  # tuples become JSON lists
    text = json.dumps(data)
    assert from_dict(Cfg, json.loads(text)) == cfg


def test_from_dict_is_type_checked():
    assert from_dict(Cfg, {"lr": 1}).lr == 1.0  # an integral float written by JSON as 1
    with pytest.raises(ConfigError, match="epochs"):
        from_dict(Cfg, {"epochs": 2.5})
    with pytest.raises(ConfigError, match="epochs"):
        from_dict(Cfg, {"epochs": True})
    with pytest.raises(ConfigError, match="unknown config key 'bogus'"):
        from_dict(Cfg, {"bogus": 1})


def test_nan_is_refused_from_json_too():
    """No config holds nan (so none is ever saved with one); a hand-edited file is refused."""
    with pytest.raises(ConfigError, match="lr='nan': expected a number, not text"):
        from_dict(Cfg, {"lr": "nan"})
    with pytest.raises(ConfigError, match="lr=inf: must be a finite number"):
        from_dict(Cfg, {"lr": math.inf})


# -- --set parsing ----------------------------------------------------------------------------


def test_parse_set_args():
    assert parse_set_args(["lr=0.1", "epochs=3"]) == {"lr": "0.1", "epochs": "3"}
    assert parse_set_args([" epochs =3"]) == {"epochs": "3"}
    assert parse_set_args(["name=a=b"]) == {"name": "a=b"}  # only the first '=' splits
    assert parse_set_args(["epochs="]) == {"epochs": ""}
    assert parse_set_args(["lr=1", "lr=1"]) == {"lr": "1"}  # the same value twice is one value
    with pytest.raises(ConfigError, match=r"lr is given two values \('1' and '2'\): give it once"):
        parse_set_args(["lr=1", "lr=2"])  # which was meant is not ours to guess
    assert parse_set_args(None) == {} and parse_set_args([]) == {}


@pytest.mark.parametrize("pair", ["foo", "=3", " =3", ""])
def test_parse_set_args_errors(pair):
    with pytest.raises(ConfigError) as info:
        parse_set_args(["lr=0.1", pair])
    assert "key=value" in str(info.value) and repr(pair)[1:-1] in str(info.value)


def test_literal_choices_are_checked():
    from dataclasses import dataclass
    from typing import Literal

    @dataclass(frozen=True)
    class C:
        act: Literal["relu", "tanh"] = "relu"

    assert apply_overrides(C(), {"act": "tanh"}).act == "tanh"
    with pytest.raises(ConfigError, match=r"act='foo': choose one of relu, tanh"):
        apply_overrides(C(), {"act": "foo"})


def test_require_positive():
    from dataclasses import dataclass

    from biaslab.config import require_positive

    @dataclass(frozen=True)
    class C:
        n: int | None = None
        hidden: tuple[int, ...] = (4, 2)

    require_positive(C(), "n", "hidden")
    with pytest.raises(ConfigError, match="n=0: must be > 0"):
        require_positive(C(n=0), "n")
    with pytest.raises(ConfigError, match="hidden"):
        require_positive(C(hidden=(4, 0)), "hidden")


# -- non-finite numbers and empty lists are refused for every config ---------------------------


@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", " Infinity ", "1e400", math.inf, -math.inf, math.nan])
def test_non_finite_floats_are_refused(raw):
    with pytest.raises(ConfigError, match=r"^lr=.*: must be a finite number$"):
        parse_value("lr", raw, float)


def test_non_finite_items_and_optional_floats_are_refused():
    with pytest.raises(ConfigError, match="scales=.*finite"):
        parse_value("scales", "0.5,inf", tuple[float, ...])
    with pytest.raises(ConfigError, match="max_grad_norm=.*finite"):
        parse_value("max_grad_norm", "nan", float | None)
    assert parse_value("max_grad_norm", "none", float | None) is None
    with pytest.raises(ConfigError, match="too large"):
        parse_value("lr", 10**400, float)


@pytest.mark.parametrize("raw", ["", " ", "()", ",", [], ()])
def test_empty_lists_are_refused(raw):
    with pytest.raises(ConfigError, match="hidden=.*give at least one value"):
        parse_value("hidden", raw, tuple[int, ...])


def test_apply_overrides_refuses_non_finite_and_empty():
    with pytest.raises(ConfigError, match="lr="):
        apply_overrides(Cfg(), {"lr": "inf"})
    with pytest.raises(ConfigError, match="hidden="):
        apply_overrides(Cfg(), {"hidden": ""})


# -- check_range -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Ranged:
    n: int | None = 5
    lr: float = 0.1
    sizes: tuple[int, ...] = (4, 2)
    flag: bool = True


@pytest.mark.parametrize(
    "kwargs, value, message",
    [
        (dict(low=1), {"n": 0}, "n=0: must be >= 1"),
        (dict(low=0, open_low=True), {"n": 0}, "n=0: must be > 0"),
        (dict(high=3), {"n": 4}, "n=4: must be <= 3"),
        (dict(low=1, high=59999, why="validation"), {"n": 0}, "n=0: must be in 1..59999 (validation)"),
        (dict(low=1, high=59999), {"n": 60000}, "n=60000: must be in 1..59999"),
        (dict(low=0, high=1, open_low=True, open_high=True), {"n": 1}, "n=1: must be > 0 and < 1"),
        (dict(low=0, high=1, open_high=True), {"n": 1}, "n=1: must be >= 0 and < 1"),
    ],
)
def test_check_range_messages(kwargs, value, message):
    with pytest.raises(ConfigError) as info:
        check_range(Ranged(**value), "n", **kwargs)
    assert str(info.value) == message


def test_check_range_accepts_bounds_none_and_checks_tuples_item_by_item():
    check_range(Ranged(n=1), "n", 1, 1)  # closed bounds are allowed values
    check_range(Ranged(n=None), "n", 1, 3)  # unset optional
    check_range(Ranged(lr=1e-300), "lr", 0, open_low=True)
    check_range(Ranged(), "sizes", 1)
    with pytest.raises(ConfigError, match=r"^sizes=4,0: each value must be >= 1$"):
        check_range(Ranged(sizes=(4, 0)), "sizes", 1)
    with pytest.raises(ConfigError, match=r"^lr=0.0: must be > 0 and <= 1e\+100 \(finite\)$"):
        check_range(Ranged(lr=0.0), "lr", 0, 1e100, "finite", open_low=True)
    with pytest.raises(ConfigError, match=r"^lr=-0.5: must be in -0.25..1e-08$"):
        check_range(Ranged(lr=-0.5), "lr", -0.25, 1e-8)


# -- check_batch_fits ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WithTrainingSet:
    batch_size: int = 32
    n_train: int = 100

    def training_set(self):
        return self.n_train, f"n_train={self.n_train}"


def test_check_batch_fits_names_both_keys():
    check_batch_fits(WithTrainingSet(batch_size=100))  # a batch as large as the set is fine
    with pytest.raises(ConfigError) as info:
        check_batch_fits(WithTrainingSet(batch_size=101))
    assert str(info.value).startswith("batch_size=101: must be <= 100, the size of the training set")
    assert "(n_train=100)" in str(info.value)
    check_batch_fits(Ranged())  # no batch_size, no training_set(): nothing to relate
    check_batch_fits(dataclasses.make_dataclass("B", [("batch_size", int, 10**9)])())


# -- check_memory -------------------------------------------------------------------------------


def test_available_memory_is_a_positive_number_of_bytes():
    assert isinstance(available_memory(), int) and available_memory() > 0


def test_check_memory_refuses_estimates_above_nine_tenths_of_the_free_memory(monkeypatch):
    monkeypatch.setattr(biaslab.config, "available_memory", lambda: 10 * 2**30)
    check_memory("hidden=8", 9 * 2**30, "the MLP")  # 90% of 10 GiB: still fits
    with pytest.raises(ConfigError) as info:
        check_memory("hidden=9", 9.5 * 2**30, "the MLP")
    assert str(info.value) == (
        "hidden=9: the MLP would need about 9.5 GiB of memory, more than the 10.0 GiB free "
        "on this machine; choose a smaller value"
    )


def test_check_memory_message_of_an_absurd_estimate_is_short(monkeypatch):
    monkeypatch.setattr(biaslab.config, "available_memory", lambda: 2**30)
    with pytest.raises(ConfigError) as info:
        check_memory("hidden=" + "9" * 400, 10**420)  # an integer beyond any float
    message = str(info.value)
    assert "\n" not in message and "e+290 GiB" in message and "1.0 GiB free" in message


# -- configs made of parts ------------------------------------------------------------------------
def test_a_config_made_of_parts_has_flat_keys():
    from biaslab.config import apply_overrides, field_types, from_dict, to_dict
    from biaslab.train.config import ClassifierTraining

    @dataclasses.dataclass(frozen=True)
    class Lab:
        train: ClassifierTraining = ClassifierTraining(epochs=5, lr=0.1)
        hidden: int = 8

        def __post_init__(self):
            if self.hidden > 100:
                raise ConfigError(f"hidden={self.hidden}: at most 100")

    keys = field_types(Lab)
    assert "train" not in keys and keys["hidden"] is int and keys["lr"] is float
    assert list(keys)[:2] == ["epochs", "batch_size"] and list(keys)[-1] == "hidden"  # the part's place
    cfg = apply_overrides(Lab(), {"lr": "0.01", "hidden": "16", "monitor": "val_accuracy"})
    assert (cfg.train.lr, cfg.train.epochs, cfg.hidden, cfg.train.monitor) == (0.01, 5, 16, "val_accuracy")
    saved = to_dict(cfg)
    assert saved["lr"] == 0.01 and "train" not in saved and from_dict(Lab, saved) == cfg
    with pytest.raises(ConfigError, match="lr=-1.0: must be > 0"):  # the part checks its own keys
        apply_overrides(Lab(), {"lr": "-1"})
    with pytest.raises(ConfigError, match="monitor='val_acc': choose one of"):
        apply_overrides(Lab(), {"monitor": "val_acc"})
    with pytest.raises(ConfigError, match="unknown config key 'train'"):
        apply_overrides(Lab(), {"train": "x"})


def test_two_parts_with_one_key_are_refused():
    from biaslab.config import field_types
    from biaslab.train.config import TrainConfig

    @dataclasses.dataclass(frozen=True)
    class Sizes:
        epochs: int = 3

    @dataclasses.dataclass(frozen=True)
    class Clash:
        train: TrainConfig = TrainConfig()
        sizes: Sizes = Sizes()

    with pytest.raises(TypeError, match="the key 'epochs' belongs to two of its parts"):
        field_types(Clash)
