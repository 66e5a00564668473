"""The public Python API: ``import rfcli`` exposes the jobs and their settings, loads them
only when used, and the README's Python workflow runs as written (on a small sample)."""

import subprocess
import sys

import pytest

import rfcli
from tests.helpers import SAMPLE


def test_every_public_name_resolves():
    for name in rfcli.__all__:
        assert getattr(rfcli, name) is not None
    with pytest.raises(AttributeError):
        rfcli.no_such_name  # noqa: B018


def test_import_rfcli_loads_no_heavy_module():
    heavy = "('zarr', 'scipy', 'pyarrow', 'dask')"
    code = f"import sys, rfcli; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_readme_workflow(tmp_path, letter_small):
    tr, te = str(tmp_path / "train.rff.zarr"), str(tmp_path / "test.rff.zarr")
    rfcli.encode(str(letter_small), tr, rfcli.EncodeSettings(n_features=64, bits=2,
                 normalize_rows=True), rfcli.ReadSettings(label="label"))  # fmt: skip
    rfcli.encode(str(letter_small), te, like=tr)
    res = rfcli.train(tr, str(tmp_path / "krr.npz"), rfcli.TrainSettings(model="krr", alpha=1.0))
    assert isinstance(res, rfcli.TrainResult) and res.report["alpha"] == 1.0
    metrics = rfcli.evaluate(str(tmp_path / "krr.npz"), te)
    assert metrics["rows"] == 600 and 0 < metrics["accuracy"] <= 1
    model, encoder, meta = rfcli.load_model(str(tmp_path / "krr.npz"))
    assert encoder.fingerprint() == rfcli.FeatureStore(tr).meta["fingerprint"]
    rows = sum(len(F) for _, F in rfcli.FeatureStore(tr).iter_features())
    assert rows == 600


def test_train_and_train_gpr_return_the_same_kind_of_result(tmp_path):
    gs = rfcli.GPRSettings(features="rff", n_features=32, learn=False, lengthscale=1.0)
    res = rfcli.train_gpr(
        str(SAMPLE / "quakes.train.parquet"), None, gs, rfcli.ReadSettings(label="y")
    )
    assert isinstance(res, rfcli.TrainResult)
    assert res.report["model"] == "gpr" and res.seconds > 0
