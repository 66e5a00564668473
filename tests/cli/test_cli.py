"""The CLI through click's CliRunner and through real subprocesses."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from rfcli import FeatureStore
from rfcli.cli import cli
from tests.helpers import LETTER, write_parquet


def invoke(*args, **kw):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, **kw)


def test_version_and_help():
    r = invoke("--version")
    assert r.exit_code == 0 and "rfcli" in r.output
    for cmd in ("encode", "inspect", "decode", "fit-quantizer"):
        r = invoke(cmd, "--help")
        assert r.exit_code == 0
        assert "Examples:" in r.output


def test_fit_quantizer_json(tmp_path):
    out = tmp_path / "q.json"
    r = invoke("fit-quantizer", "--kind", "lm", "-b", "1", "-o", out)
    assert r.exit_code == 0, r.output
    q = json.loads(out.read_text())
    assert q["kind"] == "lm" and q["bits"] == 1
    assert q["borders"] == [0.0]
    np.testing.assert_allclose(q["levels"], [-2 / np.pi, 2 / np.pi])
    assert "0.63662" in r.output  # table printed
    r = invoke("fit-quantizer", "--kind", "lm2", "-b", "3")
    q = json.loads(r.stdout)
    assert len(q["borders"]) == 7 and len(q["levels"]) == 8


def test_encode_inspect_decode(tmp_path, letter_small):
    store = tmp_path / "s.zarr"
    r = invoke(
        "encode",
        letter_small,
        "-o",
        store,
        "--label",
        "label",
        "-m",
        "128",
        "-b",
        "2",
        "--normalize-rows",
    )
    assert r.exit_code == 0, r.output
    assert "gamma = " in r.stderr and "wrote" in r.stderr
    assert r.stdout == ""  # results only on stdout; diagnostics on stderr
    r = invoke("inspect", store, "--json")
    info = json.loads(r.stdout)
    assert info["rows"] == 600 and info["features"] == 128 and info["bits_per_sample"] == 256
    assert info["complete"] is True and info["quantizer"] == "lm"
    r = invoke("inspect", store)
    assert "compression" in r.stdout and "float32" in r.stdout
    r = invoke("decode", store, "-o", "-", "--normalized")
    assert r.exit_code == 0
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 601 and lines[0].startswith("label,f0,")


def test_fit_quantizer_empirical_cli(tmp_path, letter_small):
    f = tmp_path / "f.zarr"
    common = ["--label", "label", "-m", "32", "--kernel", "ntk", "--standardize"]
    r = invoke("encode", letter_small, "-o", f, "--quantizer", "none", *common)
    assert r.exit_code == 0, r.output
    q = tmp_path / "q.json"
    r = invoke("fit-quantizer", "--kind", "empirical", "-b", "3", "--map", f, letter_small,
               "--sample", "4000", "-o", q)  # fmt: skip
    assert r.exit_code == 0, r.output
    cfg = json.loads(q.read_text())
    assert cfg["kind"] == "empirical" and cfg["sample_values"] == 4000 and len(cfg["levels"]) == 8
    r = invoke("encode", letter_small, "-o", tmp_path / "e.zarr", "--quantizer-file", q, *common)
    assert r.exit_code == 0, r.output
    r = invoke("encode", letter_small, "-o", tmp_path / "x.zarr", "--quantizer-file", q,
               *common, "--seed", "1")  # fmt: skip
    assert r.exit_code == 2 and "another map" in r.stderr
    r = invoke("fit-quantizer", "--kind", "empirical", "-b", "2")
    assert r.exit_code == 2 and "--map" in r.stderr


def test_fit_quantizer_threads_do_not_change_the_file(tmp_path):
    # all 12,000 rows of letter are sampled: three blocks of 4096 mapped rows, on 1-3 threads
    f = tmp_path / "f.zarr"
    r = invoke("encode", LETTER, "-o", f, "--quantizer", "none", "--label", "label", "-m", "16",
               "--kernel", "ntk", "--standardize", "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
    files = []
    for threads in (1, 2, 3):
        q = tmp_path / f"q{threads}.json"
        r = invoke("fit-quantizer", "--kind", "empirical", "-b", "3", "--map", f, LETTER,
                   "--sample", "400000", "--threads", threads, "-o", q)  # fmt: skip
        assert r.exit_code == 0, r.output
        files.append(q.read_bytes())
    assert json.loads(files[0])["sample_rows"] == 12_000
    assert files[1] == files[0] and files[2] == files[0]


def test_encode_with_quantizer_file(tmp_path, letter_small):
    q = tmp_path / "q.json"
    invoke("fit-quantizer", "--kind", "uniform", "-b", "3", "-o", q)
    r = invoke(
        "encode",
        letter_small,
        "-o",
        tmp_path / "s.zarr",
        "--label",
        "label",
        "-m",
        "16",
        "--quantizer-file",
        q,
    )
    assert r.exit_code == 0, r.output
    assert FeatureStore(os.fspath(tmp_path / "s.zarr")).encoder.quantizer.kind == "uniform"
    r = invoke("encode", letter_small, "-o", tmp_path / "t.zarr", "-b", "2", "--quantizer-file", q)
    assert r.exit_code == 2 and "does not match" in r.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--columns", "nope"], "'nope'"),
        (["--label", "nope"], "label column 'nope' not found"),
        (["--depth", "2"], "--depth applies to --kernel ntk"),
        (["--kernel", "positive", "--hyperbolic", "-m", "7"], "--hyperbolic needs an even -m"),
        (["--kernel", "ternary", "--target", "cos"], "no thresholds"),  # raw coordinates
        (["--kernel", "ternary", "--quantizer", "lm"], "does not fit"),
        (["--kernel", "positive", "--gamma", "50"], "kappa"),
    ],
)
def test_bad_options_give_one_line_errors(tmp_path, letter_small, args, needle):
    r = invoke("encode", letter_small, "-o", tmp_path / "x.zarr", *args)
    assert r.exit_code == 2
    assert needle in r.stderr
    assert "Traceback" not in r.output
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "cmd,args,needle",
    [
        ("encode", ["-b", "9"], "Invalid value for '-b' / '--bits': 9 is not in 1..8"),
        ("encode", ["-m", "0"], "Invalid value for '-m' / '--features': 0 is not in the range"),
        ("encode", ["--gamma", "-1"], "Invalid value for '--gamma': -1 is not a positive number"),
        ("encode", ["--kernel", "ntk", "--depth", "0"], "Invalid value for '--depth'"),
        ("encode", ["--threads", "0"], "Invalid value for '--threads'"),
        ("encode", ["--chunk-rows", "0"], "Invalid value for '--chunk-rows'"),
        ("encode", ["--store-chunk-rows", "0"], "Invalid value for '--store-chunk-rows'"),
        ("encode", ["--kernel", "ternary", "--sparsity", "1"], "Invalid value for '--sparsity'"),
        ("encode", ["--kernel", "glf", "--kernel-tol", "1"], "Invalid value for '--kernel-tol'"),
        ("encode", ["--kernel", "glf", "--nodes", "3"], "list of even integers >= 2"),
        ("encode", ["--kernel", "glf", "--lengthscale-bounds", "2,1"], "0 < LO <= HI"),
        ("encode", ["--memory", "lots"], "Invalid value for '--memory': 'lots' is not a size"),
        ("encode", ["--engine", "dask", "--workers", "0"], "Invalid value for '--workers'"),
        ("train", ["--model", "gpr", "--noise-bounds", "0,1"], "for '--noise-bounds'"),
        ("train", ["--model", "gpr", "--lengthscale", "0"], "Invalid value for '--lengthscale'"),
    ],
)
def test_option_ranges_are_checked_by_click(tmp_path, letter_small, cmd, args, needle):
    """Out-of-range option values are refused before the library runs: click's usage error
    names the flag (the library's own messages name its Python parameters)."""
    out = tmp_path / ("x.zarr" if cmd == "encode" else "x.npz")
    r = invoke(cmd, letter_small, "-o", out, *args)
    assert r.exit_code == 2
    assert needle in r.stderr
    assert "Traceback" not in r.output
    assert r.stderr.strip().startswith("rfcli: error: Invalid value for ")
    assert len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.fixture(scope="module")
def store16(tmp_path_factory, letter_small):
    """A store of letter_small's rows with m = 16 features."""
    store = tmp_path_factory.mktemp("store16") / "s.zarr"
    r = invoke("encode", letter_small, "--label", "label", "-m", "16", "-o", store, "-q")
    assert r.exit_code == 0
    return store


@pytest.mark.parametrize(
    "args,message",
    [
        (["--model", "krr", "--alpha", "0"], "--alpha must be > 0 or 'auto', got 0"),
        (["--model", "svm", "-C", "-1"], "-C must be > 0 or 'auto', got -1"),
        (["--model", "svm", "--cv-folds", "-1"], "--cv-folds must be >= 0, got -1"),
        (["--model", "svm", "--tol", "-1"], "--tol must be > 0, got -1"),
        (["--model", "svm", "--max-iter", "0"], "--max-iter must be >= 1, got 0"),
    ],
)
def test_train_settings_are_checked_by_their_table(tmp_path, store16, args, message):
    """svm/krr settings are refused by TrainSettings' table (rfcli.constraints), naming the
    flags, before any work: the same checks as the library's, not a copy in click."""
    out = tmp_path / "x.npz"
    r = invoke("train", store16, "-o", out, *args)
    assert r.exit_code == 2
    assert r.stderr.strip() == f"rfcli: error: {message}"
    assert not out.exists()


def test_a_solver_that_stops_early_says_so_on_stderr(tmp_path, store16):
    out = tmp_path / "x.npz"
    r = invoke("train", store16, "--model", "svm", "-C", "100", "--max-iter", "2", "-o", out)
    assert r.exit_code == 0 and out.exists()
    warn = [x for x in r.stderr.splitlines() if x.startswith("warning: ")]
    assert len(warn) == 1 and "did not converge after 2 iterations" in warn[0], r.stderr
    r = invoke("train", store16, "--model", "svm", "-C", "1", "-o", tmp_path / "y.npz")
    assert r.exit_code == 0 and "did not converge" not in r.stderr


def test_missing_input_and_bad_store(tmp_path):
    r = invoke("encode", tmp_path / "missing.parquet")
    assert r.exit_code == 2 and "no such file" in r.stderr
    r = invoke("inspect", tmp_path)
    assert r.exit_code == 2 and "not" in r.stderr


def test_env_defaults(tmp_path, letter_small):
    r = invoke(
        "encode",
        letter_small,
        "-o",
        tmp_path / "s.zarr",
        "--label",
        "label",
        env={"RFCLI_ENCODE_FEATURES": "40"},
    )
    assert r.exit_code == 0, r.output
    assert FeatureStore(os.fspath(tmp_path / "s.zarr")).n_features == 40


def rfcli_proc(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "rfcli", *map(str, args)], capture_output=True, **kw
    )


def test_subprocess_stdin_csv_and_exit_codes(tmp_path, letter_small_csv):
    data = letter_small_csv.read_bytes()
    out = tmp_path / "stdin.zarr"
    p = rfcli_proc(
        "encode", "-", "-o", out, "--label", "label", "-m", "32", "--standardize", input=data
    )
    assert p.returncode == 0, p.stderr.decode()
    assert FeatureStore(os.fspath(out)).n_rows == 600
    # same result as from the file
    p2 = rfcli_proc(
        "encode",
        letter_small_csv,
        "-o",
        tmp_path / "file.zarr",
        "--label",
        "label",
        "-m",
        "32",
        "--standardize",
    )
    assert p2.returncode == 0
    a = FeatureStore(os.fspath(out)).group["codes"][:]
    b = FeatureStore(os.fspath(tmp_path / "file.zarr")).group["codes"][:]
    np.testing.assert_array_equal(a, b)
    bad = rfcli_proc("encode", "-", "-o", tmp_path / "bad.zarr", input=b"")
    assert bad.returncode == 2 and b"empty" in bad.stderr and b"Traceback" not in bad.stderr


def test_subprocess_non_numeric_and_nan(tmp_path):
    path = write_parquet(
        tmp_path / "d.parquet", a=np.array([1.0, 2.0, np.nan]), s=np.array(["x", "y", "z"])
    )
    p = rfcli_proc("encode", path, "-o", tmp_path / "o.zarr", "--gamma", "1")
    assert p.returncode == 2 and b"row 2" in p.stderr and b"use --on-nan drop or zero" in p.stderr
    p = rfcli_proc("encode", path, "-o", tmp_path / "o.zarr", "--gamma", "1", "--columns", "a,s")
    assert p.returncode == 2 and b"not numeric" in p.stderr
    p = rfcli_proc("encode", path, "-o", tmp_path / "o.zarr", "--gamma", "1", "--on-nan", "drop")
    assert p.returncode == 0 and b"skipped non-numeric column(s): s" in p.stderr


def test_a_label_named_column_encoded_as_a_feature_is_noted(tmp_path):
    """Without --label, a column named like a label (here 'label') becomes a feature, and
    the encode says how to make it the label; with --label, no note."""
    from tests.helpers import write_parquet

    rng = np.random.default_rng(0)
    src = write_parquet(tmp_path / "x.parquet", a=rng.normal(size=50), b=rng.normal(size=50),
                        label=rng.integers(0, 2, 50))  # fmt: skip
    r = invoke("encode", src, "-o", tmp_path / "s.zarr", "-m", 8, "--gamma", 1)
    assert r.exit_code == 0
    assert "note: column 'label' is encoded as a feature" in r.stderr
    assert "--label label" in r.stderr
    r = invoke("encode", src, "-o", tmp_path / "t.zarr", "-m", 8, "--gamma", 1, "--label", "label")
    assert r.exit_code == 0 and "note:" not in r.stderr
