"""The command line, round 2 (issue 17): predictions with the label's type, --id on stores
and raw input, labels of another type in evaluate, `inspect MODEL`, human and JSON output,
-q/--debug after the command, environment variables, -b none, sectioned help, ternary
features of raw coordinates.  Small data: a few hundred rows, m = 32."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from rfcli.cli import cli
from tests.helpers import LETTER

ROWS = 400


def invoke(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)


def ok(*args, env=None):
    r = invoke(*args, env=env)
    assert r.exit_code == 0, r.output
    return r


def one_line_error(r, needle: str) -> str:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rfcli: error: "), r.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


def _letter(n=ROWS, start=0) -> pa.Table:
    return pq.read_table(LETTER).slice(start, n)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Train/test Parquet files with int, text and float labels and an id column, their
    stores and a krr model of each label type (600 letter rows, m = 32)."""
    d = tmp_path_factory.mktemp("round2")
    out = {"dir": d}
    for split, start in (("train", 0), ("test", ROWS)):
        t = _letter(ROWS, start)
        t = t.append_column("name", pa.array([f"row{start + i}" for i in range(len(t))]))
        letters = pa.array([chr(65 + v) for v in t["label"].to_pylist()])
        t_text = t.set_column(t.schema.get_field_index("label"), "label", letters)
        t_float = t.set_column(
            t.schema.get_field_index("label"),
            "label",
            pa.array(t["f0"].to_numpy() * 0.5 + t["f1"].to_numpy().astype(float)),
        )
        for kind, table in (("int", t), ("text", t_text), ("float", t_float)):
            p = d / f"{split}.{kind}.parquet"
            pq.write_table(table, p)
            out[f"{split}.{kind}"] = p
    for kind in ("int", "text", "float"):
        store = d / f"train.{kind}.zarr"
        ok("encode", out[f"train.{kind}"], "-o", store, "--label", "label", "--id", "name",
           "-m", "32", "--normalize-rows", "-q")  # fmt: skip
        model = d / f"krr.{kind}.npz"
        ok("train", store, "--model", "krr", "-o", model, "--alpha", "1", "-q")
        test = d / f"test.{kind}.zarr"
        ok("encode", out[f"test.{kind}"], "--like", store, "-o", test, "-q")
        out[f"store.{kind}"], out[f"model.{kind}"], out[f"teststore.{kind}"] = store, model, test
    return out


# -- predictions have the label's type ------------------------------------------------------
@pytest.mark.parametrize(
    "kind,np_kind,arrow",
    [("int", "i", pa.int64()), ("text", "U", pa.string()), ("float", "f", pa.float64())],
)
def test_predictions_have_the_label_type(data, tmp_path, kind, np_kind, arrow):
    model, test = data[f"model.{kind}"], data[f"teststore.{kind}"]
    ok("predict", model, test, "-o", tmp_path / "p.npy")
    a = np.load(tmp_path / "p.npy", allow_pickle=False)
    assert a.shape == (ROWS,) and a.dtype.kind == np_kind
    ok("predict", model, test, "-o", tmp_path / "p.parquet")
    t = pq.read_table(tmp_path / "p.parquet")
    assert t.column_names == ["name", "prediction"]  # the store's ids are carried
    assert t.schema.field("prediction").type == arrow
    np.testing.assert_array_equal(t["prediction"].to_numpy(), a)
    ok("predict", model, test, "-o", tmp_path / "p.csv")
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert len(lines) == ROWS + 1
    first = lines[1].split(",")[1]
    if kind == "text":
        assert first.strip('"').isalpha()
    else:
        assert not first.startswith('"')  # numbers are not quoted
        back = pacsv.read_csv(tmp_path / "p.csv")
        assert back.schema.field("prediction").type == arrow


def test_predict_npy_of_raw_input_and_stdout_csv(data, tmp_path):
    model = data["model.int"]
    r = ok("predict", model, data["test.int"], "-o", tmp_path / "raw.npy", "--json")
    summary = json.loads(r.stdout)
    assert summary == {"rows": ROWS, "output": str(tmp_path / "raw.npy"), "format": "npy",
                       "columns": ["prediction"], "types": {"prediction": "int64"}}  # fmt: skip
    raw = np.load(tmp_path / "raw.npy")
    ok("predict", model, data["teststore.int"], "-o", tmp_path / "store.npy")
    np.testing.assert_array_equal(raw, np.load(tmp_path / "store.npy"))
    r = ok("predict", model, data["test.int"], "--id", "name", "-o", "-")
    head = r.stdout.splitlines()[:2]
    assert head[0] == "name,prediction" and head[1].split(",")[1].isdigit()


def test_predict_ids(data, tmp_path):
    model = data["model.int"]
    ok("predict", model, data["teststore.int"], "--id", "name", "-o", tmp_path / "a.parquet")
    assert pq.read_table(tmp_path / "a.parquet").column_names == ["name", "prediction"]
    r = invoke("predict", model, data["test.int"], "--id", "nmae", "-o", tmp_path / "b.csv")
    one_line_error(r, "id column 'nmae' not found (did you mean 'name'?)")
    r = invoke("predict", model, data["teststore.int"], "--id", "nmae", "-o", tmp_path / "c.csv")
    one_line_error(r, "the store has no id column 'nmae' (did you mean 'name'?)")
    r = invoke("predict", model, data["teststore.int"], "--id", "name", "-o", tmp_path / "d.npy")
    one_line_error(r, "an .npy output holds the predictions only")
    assert not (tmp_path / "b.csv").exists() and not (tmp_path / "d.npy").exists()


# -- evaluate: labels of another type ---------------------------------------------------------
def test_evaluate_compares_as_the_model_label_type(data, tmp_path):
    model = data["model.int"]
    ref = json.loads(ok("evaluate", model, data["test.int"], "--json").stdout)
    # the same labels written as text digits: read as the model's integers
    t = pq.read_table(data["test.int"])
    digits = pa.array([str(v) for v in t["label"].to_pylist()])
    p = tmp_path / "digits.parquet"
    pq.write_table(t.set_column(t.schema.get_field_index("label"), "label", digits), p)
    got = json.loads(ok("evaluate", model, p, "--json").stdout)
    assert got["accuracy"] == ref["accuracy"] and got["rows"] == ROWS
    # letters for integer classes, integers for letter classes: refused in one line
    one_line_error(invoke("evaluate", model, data["test.text"]), "has text labels ('A'")
    one_line_error(
        invoke("evaluate", data["model.text"], data["test.int"]),
        "none of them is a class of the model",
    )
    # text labels for a regression
    one_line_error(invoke("evaluate", data["model.float"], data["test.text"]), "regression")


def test_evaluate_and_predict_take_on_nan(data, tmp_path):
    t = pq.read_table(data["test.int"])
    col = t["f2"].to_numpy().astype(float)
    col[[5, 9]] = np.nan
    p = tmp_path / "nan.parquet"
    pq.write_table(t.set_column(t.schema.get_field_index("f2"), "f2", [col]), p)
    model = data["model.int"]
    one_line_error(invoke("evaluate", model, p), "(use --on-nan drop or zero)")
    r = json.loads(ok("evaluate", model, p, "--on-nan", "drop", "--json").stdout)
    assert r["rows"] == ROWS - 2
    r = json.loads(ok("evaluate", model, p, "--on-nan", "zero", "--json").stdout)
    assert r["rows"] == ROWS
    ok("predict", model, p, "--on-nan", "drop", "--id", "name", "-o", tmp_path / "p.parquet")
    names = pq.read_table(tmp_path / "p.parquet")["name"].to_pylist()
    assert len(names) == ROWS - 2 and "row405" not in names


# -- inspect ----------------------------------------------------------------------------------
def test_inspect_model_plain_and_json(data):
    model = data["model.int"]
    r = ok("inspect", model)
    for needle in ("model file", "krr (classification)", "classes", "26 (0, 1, 2",
                   "kernel", "gaussian, gamma", "quantizer", "lm, 2 bits per feature",
                   "training", "alpha", "fingerprint"):  # fmt: skip
        assert needle in r.stdout, r.stdout
    info = json.loads(ok("inspect", model, "--json").stdout)
    assert info["kind"] == "model" and info["model"] == "krr" and info["task"] == "classification"
    assert info["classes"][:3] == [0, 1, 2] and info["label_type"] == "int"
    assert isinstance(info["gamma"], float) and info["map"]["gamma"] == info["gamma"]
    assert info["report"]["alpha"] == 1.0 and info["trained_on"]["label"] == "label"
    assert info["preprocess"] == {"standardize": False, "normalize_rows": True}
    text = json.loads(ok("inspect", data["model.text"], "--json").stdout)
    assert text["classes"][:2] == ["A", "B"] and text["label_type"] == "text"


def test_inspect_store_reads_like_a_modern_cli(data):
    r = ok("inspect", data["store.int"])
    out = r.stdout
    assert "True" not in out and "None" not in out and "[]" not in out
    assert [line.split() for line in out.splitlines() if "complete" in line] == [
        ["complete", "yes"]
    ]
    assert f"{ROWS}" in out and " kB" in out and "than float32" in out
    assert "name" in out  # the id column
    info = json.loads(ok("inspect", data["store.int"], "--json").stdout)
    assert info["kind"] == "store" and info["kernel"] == "gaussian"
    assert isinstance(info["gamma"], float) and info["bits_per_sample"] == 64
    assert isinstance(info["bytes_on_disk"], int) and info["complete"] is True


def test_render_values():
    from rfcli.cli.render import number, plain, size, text

    assert [text(v) for v in (True, False, None, [], "", 12000)] == [
        "yes", "no", "-", "-", "-", "12,000"]  # fmt: skip
    assert size(3073655) == "3.1 MB" and size(812) == "812 B"
    assert number(0.873875) == "0.8739" and number(4.911656) == "4.912"
    assert (
        plain([("T", [("a", "1"), ("long label", "2")])]) == "T\n  a           1\n  long label  2\n"
    )


def test_evaluate_output_is_plain_text_off_a_terminal(data):
    r = ok("evaluate", data["model.int"], data["teststore.int"])
    lines = r.stdout.splitlines()
    assert lines[0].endswith(f"on {data['teststore.int']}")
    assert any(line.split()[:1] == ["accuracy"] and "%" in line for line in lines)
    assert "False" not in r.stdout and "normalized rows  no" in r.stdout


# -- options ----------------------------------------------------------------------------------
def test_quiet_and_debug_after_the_command(data, tmp_path):
    r = ok("encode", data["train.int"], "-o", tmp_path / "s.zarr", "-m", "16", "-q")
    assert r.stderr == ""
    r = ok("encode", data["train.int"], "-o", tmp_path / "t.zarr", "-m", "16", "--debug")
    assert "wrote" in r.stderr
    r = ok("inspect", tmp_path / "s.zarr", "-q")
    assert "rows" in r.stdout


def test_environment_variables_by_long_option_name(data, tmp_path):
    ok("encode", data["train.int"], "-o", tmp_path / "s.zarr", "-q",
       env={"RFCLI_ENCODE_FEATURES": "24"})  # fmt: skip
    assert json.loads(ok("inspect", tmp_path / "s.zarr", "--json").stdout)["features"] == 24
    r = invoke("encode", data["train.int"], "-o", tmp_path / "x.zarr",
               env={"RFCLI_ENCODE_FORMAT": "zarr"})  # fmt: skip
    assert r.exit_code == 2  # --format from its long name: read as Zarr, which it is not
    r = invoke("encode", data["train.int"], "-o", tmp_path / "y.zarr",
               env={"RFCLI_ENCODE_THREADS": "0"})  # fmt: skip
    one_line_error(r, "(from the environment variable RFCLI_ENCODE_THREADS)")


def test_bits_none_is_the_float_quantizer(data, tmp_path):
    ok("encode", data["train.int"], "-o", tmp_path / "f.zarr", "-m", "16", "-b", "none", "-q")
    info = json.loads(ok("inspect", tmp_path / "f.zarr", "--json").stdout)
    assert info["quantizer"] == "none" and info["bits"] == 32


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--kernel", "arccos0", "-b", "2"], "the arccos0 kernel's quantizer (binary) is 1 bit"),
        (["--quantizer", "ternary", "--kernel", "ternary", "-b", "3"], "is 2 bits per feature"),
        (["--kernel-tol", "0.01"], "--kernel-tol applies to --kernel glf"),
        (["--cutoff", "3"], "--cutoff applies to --kernel glf"),
        (["--kernel", "ntk", "--gamma", "2"], "--gamma applies to the kernels with a bandwidth"),
        (["-b", "16"], "-b 16 is for --quantizer none"),
    ],
)
def test_options_that_would_be_ignored_are_refused(data, tmp_path, args, needle):
    one_line_error(invoke("encode", data["train.int"], "-o", tmp_path / "x.zarr", *args), needle)


def test_encode_help_has_sections():
    out = ok("encode", "--help").stdout
    titles = [line for line in out.splitlines() if line.endswith("options:")]
    assert titles == ["Input options:", "Map options:", "Quantizer options:",
                      "Output options:", "Engine options:", "General options:"]  # fmt: skip
    assert out.index("--label") < out.index("--kernel") < out.index("--quantizer")
    assert "Other options" not in out


def test_ternary_relu_on_raw_coordinates(data, tmp_path):
    """No --normalize-rows: tau is the raw mean squared norm (about 900 for letter)."""
    r = ok("encode", data["train.int"], "-o", tmp_path / "t.zarr", "--kernel", "ternary",
           "--target", "relu", "-m", "64")  # fmt: skip
    assert "ternary thresholds" in r.stderr


def test_memory_error_is_a_one_line_error(data, tmp_path, monkeypatch):
    import rfcli.jobs.decode

    def boom(*a, **k):
        raise MemoryError("Unable to allocate 11.9 GiB for an array")

    monkeypatch.setattr(rfcli.jobs.decode, "decode", boom)
    r = invoke("decode", data["store.int"], "-o", tmp_path / "f.npy")
    one_line_error(r, "out of memory (Unable to allocate 11.9 GiB for an array)")


def test_did_you_mean():
    from rfcli.errors import did_you_mean

    assert did_you_mean("lable", ["f0", "label"]) == " (did you mean 'label'?)"
    assert did_you_mean("Label", ["f0", "label"]) == " (did you mean 'label'?)"
    assert did_you_mean("zzz", ["f0", "label"]) == ""


def test_npy_column_writer_streams_without_a_row_count(tmp_path):
    from rfcli.io.writers import TableWriter

    p = os.fspath(tmp_path / "p.npy")
    w = TableWriter(p, 0, 0, npy_columns=(["prediction", "std"], np.dtype(np.float64)))
    for i in range(3):
        w.write(None, {"prediction": np.arange(4.0) + i, "std": np.ones(4)})
    w.close()
    a = np.load(p, allow_pickle=False)
    assert a.shape == (12, 2) and a[4, 0] == 1.0 and not os.path.exists(p + ".partial.rows")


def _strict(text: str):
    """JSON as a strict parser reads it: NaN and Infinity are refused."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_json_output_has_null_for_metrics_that_are_not_numbers(tmp_path):
    # constant targets: R^2 is undefined (0 / 0); --json writes null, which jq and strict
    # parsers read, where it wrote NaN
    x = np.linspace(0, 1, 120)
    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"x": x, "y": np.full(120, 3.0)}), p)
    store, model = tmp_path / "c.zarr", tmp_path / "m.npz"
    ok("-q", "encode", p, "--label", "y", "-o", store, "-m", "64", "--gamma", "1")
    ok("-q", "train", store, "--model", "krr", "--alpha", "1", "-o", model)
    r = _strict(ok("evaluate", model, store, "--json").stdout)
    assert r["r2"] is None and r["mse"] == pytest.approx(0.0, abs=1e-12)


def test_a_parquet_file_piped_to_stdin_is_refused_in_one_line(tmp_path):
    # stdin is read as CSV: a Parquet file piped in was refused for "line 4 has 2 fields"
    import subprocess
    import sys

    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": np.arange(50.0), "y": np.arange(50) % 2}), p)
    r = subprocess.run(
        [sys.executable, "-m", "rfcli", "encode", "-", "--label", "y", "-o", tmp_path / "s.zarr"],
        input=p.read_bytes(), capture_output=True,
    )  # fmt: skip
    err = r.stderr.decode().strip()
    assert r.returncode == 2 and "Traceback" not in err and len(err.splitlines()) == 1
    assert "standard input is a Parquet file, not CSV text" in err


def test_gp_on_four_inputs_names_the_flag_for_fourier_features(tmp_path):
    # the library's hint names its parameter (features='rff'); the command line's the flag
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    p = tmp_path / "d4.parquet"
    pq.write_table(pa.table({**{f"x{j}": X[:, j] for j in range(4)}, "y": X[:, 0]}), p)
    r = invoke("train", p, "--model", "gpr", "--label", "y", "-o", tmp_path / "m.npz")
    msg = one_line_error(r, "use random Fourier features (--gp-features rff)")
    assert "features='rff'" not in msg


def test_too_few_rows_for_the_folds_names_the_flags(tmp_path):
    # the library's hint names its parameters (cv_folds, C / alpha); the CLI its flags
    p = tmp_path / "two.parquet"
    pq.write_table(pa.table({"x": [0.0, 1.0], "y": [0.5, 1.5]}), p)
    ok("-q", "encode", p, "--label", "y", "-o", tmp_path / "s.zarr", "-m", "16", "--gamma", "1")
    r = invoke("train", tmp_path / "s.zarr", "--model", "krr", "-o", tmp_path / "m.npz")
    one_line_error(r, "use fewer --cv-folds or give the value (-C / --alpha)")
