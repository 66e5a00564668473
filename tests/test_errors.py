"""The error hierarchy speaks Python: bad values are ValueErrors, bad types TypeErrors,
unwritable outputs OSErrors, and library messages name the parameters (no CLI flags)."""

import os
import pickle
import re

import pytest

import rfcli
from rfcli.errors import (
    ConfigError,
    IncompatibleError,
    InputError,
    Interrupted,
    OutputError,
    ParameterTypeError,
    RfcliError,
    StoreError,
    UsageError,
    check_int,
)
from rfcli.jobs.encode import encode
from rfcli.jobs.train import TrainSettings, train
from rfcli.random import generator
from tests.helpers import LETTER

#: a CLI flag in a message (-C, --alpha), not a negative number
FLAG = re.compile(r"(^|[\s(`'\"])--?[a-zA-Z]")


@pytest.mark.parametrize(
    "cls,base",
    [
        (UsageError, ValueError),
        (InputError, ValueError),
        (StoreError, ValueError),
        (IncompatibleError, ValueError),
        (ConfigError, ValueError),
        (ParameterTypeError, TypeError),
        (ParameterTypeError, UsageError),
        (OutputError, OSError),
    ],
)
def test_errors_are_builtin_exceptions_too(cls, base):
    assert issubclass(cls, RfcliError) and issubclass(cls, base)
    assert cls.exit_code == 2


def test_only_type_errors_are_type_errors():
    for cls in (UsageError, InputError, StoreError, IncompatibleError, ConfigError, OutputError):
        assert not issubclass(cls, TypeError)
    assert not issubclass(Interrupted, ValueError | TypeError | OSError)
    assert Interrupted.exit_code == 130


def test_errors_survive_pickling():  # the Dask engine sends them between processes
    for e in (UsageError("x must be >= 1"), OutputError("p: already exists"),
              Interrupted("interrupted", partial="s.zarr.partial", rows_kept=3)):  # fmt: skip
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e)
    back = pickle.loads(pickle.dumps(Interrupted("i", partial="p", rows_kept=3)))
    assert (back.partial, back.rows_kept) == ("p", 3)


def _encode(out, **settings):
    return encode(os.fspath(LETTER), os.fspath(out), rfcli.EncodeSettings(**settings))


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda tmp: rfcli.make_map("gaussian", 0), "n_features must be >= 1, got 0"),
        (lambda tmp: rfcli.make_map("gaussian", 8, gamma=-1.0), "gamma must be a positive"),
        (lambda tmp: rfcli.make_map("positive", 7, hyperbolic=True),
         "hyperbolic needs an even n_features, got 7"),
        (lambda tmp: rfcli.make_map("ntk", 8, depth=0), "depth must be an integer >= 1, got 0"),
        (lambda tmp: rfcli.make_map("ntk", 8, m0=0), "m0 must be >= 1, got 0"),
        (lambda tmp: rfcli.make_map("ternary", 8, sparsity=1.0), "sparsity must be in [0, 1)"),
        (lambda tmp: rfcli.make_map("glf", 0, tol=2.0), "tol must be in (0, 1), got 2.0"),
        (lambda tmp: rfcli.make_quantizer("lm", 9), "bits must be an integer in 1..8, got 9"),
        (lambda tmp: _encode(tmp / "o.zarr", n_features=0),
         "n_features must be None or >= 1, got 0"),
        (lambda tmp: encode(os.fspath(LETTER), os.fspath(tmp / "o.zarr"), threads=0),
         "threads must be >= 1, got 0"),
        (lambda tmp: encode(os.fspath(LETTER), os.fspath(tmp / "o.zarr"),
                            read=rfcli.ReadSettings(chunk_rows=0)),
         "chunk_rows must be >= 1, got 0"),
        (lambda tmp: train(os.fspath(tmp), None, TrainSettings(model="svm", C=-1.0)),
         "C must be > 0 or 'auto', got -1"),
        (lambda tmp: train(os.fspath(tmp), None, TrainSettings(alpha=0.0)),
         "alpha must be > 0 or 'auto', got 0"),
        (lambda tmp: train(os.fspath(tmp), None, TrainSettings(alpha=-1)),
         "alpha must be > 0 or 'auto', got -1"),
        (lambda tmp: train(os.fspath(tmp), None, TrainSettings(cv_folds=-1)),
         "cv_folds must be >= 0, got -1"),
        (lambda tmp: train(os.fspath(tmp), None, TrainSettings(model="svm", C=1, tol=-1.0)),
         "tol must be > 0, got -1"),
        (lambda tmp: train(os.fspath(tmp), None, TrainSettings(tol=1e-9)),
         "tol must be >= 5.96e-08, got 1e-09"),
        (lambda tmp: train(os.fspath(tmp), None, TrainSettings(max_iter=0)),
         "max_iter must be >= 1, got 0"),
    ],
)  # fmt: skip
def test_bad_values_raise_value_errors_naming_the_parameter(tmp_path, call, message):
    with pytest.raises(ValueError) as e:
        call(tmp_path)
    assert isinstance(e.value, UsageError) and not isinstance(e.value, TypeError)
    assert message in str(e.value)
    assert not FLAG.search(str(e.value))
    assert not (tmp_path / "o.zarr").exists()


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: rfcli.make_map("gaussian", 2.5), "n_features must be an integer, got 2.5"),
        (lambda: rfcli.make_map("gaussian", True), "n_features must be an integer"),
        (lambda: rfcli.make_map("gaussian", 8, gamma=None), "gamma must be a positive number"),
        (lambda: generator("1"), "seed must be a non-negative integer, got '1'"),
        (lambda: rfcli.make_map("ntk", 8, depth=1.5), "depth must be an integer"),
        (lambda: rfcli.make_map("ternary", 8, sparsity="x"), "sparsity must be a number"),
        (lambda: rfcli.make_quantizer("lm", "2"), "bits must be an integer in 1..8, got '2'"),
        (lambda: encode(os.fspath(LETTER), "o.zarr", threads=2.5), "threads must be an integer"),
        (lambda: train("s.zarr", None, TrainSettings(C=None)), "C must be a number > 0 or 'auto'"),
        (
            lambda: train("s.zarr", None, TrainSettings(tol="abc")),
            "tol must be a number > 0, got 'abc'",
        ),
        (
            lambda: train("s.zarr", None, TrainSettings(normalized="yes")),
            "normalized must be True or False, got 'yes'",
        ),
        (
            lambda: train("s.zarr", None, TrainSettings(max_iter=10.0)),
            "max_iter must be an integer >= 1, got 10.0",
        ),
        (lambda: check_int("4", "workers", 1), "workers must be an integer, got '4'"),
    ],
)
def test_bad_types_raise_type_errors(call, message):
    with pytest.raises(TypeError) as e:
        call()
    assert isinstance(e.value, ParameterTypeError)
    assert message in str(e.value) and not FLAG.search(str(e.value))


def test_existing_output_is_an_os_error(tmp_path):
    from rfcli.io.jsonfile import write_json

    p = tmp_path / "q.json"
    p.write_text("{}")
    with pytest.raises(OSError, match=r"already exists \(set overwrite to replace it\)"):
        write_json(os.fspath(p), {"a": 1})
    with pytest.raises(OutputError):
        _encode(p)


def test_a_config_check_keeps_its_message():
    """A quantizer's own ConfigError (now also a ValueError) is not re-wrapped as 'must be
    numbers' by from_config's conversion guard."""
    from rfcli.quantize import Quantizer

    cfg = {"kind": "lm", "bits": 3, "borders": [0], "levels": [-1, 1]}
    with pytest.raises(ConfigError, match=r"^quantizer lm: 3 bits needs 7 borders and 8 levels"):
        Quantizer.from_config(cfg)
    with pytest.raises(ConfigError, match="must be numbers"):
        Quantizer.from_config({**cfg, "bits": 1, "borders": ["x"], "levels": [-1, 1]})


def test_library_messages_do_not_name_flags():
    """The library raises no message that starts with a CLI flag (the CLI has its own)."""
    import pathlib

    root = pathlib.Path(rfcli.__file__).parent
    flag = re.compile(r"""(?:Error|Exception)\(\s*f?["'](--?[a-zA-Z])""")
    bad = [
        f"{p.relative_to(root)}: {m.group(0)}"
        for p in root.rglob("*.py")
        if "cli" not in p.relative_to(root).parts
        for m in flag.finditer(p.read_text())
    ]
    assert bad == []
