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
    assert lines[0] == '"prediction"' and len(lines) == 601
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
    assert len(text) == 3 and text[0].startswith('"model","quantizer","bits"')
