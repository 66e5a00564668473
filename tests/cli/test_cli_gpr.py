"""GP regression through the CLI: raw input and GLF stores, predict with std, NLPD."""

import json

import numpy as np
from click.testing import CliRunner

from rfcli.cli import cli
from tests.helpers import SAMPLE


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


QUAKES_TR, QUAKES_TE = SAMPLE / "quakes.train.parquet", SAMPLE / "quakes.test.parquet"
# the same kernel tolerance for encode and train (with --nodes the cutoff follows it)
FAST = ["--lengthscale-bounds", "0.5,1", "--nodes", "24,24", "--kernel-tol", "1e-3"]


def test_gpr_raw_and_store_agree(tmp_path):
    r = invoke(
        "train", QUAKES_TR, "--model", "gpr", "--label", "y", *FAST, "-o", tmp_path / "raw.npz"
    )
    assert r.exit_code == 0, r.output
    assert "log marginal likelihood" in r.stderr and "ms/iteration" in r.stderr
    r = invoke(
        "encode",
        QUAKES_TR,
        "--kernel",
        "glf",
        "--label",
        "y",
        "--standardize",
        *FAST,
        "-o",
        tmp_path / "s.zarr",
    )
    assert r.exit_code == 0, r.output
    r = invoke(
        "train",
        tmp_path / "s.zarr",
        "--model",
        "gpr",
        "--lengthscale-bounds",
        "0.5,1",
        "-o",
        tmp_path / "st.npz",
    )
    assert r.exit_code == 0, r.output
    a = json.loads(invoke("evaluate", tmp_path / "raw.npz", QUAKES_TE, "--json").stdout)
    b = json.loads(invoke("evaluate", tmp_path / "st.npz", QUAKES_TE, "--json").stdout)
    assert {"mse", "rmse", "r2", "nlpd"} <= a.keys()
    # the store holds float32 features: same model up to float32 rounding
    assert b["mse"] == np.float64(a["mse"]) or abs(b["mse"] / a["mse"] - 1) < 1e-3
    assert a["r2"] > 0.8
    out = invoke("predict", tmp_path / "raw.npz", QUAKES_TE, "-o", "-").stdout.splitlines()
    assert out[0] == "prediction,std" and len(out) == 401
    assert all(float(line.split(",")[1]) > 0 for line in out[1:])


def test_gpr_with_default_settings_on_quakes(tmp_path):
    """No bounds, nodes or tolerance given: bounds from the data, a coarse rule, then levels
    or (quakes: rules of more features than its 600 rows) the exact GP;
    not refused (the old default bounds 0.05..2 needed more than 3000 nodes here)."""
    r = invoke("train", QUAKES_TR, "--model", "gpr", "--label", "y", "-o", tmp_path / "d.npz")
    assert r.exit_code == 0, r.output
    assert "lengthscale bounds (data)" in r.stderr and "quadrature nodes by level" in r.stderr
    ev = json.loads(invoke("evaluate", tmp_path / "d.npz", QUAKES_TE, "--json").stdout)
    # the exact GP with the same kernel and bounds: test MSE 3915.9 (docs/gpr-report.md)
    assert ev["mse"] < 1.05 * 3915.9


def test_gpr_rff_baseline_and_errors(tmp_path):
    r = invoke(
        "train",
        QUAKES_TR,
        "--model",
        "gpr",
        "--label",
        "y",
        "--gp-features",
        "rff",
        "-m",
        "64",
        "--lengthscale-bounds",
        "0.3,1",
        "-o",
        tmp_path / "rff.npz",
    )
    assert r.exit_code == 0, r.output
    assert "data pass(es)" in r.stderr
    r = invoke(
        "train",
        QUAKES_TR,
        "--model",
        "gpr",
        "--label",
        "y",
        "--gp-features",
        "rff",
        "--ard",
        "-o",
        tmp_path / "x.npz",
    )
    assert r.exit_code == 2 and "--ard applies to --gp-features glf, not rff" in r.stderr
    r = invoke(
        "train",
        SAMPLE / "letter.train.parquet",
        "--model",
        "gpr",
        "--label",
        "label",
        "-o",
        tmp_path / "l.npz",
    )
    assert r.exit_code == 2 and "d <= 3" in r.stderr


def test_gpr_and_predict_on_dask_through_the_cli(tmp_path, scheduler):
    """The CLI wiring of --engine dask for train --model gpr (a local cluster of 2 workers
    started by rfcli) and predict (--scheduler: the tests' running cluster): the same model
    report and the same predictions file."""
    outs = {}
    for engine in ("local", "dask"):
        model, pred = tmp_path / f"{engine}.npz", tmp_path / f"{engine}.csv"
        r = invoke("train", QUAKES_TR, "--model", "gpr", "--label", "y", *FAST, "--engine",
                   engine, "-o", model)  # fmt: skip
        assert r.exit_code == 0, r.output
        where = ["--scheduler", scheduler] if engine == "dask" else []
        r = invoke("predict", model, QUAKES_TE, "--engine", engine, *where, "-o", pred)
        assert r.exit_code == 0, r.output
        outs[engine] = np.loadtxt(pred, delimiter=",", skiprows=1)
    # predictions of hyperparameters learned from statistics equal up to summation order
    np.testing.assert_allclose(outs["dask"], outs["local"], rtol=1e-6, atol=1e-6)


def test_glf_regressor_gives_the_cli_model_and_its_refusals(tmp_path):
    """GLFRegressor with its defaults is ``rfcli train --model gpr`` with its defaults: the
    same rule, hyperparameters and weights on the same rows, and the same refusal (no other
    features in its place) when the rule does not fit the memory budget."""
    import pyarrow.parquet as pq
    import pytest

    from rfcli.errors import UsageError
    from rfcli.learn.model_file import load_model
    from rfcli.sklearn import GLFRegressor

    t = pq.read_table(QUAKES_TR).slice(0, 300)
    path = tmp_path / "q.parquet"
    pq.write_table(t, path)
    X = np.column_stack([t["lat"].to_numpy(), t["long"].to_numpy()]).astype(float)
    y = t["y"].to_numpy().astype(float)
    r = invoke("train", path, "--model", "gpr", "--label", "y", "-o", tmp_path / "cli.npz")
    assert r.exit_code == 0, r.output
    cli_model, _, _ = load_model(tmp_path / "cli.npz")
    gp = GLFRegressor().fit(X, y)
    assert gp.features_ == cli_model.info["map"].split()[0]
    assert gp.report_["map"] == cli_model.info["map"]
    for key in ("lengthscale", "noise_variance", "signal_variance"):
        assert np.allclose(gp.report_[key], cli_model.info[key], rtol=1e-9), key
    assert np.allclose(gp.model_.W, cli_model.W, rtol=1e-8, atol=1e-10 * np.abs(cli_model.W).max())
    # GLF throughout (no exact GP) and a budget too small for the rule: both refuse, naming
    # the memory
    r = CliRunner().invoke(cli, ["train", str(path), "--model", "gpr", "--label", "y",
                                 "--memory", "40M", "--no-exact",
                                 "-o", str(tmp_path / "x.npz")])  # fmt: skip
    assert r.exit_code != 0 and "of memory" in r.output and "--memory" in r.output
    with pytest.raises(UsageError, match="of memory"):
        GLFRegressor(memory=40 << 20, exact=False).fit(X, y)


def test_exact_is_refused_where_no_levels_run(tmp_path):
    for extra, where in ((["--no-learn"], "--learn without --nodes"),
                         (["--nodes", "8"], "--learn without --nodes"),
                         (["--gp-features", "rff"], "--gp-features glf")):  # fmt: skip
        r = invoke("train", QUAKES_TR, "--model", "gpr", "--label", "y", "--no-exact", *extra,
                   "-o", tmp_path / "x.npz")  # fmt: skip
        assert r.exit_code == 2 and "--exact/--no-exact applies to " + where in r.output, r.output
