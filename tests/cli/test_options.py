"""Every option of every command either applies to every use of the command, or belongs to a
model, kernel or mode and is refused (one line, exit status 2) where it does not apply --
never silently ignored.  And the old spellings of one release (encode/train ``--tol`` of the
quadrature, train ``--kernel`` and ``--features glf|rff``) still work, with a note.

The walk: each command's options (hidden ones are old spellings) must be listed in
:data:`GENERAL` or have a refusal in :data:`CASES` (train's per-model options: in
rfcli.cli.train.MODEL_OPTIONS, refused with another model by test_train_options.py), and
every case must be refused naming the option's flag.  A new option fails the walk until it
is classified."""

from __future__ import annotations

import json
from dataclasses import dataclass

import click
import pytest
from click.testing import CliRunner

from rfcli.cli import cli
from rfcli.cli.train import MODEL_OPTIONS
from tests.helpers import LETTER, LETTER_TEST, SAMPLE

QUAKES = SAMPLE / "quakes.train.parquet"
COMMANDS = ("encode", "train", "predict", "evaluate", "sweep", "inspect", "decode",
            "fit-quantizer")  # fmt: skip
#: options that apply to every use of their command
EVERYWHERE = {"quiet", "debug"}
GENERAL = {
    "encode": {"output", "like", "label", "ids", "fmt", "on_nan", "chunk_rows", "memory",
               "row_bytes",
               "engine", "overwrite", "as_json"},
    "train": {"model", "output", "seed", "engine", "overwrite", "as_json"},
    "predict": {"output", "ids", "engine", "as_json"},
    "evaluate": {"kernel_error", "as_json"},
    "sweep": {"model", "label", "bits", "features", "kernel", "normalize_rows", "standardize",
              "normalized", "seed", "output", "plot_path", "workdir", "threads"},
    "inspect": {"as_json"},
    "decode": {"output", "normalized", "threads", "memory"},
    "fit-quantizer": {"kind", "bits", "output"},
}  # fmt: skip


@dataclass
class Case:
    """``option`` (a parameter name of ``command``) refused in the use ``args(data)``."""

    command: str
    option: str
    args: object  # data -> argv after the command
    needle: str

    def __str__(self):
        return f"{self.command}-{self.option}-{self.needle[:24]}"


def _encode(*extra):
    return lambda d: [LETTER, "-o", d["out"], *extra]


def _like(*extra):
    return lambda d: [LETTER_TEST, "-o", d["out"], "--like", d["store"], *extra]


def _train(model, *extra, raw=False):
    return lambda d: [QUAKES if raw else d["store"], "--model", model, "-o", d["model_out"],
                      *extra]  # fmt: skip


def _gpr_raw(*extra):
    return _train("gpr", "--label", "y", *extra, raw=True)


def _sweep(*extra):
    return lambda d: [LETTER, LETTER_TEST, "--label", "label", *extra]


LIKE = "--like takes the map"
GLF = "applies to --kernel glf, not gaussian"
STORE = "applies to raw INPUT, not a store"
CASES = [
    # encode: what --like takes from its store, the options of other kernels and quantizers
    *[Case("encode", n, _like(*a), LIKE) for n, a in [
        ("features", ["-m", "64"]), ("kernel", ["--kernel", "laplacian"]),
        ("gamma", ["--gamma", "1"]), ("seed", ["--seed", "3"]), ("bits", ["-b", "3"]),
        ("quantizer", ["--quantizer", "stoc"]),
        ("quantizer_domain", ["--quantizer-domain", "log"]),
        ("quantizer_file", ["--quantizer-file", "q.json"]),
        ("normalize_rows", ["--normalize-rows"]),
        ("standardize", ["--standardize"]), ("columns", ["--columns", "f0,f1"]),
        ("store_chunk_rows", ["--store-chunk-rows", "2048"]),
    ]],
    *[Case("encode", n, _encode(*a), GLF) for n, a in [
        ("gp_kernel", ["--gp-kernel", "matern32"]), ("kernel_tol", ["--kernel-tol", "0.01"]),
        ("lengthscale_bounds", ["--lengthscale-bounds", "0.1,1"]), ("nodes", ["--nodes", "16"]),
        ("cutoff", ["--cutoff", "3"]),
    ]],
    *[Case("encode", n, _encode(*a), "applies to --kernel") for n, a in [
        ("target", ["--target", "cos"]), ("sparsity", ["--sparsity", "0.5"]),
        ("hyperbolic", ["--hyperbolic"]), ("depth", ["--depth", "2"]), ("m0", ["--m0", "8"]),
        ("m1", ["--m1", "8"]), ("m_cs", ["--m-cs", "8"]), ("modified", ["--modified"]),
    ]],
    Case("encode", "gamma", _encode("--kernel", "arccos0", "--gamma", "1"),
         "applies to the kernels with a bandwidth"),
    Case("encode", "quantizer_domain", _encode("--quantizer-domain", "log"),
         "applies to --quantizer empirical"),
    Case("encode", "bits", _encode("--quantizer", "sign", "-b", "2"), "drop -b 2"),
    Case("encode", "quantizer", _encode("-b", "none", "--quantizer", "lm"),
         "-b none means --quantizer none"),
    Case("encode", "threads", _encode("--engine", "dask", "--threads", "2"),
         "--threads applies to the local engine"),
    Case("encode", "resume", _encode("--engine", "dask", "--resume"),
         "--resume is for the local engine"),
    Case("encode", "delimiter", _encode("--delimiter", "tab"), "applies to CSV input, not parquet"),
    Case("encode", "scheduler", _encode("--scheduler", "tcp://h:1"), "applies to --engine dask"),
    Case("encode", "workers", _encode("--workers", "3"), "applies to --engine dask"),
    Case("encode", "workers", _encode("--engine", "dask", "--scheduler", "tcp://h:1",
                                      "--workers", "3"), "the local cluster started without"),
    # train: within a model (the options of other models: test_train_options.py)
    Case("train", "cv_folds", _train("svm", "-C", "1", "--cv-folds", "3"), "applies to -C auto"),
    Case("train", "cv_folds", _train("krr", "--alpha", "1", "--cv-folds", "3"),
         "applies to --alpha auto"),
    *[Case("train", n, _train("gpr", *a), STORE) for n, a in [
        ("label", ["--label", "y"]), ("on_nan", ["--on-nan", "zero"]),
        ("delimiter", ["--delimiter", ";"]),
        ("standardize", ["--no-standardize"]), ("gp_features", ["--gp-features", "rff"]),
        ("n_features", ["-m", "64"]), ("gp_kernel", ["--gp-kernel", "matern32"]),
        ("kernel_tol", ["--kernel-tol", "0.01"]), ("nodes", ["--nodes", "16"]),
        ("cutoff", ["--cutoff", "3"]),
    ]],
    *[Case("train", n, _train("gpr", *a), "not a store of random Fourier features") for n, a in [
        ("ard", ["--ard"]), ("lengthscale_bounds", ["--lengthscale-bounds", "0.1,1"]),
        ("lengthscale", ["--no-learn", "--lengthscale", "0.5"]),
    ]],
    *[Case("train", n, _gpr_raw("--gp-features", "rff", *a), "applies to --gp-features glf")
      for n, a in [("ard", ["--ard"]), ("kernel_tol", ["--kernel-tol", "0.01"]),
                   ("nodes", ["--nodes", "16"]), ("cutoff", ["--cutoff", "3"])]],
    Case("train", "n_features", _gpr_raw("-m", "64"), "applies to --gp-features rff, not glf"),
    Case("train", "noise_bounds", _gpr_raw("--no-learn", "--noise-bounds", "0.1,1"),
         "applies to --learn"),
    Case("train", "lengthscale", _gpr_raw("--lengthscale", "0.5"), "applies to --no-learn"),
    Case("train", "lengthscale_bounds", _gpr_raw("--no-learn", "--lengthscale", "0.5",
                                                 "--lengthscale-bounds", "0.1,1"),
         "or --no-learn without --lengthscale"),
    Case("train", "scheduler", _train("svm", "--scheduler", "tcp://h:1"), "--engine dask"),
    Case("train", "threads", _train("svm", "--engine", "dask", "--threads", "2"),
         "--threads applies to the local engine"),
    Case("train", "workers", _train("svm", "--workers", "3"), "applies to --engine dask"),
    # predict, evaluate: raw input only, the modes of evaluate, stdout
    Case("predict", "on_nan", lambda d: [d["model"], d["store"], "--on-nan", "zero"],
         "applies to raw input, not a store"),
    Case("predict", "delimiter", lambda d: [d["model"], d["store"], "--delimiter", ";"],
         "applies to raw input, not a store"),
    Case("predict", "delimiter", lambda d: [d["model"], LETTER_TEST, "--delimiter", ";"],
         "applies to CSV input, not parquet"),
    Case("predict", "overwrite", lambda d: [d["model"], LETTER_TEST, "--overwrite"],
         "not stdout"),
    Case("predict", "scheduler", lambda d: [d["model"], LETTER_TEST, "--scheduler", "tcp://h:1"],
         "applies to --engine dask"),
    Case("predict", "workers", lambda d: [d["model"], LETTER_TEST, "--workers", "3"],
         "applies to --engine dask"),
    Case("predict", "threads",
         lambda d: [d["model"], LETTER_TEST, "--engine", "dask", "--threads", "2"],
         "--threads applies to the local engine"),
    Case("evaluate", "raw", lambda d: [d["model"], LETTER_TEST, "--data", LETTER],
         "applies to --kernel-error"),
    Case("evaluate", "rows", lambda d: [d["model"], LETTER_TEST, "--rows", "50"],
         "applies to --kernel-error"),
    Case("evaluate", "on_nan", lambda d: [d["model"], d["store"], "--on-nan", "zero"],
         "applies to raw input, not a store"),
    *[Case("evaluate", n, lambda d, a=a: ["--kernel-error", d["store"], "--data", LETTER, *a],
           "applies to evaluating a model") for n, a in [
        ("on_nan", ["--on-nan", "zero"]), ("delimiter", ["--delimiter", ";"]),
        ("engine", ["--engine", "dask"]), ("threads", ["--threads", "2"])]],
    Case("evaluate", "threads",
         lambda d: [d["model"], LETTER_TEST, "--engine", "dask", "--threads", "2"],
         "--threads applies to the local engine"),
    Case("evaluate", "delimiter", lambda d: [d["model"], d["store"], "--delimiter", ";"],
         "applies to raw input, not a store"),
    Case("evaluate", "scheduler", lambda d: [d["model"], LETTER_TEST, "--scheduler", "tcp://h:1"],
         "applies to --engine dask"),
    Case("evaluate", "workers", lambda d: [d["model"], LETTER_TEST, "--workers", "3"],
         "applies to --engine dask"),
    # sweep: the other model's value, kernels without a bandwidth, --keep, outputs
    Case("sweep", "C", _sweep("--model", "krr", "-C", "1"), "applies to --model svm"),
    Case("sweep", "alpha", _sweep("--model", "svm", "--alpha", "1"), "applies to --model krr"),
    Case("sweep", "gamma", _sweep("--model", "svm", "--kernel", "arccos0", "--gamma", "1"),
         "applies to the kernels with a bandwidth"),
    Case("sweep", "keep", _sweep("--model", "svm", "--keep"), "applies to --workdir"),
    Case("sweep", "overwrite", _sweep("--model", "svm", "--overwrite"), "applies to -o or --plot"),
    Case("sweep", "quantizers", _sweep("--model", "svm", "--bits", "none", "--quantizer", "lm"),
         "applies to bits 1-8"),
    # inspect, decode, fit-quantizer
    Case("inspect", "verify", lambda d: [d["model"], "--verify"], "--verify checks stores"),
    Case("decode", "overwrite", lambda d: [d["store"], "-o", "-", "--overwrite"], "not stdout"),
    Case("fit-quantizer", "map_path", lambda d: ["--kind", "lm", "--map", d["store"]],
         "is designed, not fitted"),
    Case("fit-quantizer", "sample", lambda d: ["--kind", "lm", "--sample", "1000"],
         "applies to --kind empirical"),
    Case("fit-quantizer", "domain", lambda d: ["--kind", "stoc", "--domain", "log"],
         "applies to --kind empirical"),
    Case("fit-quantizer", "threads", lambda d: ["--kind", "lm", "--threads", "2"],
         "applies to --kind empirical"),
    Case("fit-quantizer", "seed", lambda d: ["--kind", "uniform", "--seed", "3"],
         "applies to --kind stoc/empirical"),
    Case("fit-quantizer", "overwrite", lambda d: ["--kind", "lm", "--overwrite"], "not stdout"),
]  # fmt: skip


def invoke(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rfcli: error: "), r.stderr
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A small store of 300 letter rows (m = 16, a label) and a KRR model of it."""
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("options")
    src = d / "small.parquet"
    pq.write_table(pq.read_table(LETTER).slice(0, 300), src)
    store, model = d / "s.zarr", d / "m.npz"
    assert invoke("encode", src, "-o", store, "--label", "label", "-m", "16", "-q").exit_code == 0
    assert invoke("train", store, "--model", "krr", "--alpha", "1", "-o", model).exit_code == 0
    return {"store": store, "model": model, "out": d / "out.zarr", "model_out": d / "out.npz",
            "dir": d}  # fmt: skip


def _options(command: str) -> list[click.Option]:
    cmd = cli.get_command(None, command)
    return [p for p in cmd.params if isinstance(p, click.Option)]


def test_every_option_applies_everywhere_or_is_refused_where_it_does_not():
    owned = {n for opts in MODEL_OPTIONS.values() for n in opts}
    for command in COMMANDS:
        names = {p.name for p in _options(command) if not p.hidden}
        refused = {c.option for c in CASES if c.command == command}
        if command == "train":
            refused |= owned
        unclassified = names - GENERAL[command] - EVERYWHERE - refused
        assert not unclassified, (command, sorted(unclassified))
        # and the tables name only options that exist
        assert GENERAL[command] | refused <= names, (command, (GENERAL[command] | refused) - names)
        assert not GENERAL[command] & {c.option for c in CASES if c.command == command}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_option_is_refused_where_it_does_not_apply(data, case):
    line = one_line_error(invoke(case.command, *case.args(data)))
    assert case.needle in line, line
    opt = next(p for p in _options(case.command) if p.name == case.option)
    assert any(flag in line for flag in opt.opts), (opt.opts, line)
    assert not data["out"].exists() and not data["model_out"].exists()


# -- old spellings (one release) ----------------------------------------------------------
GLF_FAST = ["--kernel", "glf", "--standardize", "--label", "y", "--lengthscale-bounds", "0.5,1",
            "--nodes", "16,16"]  # fmt: skip


def test_encode_tol_is_the_old_spelling_of_kernel_tol(tmp_path):
    r = invoke("encode", QUAKES, "-o", tmp_path / "old.zarr", *GLF_FAST, "--tol", "0.02")
    assert r.exit_code == 0, r.output
    assert "note: --tol is deprecated, use --kernel-tol" in r.stderr
    r = invoke("encode", QUAKES, "-o", tmp_path / "new.zarr", *GLF_FAST, "--kernel-tol", "0.02")
    assert r.exit_code == 0 and "deprecated" not in r.stderr
    old, new = (json.loads(invoke("inspect", tmp_path / f"{n}.zarr", "--json").stdout)
                for n in ("old", "new"))  # fmt: skip
    assert old["fingerprint"] == new["fingerprint"] and old["map"] == new["map"]
    r = invoke("encode", QUAKES, "-o", tmp_path / "q.zarr", *GLF_FAST, "--tol", "0.02", "-q")
    assert r.exit_code == 0 and r.stderr == ""  # -q: no note either
    line = one_line_error(invoke("encode", QUAKES, "-o", tmp_path / "x.zarr", *GLF_FAST,
                                 "--tol", "0.02", "--kernel-tol", "0.02"))  # fmt: skip
    assert "--tol is the old spelling of --kernel-tol" in line
    # an old spelling where the option does not apply is refused under the name typed
    line = one_line_error(invoke("encode", LETTER, "-o", tmp_path / "y.zarr", "--tol", "0.01"))
    assert "--tol applies to --kernel glf" in line


RFF_FAST = ["--model", "gpr", "--label", "y", "--lengthscale-bounds", "0.3,1", "-m", "32"]


def _report(path):
    return json.loads(invoke("inspect", path, "--json").stdout)["report"]


def test_train_old_spellings_give_the_same_model(tmp_path, data):
    new, old = tmp_path / "new.npz", tmp_path / "old.npz"
    r = invoke("train", QUAKES, *RFF_FAST, "--gp-features", "rff", "--gp-kernel", "matern32",
               "-o", new)  # fmt: skip
    assert r.exit_code == 0 and "deprecated" not in r.stderr, r.output
    r = invoke("train", QUAKES, *RFF_FAST, "--features", "rff", "--kernel", "matern32", "-o", old)
    assert r.exit_code == 0, r.output
    assert "note: --features is deprecated, use --gp-features" in r.stderr
    assert "note: --kernel is deprecated, use --gp-kernel" in r.stderr
    a, b = _report(new), _report(old)
    assert a["kernel"] == b["kernel"] == "matern32" and a["features_kind"] == b["features_kind"]
    assert a["log_marginal_likelihood"] == b["log_marginal_likelihood"]
    # --features N is the long form of -m (no note)
    r = invoke("train", QUAKES, "--model", "gpr", "--label", "y", "--lengthscale-bounds",
               "0.3,1", "--gp-features", "rff", "--gp-kernel", "matern32", "--features", "32",
               "-o", tmp_path / "long.npz")  # fmt: skip
    assert r.exit_code == 0 and "deprecated" not in r.stderr, r.output
    assert _report(tmp_path / "long.npz")["log_marginal_likelihood"] == a["log_marginal_likelihood"]
    line = one_line_error(invoke("train", QUAKES, *RFF_FAST, "--features", "rff",
                                 "--gp-features", "rff", "-o", tmp_path / "x.npz"))  # fmt: skip
    assert "--features is the old spelling of --gp-features" in line
    line = one_line_error(invoke("train", data["store"], "--model", "svm", "--kernel",
                                 "matern32", "-o", tmp_path / "x.npz"))  # fmt: skip
    assert "--kernel is for gpr, not --model svm" in line
    # on raw input, first of all: encode it (its label named, as train --label gave it)
    line = one_line_error(invoke("train", QUAKES, "--model", "svm", "--label", "y", "-o",
                                 tmp_path / "x.npz"))  # fmt: skip
    assert "encode it first: `rfcli encode " in line and "--label y -o " in line


def test_train_gpr_tol_is_the_old_spelling_of_kernel_tol(tmp_path):
    fast = ["--model", "gpr", "--label", "y", "--lengthscale-bounds", "0.5,1", "--nodes", "16,16"]
    r = invoke("train", QUAKES, *fast, "--tol", "0.02", "-o", tmp_path / "old.npz")
    assert r.exit_code == 0, r.output
    assert "note: --tol with --model gpr is deprecated, use --kernel-tol" in r.stderr
    r = invoke("train", QUAKES, *fast, "--kernel-tol", "0.02", "-o", tmp_path / "new.npz")
    assert r.exit_code == 0 and "deprecated" not in r.stderr
    a, b = _report(tmp_path / "old.npz"), _report(tmp_path / "new.npz")
    assert a["map"] == b["map"] and a["log_marginal_likelihood"] == b["log_marginal_likelihood"]
    line = one_line_error(invoke("train", QUAKES, *fast, "--tol", "2", "-o", tmp_path / "x.npz"))
    assert "--tol (now --kernel-tol) must be in (0, 1)" in line


def test_train_gpr_raw_input_takes_on_nan(tmp_path):
    import numpy as np
    import pyarrow.parquet as pq

    t = pq.read_table(QUAKES)
    lat = t["lat"].to_numpy().astype(float)
    lat[[3, 10]] = np.nan
    p = tmp_path / "nan.parquet"
    pq.write_table(t.set_column(t.schema.get_field_index("lat"), "lat", [lat]), p)
    fast = ["--model", "gpr", "--label", "y", "--lengthscale-bounds", "0.5,1", "--nodes", "16,16"]
    line = one_line_error(invoke("train", p, *fast, "-o", tmp_path / "e.npz"))
    assert "(use --on-nan drop or zero)" in line
    r = invoke("train", p, *fast, "--on-nan", "drop", "-o", tmp_path / "d.npz")
    assert r.exit_code == 0, r.output
    assert _report(tmp_path / "d.npz")["rows"] == t.num_rows - 2
    r = invoke("train", p, *fast, "--on-nan", "zero", "-o", tmp_path / "z.npz")
    assert r.exit_code == 0 and _report(tmp_path / "z.npz")["rows"] == t.num_rows
    line = one_line_error(invoke("train", p, *fast, "--label", "yy", "-o", tmp_path / "x.npz"))
    assert "label column 'yy' not found (did you mean 'y'?)" in line


def test_fixed_bit_quantizers_take_the_bits_the_library_takes(data, tmp_path):
    """One table (rfcli.quantize.base.FIXED_BITS) for the CLI and the library: trits
    takes -b 2 (its default, 1.6 bits per feature in the store), and refuses -b 1."""
    src = data["dir"] / "small.parquet"
    ok = invoke("encode", src, "-o", tmp_path / "t.zarr", "--label", "label", "-m", "16",
                "--kernel", "ternary", "--quantizer", "trits", "-b", "2", "-q")  # fmt: skip
    assert ok.exit_code == 0, ok.output
    line = one_line_error(invoke("encode", src, "-o", tmp_path / "u.zarr", "--label", "label",
                                 "-m", "16", "--kernel", "ternary", "--quantizer", "trits",
                                 "-b", "1"))  # fmt: skip
    assert "1.6 bits per feature: drop -b 1" in line
