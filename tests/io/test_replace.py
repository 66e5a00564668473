"""Replacing an existing store or model file completes or leaves the old one in place: the
step that puts the new one where the old one was is made to fail, and the old one must
still be there, whole and readable."""

import os

import numpy as np
import pytest

import rfcli
from rfcli.errors import OutputError
from rfcli.io import atomic
from tests.helpers import run, tree_digest


def _fail_rename_onto(monkeypatch, target: str) -> list:
    """``os.replace`` raises the first time it would move something onto ``target`` (the
    new store or model: the step after moving the old one aside); the calls are recorded."""
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append((os.fspath(src), os.fspath(dst)))
        if os.path.abspath(dst) == os.path.abspath(target) and len(calls) == 1 + sum(
            os.path.abspath(d) != os.path.abspath(target) for _, d in calls
        ):
            raise OSError(28, "No space left on device (injected)")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return calls


def _raise(*args):
    raise OSError(5, "Input/output error (injected)")


@pytest.mark.parametrize("exchange", [False, True])
def test_a_failed_store_replacement_keeps_the_old_store(tmp_path, letter_small, monkeypatch,
                                                        exchange):  # fmt: skip
    store = tmp_path / "s.zarr"
    run(letter_small, store, label="label", n_features=32)
    before = tree_digest(store)
    old_codes = rfcli.FeatureStore(os.fspath(store)).group["codes"][:]
    if exchange:  # the atomic swap fails
        monkeypatch.setattr(atomic, "_exchange", _raise)
    else:  # the two renames (systems without an atomic swap): the second fails
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
        calls = _fail_rename_onto(monkeypatch, os.fspath(store))
    with pytest.raises(OutputError, match="cannot move the store into place.*unchanged"):
        run(letter_small, store, label="label", n_features=48)
    if not exchange:
        assert any(dst == os.fspath(store) for _, dst in calls)  # the failing step ran
    assert tree_digest(store) == before
    np.testing.assert_array_equal(rfcli.FeatureStore(os.fspath(store)).group["codes"][:],
                                  old_codes)  # fmt: skip
    assert sorted(os.listdir(tmp_path)) == ["s.zarr"]  # no partial or set-aside store left


@pytest.mark.parametrize("exchange", [False, True])
def test_a_store_replacement_replaces(tmp_path, letter_small, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    store = tmp_path / "s.zarr"
    run(letter_small, store, label="label", n_features=32)
    run(letter_small, store, label="label", n_features=48)
    assert rfcli.FeatureStore(os.fspath(store)).n_features == 48
    assert sorted(os.listdir(tmp_path)) == ["s.zarr"]


def test_a_failed_model_replacement_keeps_the_old_model(tmp_path, letter_small, monkeypatch):
    store, model = os.fspath(tmp_path / "s.zarr"), tmp_path / "m.npz"
    run(letter_small, store, label="label", n_features=32)
    rfcli.train(store, os.fspath(model), rfcli.TrainSettings(model="krr", alpha=1.0))
    before = model.read_bytes()
    _fail_rename_onto(monkeypatch, os.fspath(model))
    with pytest.raises(OutputError, match="cannot write.*injected"):
        rfcli.train(store, os.fspath(model), rfcli.TrainSettings(model="krr", alpha=0.01),
                    overwrite=True)  # fmt: skip
    assert model.read_bytes() == before
    assert rfcli.load_model(os.fspath(model))[0].info["alpha"] == 1.0
    assert sorted(os.listdir(tmp_path)) == ["m.npz", "s.zarr"]  # no temporary file left
