"""train / predict / evaluate / sweep through the CLI."""

import json

import pytest
from click.testing import CliRunner

from rfcli.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def stores(tmp_path_factory, letter_small):
    d = tmp_path_factory.mktemp("cli_learn")
    tr = d / "tr.zarr"
    r = invoke(
        "encode", letter_small, "-o", tr, "--label", "label", "-m", "128", "--normalize-rows"
    )
    assert r.exit_code == 0, r.output
    return d, tr


def test_train_evaluate_predict_json(stores, letter_small):
    d, tr = stores
    r = invoke("train", tr, "--model", "krr", "-o", d / "krr.npz")
    assert r.exit_code == 0, r.output
    assert "alpha=" in r.stderr
    r = invoke("evaluate", d / "krr.npz", tr, "--json")
    out = json.loads(r.stdout)
    assert {"accuracy", "macro_f1", "rows", "bits_per_sample", "seconds"} <= out.keys()
    r = invoke("evaluate", d / "krr.npz", letter_small)
    assert "accuracy" in r.stdout
    r = invoke("predict", d / "krr.npz", letter_small, "-o", "-")
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "prediction" and len(lines) == 601
    r = invoke("train", tr, "--model", "svm", "-C", "1", "--max-iter", "50", "-o", d / "svm.npz")
    assert r.exit_code == 0 and "iterations" in r.stderr


def test_kernel_error_json(stores, letter_small):
    _, tr = stores
    r = invoke("evaluate", "--kernel-error", tr, "--data", letter_small, "--rows", "200", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["rows"] == 200
    assert 0 < out["plain"]["rel_frobenius"] < 1 and out["normalized"]["condition_number"] >= 1


def test_kernel_error_refuses_other_data(stores, tmp_path):
    import numpy as np

    from tests.helpers import write_parquet

    _, tr = stores
    fake = write_parquet(
        tmp_path / "f.parquet", **{f"f{i}": np.random.default_rng(i).random(300) for i in range(16)}
    )
    r = invoke("evaluate", "--kernel-error", tr, "--data", fake, "--rows", "100")
    assert r.exit_code == 2 and "not the input" in r.stderr


def test_evaluate_usage_errors(stores):
    d, tr = stores
    r = invoke("evaluate", d / "nothing.npz", tr)
    assert r.exit_code == 2 and "no such model" in r.stderr
    r = invoke("evaluate", tr)
    assert r.exit_code == 2


def test_sweep_small(tmp_path, letter_small):
    out = tmp_path / "res.csv"
    r = invoke(
        "sweep",
        letter_small,
        letter_small,
        "--model",
        "krr",
        "--label",
        "label",
        "--normalize-rows",
        "--bits",
        "1,none",
        "--features",
        "64",
        "--quantizer",
        "lm",
        "-o",
        out,
    )
    assert r.exit_code == 0, r.output
    text = out.read_text().splitlines()
    assert len(text) == 3 and text[0].startswith("model,quantizer,bits")


def test_train_shows_the_selection(stores, monkeypatch):
    """Default selection: the candidate table (mean and spread over the folds, SVM passes
    per C), the choice, the refit's passes, the cache, and the warning when the best C is
    still at the edge after the extensions."""
    from rfcli.jobs import train as training

    d, tr = stores
    monkeypatch.setattr(training, "C_GRID", (1e-4, 1e-3))  # far too small: the best is above
    r = invoke("train", tr, "--model", "svm", "--max-iter", "40", "-o", d / "sel.npz")
    assert r.exit_code == 0, r.output
    err = r.stderr
    assert "5-fold cross-validation of C (held-out accuracy" in err
    lines = [ln.split() for ln in err.splitlines()]
    rows = [ln for ln in lines if ln and ln[0] in ("0.0001", "0.001", "0.01", "0.1")]
    assert [ln[0] for ln in rows] == ["0.0001", "0.001", "0.01", "0.1"]
    assert all(int(ln[3]) > 0 for ln in rows)  # passes per C
    assert sum("<- chosen" in " ".join(ln) for ln in rows) == 1
    assert "(extension)" in err and "warning: C=0.1 is at the upper edge" in err
    assert "on all rows:" in err and "features cached in memory:" in err and "decoded" in err
    assert "passes over the data in all" in err
    r = invoke("train", tr, "--model", "krr", "--cv-folds", "3", "-o", d / "k.npz")
    assert r.exit_code == 0 and "3-fold cross-validation of alpha" in r.stderr
    assert "<- chosen" in r.stderr
    r = invoke("train", tr, "--model", "svm", "--cv-folds", "0", "--cache-mb", "0",
               "--max-iter", "20", "-o", d / "s0.npz")  # fmt: skip
    assert r.exit_code == 0 and "cross-validation" not in r.stderr
    assert "C=1 on all rows" in r.stderr and "not cached" in r.stderr


def test_kernel_error_accepts_rows_another_version_rounded_differently():
    """A store written by another rfcli version differs from a re-encode only in codes at a
    border (docs/store-format.md, Codes from the phase): a few codes one level off pass;
    a code two levels off, or many codes off, is another input."""
    from types import SimpleNamespace

    import numpy as np
    import pytest

    from rfcli.errors import IncompatibleError
    from rfcli.jobs.kernel_error import _check_same_input
    from rfcli.quantize import make_quantizer, pack_codes

    enc = SimpleNamespace(quantizer=make_quantizer("lm", 2), n_features=512)
    codes = np.random.default_rng(0).integers(0, 4, (200, 512)).astype(np.uint8)
    stored = pack_codes(codes, 2)
    near = codes.copy()
    at = ([3, 50, 120, 199], [7, 300, 11, 511])
    near[at] = np.where(near[at] == 3, 2, near[at] + 1)  # one level off
    _check_same_input(enc, pack_codes(near, 2), stored, "in", "store")  # 4 of 102,400 codes
    far = codes.copy()
    far[3, 7] = (far[3, 7] + 2) % 4
    with pytest.raises(IncompatibleError, match="not the input"):
        _check_same_input(enc, pack_codes(far, 2), stored, "in", "store")
    many = codes.copy()
    many[:, :20] = np.where(many[:, :20] == 3, 2, many[:, :20] + 1)
    with pytest.raises(IncompatibleError, match="not the input"):
        _check_same_input(enc, pack_codes(many, 2), stored, "in", "store")
