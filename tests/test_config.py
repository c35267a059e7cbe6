"""Config values from the command line: parsing, type errors, unknown keys, JSON round-trip."""

import dataclasses
import json
import math
from typing import Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st

from biaslab.config import (
    apply_overrides,
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
        ("", ()),
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
            hidden=(),
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


def test_nan_written_as_string_reads_back():
    """runs.write_json stores nan as "nan"; from_dict must read that back as a float."""
    cfg = from_dict(Cfg, {"lr": "nan"})
    assert math.isnan(cfg.lr)


# -- --set parsing ----------------------------------------------------------------------------


def test_parse_set_args():
    assert parse_set_args(["lr=0.1", "epochs=3"]) == {"lr": "0.1", "epochs": "3"}
    assert parse_set_args([" epochs =3"]) == {"epochs": "3"}
    assert parse_set_args(["name=a=b"]) == {"name": "a=b"}  # only the first '=' splits
    assert parse_set_args(["epochs="]) == {"epochs": ""}
    assert parse_set_args(["lr=1", "lr=2"]) == {"lr": "2"}  # the last one wins
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
    with pytest.raises(ConfigError, match="n=0: must be positive"):
        require_positive(C(n=0), "n")
    with pytest.raises(ConfigError, match="hidden"):
        require_positive(C(hidden=(4, 0)), "hidden")
