"""Every bad input of issues 7 and 17 as a case run through the real CLI in a subprocess.

One list serves both the test (tests/cli/test_error_table.py) and the documentation:
``python -m tests.cli.error_cases > docs/errors.md`` regenerates the table with the
exact messages, and the test fails when a message no longer matches the table.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tests import helpers

# str paths: the CLI arguments, and ROOT is the text replaced by "ROOT" in messages
ROOT = os.fspath(helpers.ROOT)
LETTER = os.fspath(helpers.LETTER)
LETTER_TEST = os.fspath(helpers.LETTER_TEST)
QUAKES = os.fspath(helpers.SAMPLE / "quakes.train.parquet")


@dataclass
class Case:
    name: str
    what: str
    setup: Callable[[str], list[str]]  # tmp dir -> CLI arguments
    exit: int = 2
    env: dict[str, str] | None = None  # environment variables of the run


def _write(d, name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    return p


#: directory for the read-only stores and model shared by the cases (set by the runner)
SHARED: str | None = None


def _store(d, name="s.zarr", *extra):
    """A small real store (600 letter rows) made with the CLI itself."""
    import pyarrow.parquet as pq

    d = SHARED or d
    src = os.path.join(d, "small.parquet")
    if not os.path.exists(src):
        pq.write_table(pq.read_table(LETTER).slice(0, 600), src)
    out = os.path.join(d, name)
    if not os.path.exists(out):
        run(["encode", src, "-o", out, "--label", "label", "-m", "32", *extra], check=True)
    return out


def _model(d):
    out = os.path.join(SHARED or d, "m.npz")
    if not os.path.exists(out):
        run(["train", _store(d), "--model", "krr", "-o", out], check=True)
    return out


def _edit_meta(store, **changes):
    helpers.edit_meta(store, lambda meta: meta.update(changes))
    return store


def _copy_store(d, name, **changes):
    dst = os.path.join(d, name)
    shutil.copytree(_store(d), dst)
    return _edit_meta(dst, **changes) if changes else dst


def _flip_chunk(d):
    s = _copy_store(d, "flip.zarr")
    f = os.path.join(s, "codes", "c", "0", "0")
    b = bytearray(open(f, "rb").read())
    b[len(b) // 2] ^= 1
    open(f, "wb").write(bytes(b))
    return ["train", s, "--model", "krr", "-o", os.path.join(d, "x.npz")]


def _missing_chunk(d):
    s = _copy_store(d, "miss.zarr")
    os.remove(os.path.join(s, "codes", "c", "0", "0"))
    return ["train", s, "--model", "krr", "-o", os.path.join(d, "x.npz")]


def _nan_parquet(d):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = os.path.join(d, "nan.parquet")
    pq.write_table(pa.table({"a": [1.0, 2.0, np.nan], "b": [0.0, 1.0, 2.0]}), p)
    return ["encode", p, "-o", os.path.join(d, "o.zarr"), "--gamma", "1"]


def _other_map_model(d):
    other = _store(d, "other.zarr", "--seed", "7")
    return ["evaluate", _model(d), other]


def _full_disk(d):
    # a 1 MiB tmpfs; the test skips this case where mounting is not allowed
    mnt = os.path.join(d, "small-fs")
    os.makedirs(mnt, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt],
                       capture_output=True)  # fmt: skip
    if r.returncode != 0:
        raise OSError("cannot mount a small tmpfs here")
    return ["encode", LETTER, "-o", os.path.join(mnt, "s.zarr"), "-m", "2048", "-b", "8"]


def _letter_csv(d):
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    p = os.path.join(d, "letter.csv")
    pacsv.write_csv(pq.read_table(LETTER).slice(0, 50), p)
    return p


def _o(d, name="o.zarr"):
    return os.path.join(d, name)


def _text_labels(d):
    """letter test rows whose labels are letters ('A'..'Z'), not the training integers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(LETTER_TEST).slice(0, 50)
    letters = pa.array([chr(65 + v) for v in t["label"].to_pylist()])
    p = os.path.join(d, "text-labels.parquet")
    pq.write_table(t.set_column(t.schema.get_field_index("label"), "label", letters), p)
    return p


def _parquet_named_csv(d):
    p = os.path.join(d, "data.csv")
    shutil.copy(LETTER_TEST, p)
    return p


def _nan_letter(d):
    """letter test rows (the model's columns) with a NaN in row 3."""
    import pyarrow.parquet as pq

    table = pq.read_table(LETTER_TEST).slice(0, 20)
    col = table["f3"].to_numpy().astype(float)
    col[3] = np.nan
    table = table.set_column(table.schema.get_field_index("f3"), "f3", [col])
    p = os.path.join(d, "nan-rows.parquet")
    pq.write_table(table, p)
    return p


def _wide_csv(d, name="wide.csv", cell=None, sep=","):
    """30 numeric columns x0..x28 and a label column 'target', 400 rows; ``cell``: (row,
    column, text) written over one cell."""
    rng = np.random.default_rng(0)
    names = [f"x{j}" for j in range(29)] + ["target"]
    rows = [[f"{v:.3f}" for v in r] + [str(int(r[0] > 0))] for r in rng.normal(size=(400, 29))]
    if cell is not None:
        rows[cell[0]][names.index(cell[1])] = cell[2]
    return _write(d, name, "\n".join(sep.join(r) for r in [names, *rows]) + "\n")


def _wide_store(d):
    """A store of the 30 columns of :func:`_wide_csv` (label 'target')."""
    out = os.path.join(SHARED or d, "wide.zarr")
    if not os.path.exists(out):
        src = _wide_csv(SHARED or d)
        run(["encode", src, "-o", out, "--label", "target", "-m", "16"], check=True)
    return out


def _partial(d, name="p.zarr", rows=400, args=None):
    """The partial store of an interrupted encode of ``name`` (a copy of the shared store
    cut to ``rows`` kept rows); with ``args`` (an encode command line), recorded as started
    by that command (its resume key)."""
    dst = os.path.join(d, name)
    key = None
    if args is not None:
        from rfcli.cli import cli
        from rfcli.cli.encode import _encode_settings, _read_settings
        from rfcli.jobs.encode import resume_key

        params = cli.get_command(None, "encode").make_context("encode", list(args)).params
        key = resume_key(args[0], _encode_settings(params), _read_settings(params), None)
    shutil.copytree(_store(d), dst + ".partial")
    _edit_meta(dst + ".partial", complete=False, rows_committed=rows, resume_key=key)
    return dst


def _resume_other(d):
    src = os.path.join(SHARED or d, "small.parquet")
    out = _partial(d, args=[src, "--label", "label", "-m", "32"])
    return ["encode", src, "-o", out, "--label", "label", "-m", "64", "--resume"]


def _needs_no_matplotlib(d):
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None:
        raise OSError("matplotlib is installed here")
    return ["sweep", LETTER, LETTER_TEST, "--model", "svm", "--label", "label",
            "--plot", os.path.join(d, "p.png")]  # fmt: skip


CASES = [
    Case("missing-file", "input file does not exist",
         lambda d: ["encode", os.path.join(d, "missing.parquet"), "-o", _o(d)]),
    Case("input-directory", "input directory holds no Parquet files",
         lambda d: (os.makedirs(os.path.join(d, "dir.parquet")),
                    ["encode", os.path.join(d, "dir.parquet"), "-o", _o(d)])[1]),
    Case("unknown-format", "unknown input format",
         lambda d: ["encode", _write(d, "data.xyz", "a\n1\n"), "-o", _o(d)]),
    Case("unknown-column", "--columns names a column that does not exist",
         lambda d: ["encode", LETTER, "-o", _o(d), "--columns", "f0,nope"]),
    Case("missing-label", "label column missing",
         lambda d: ["encode", LETTER, "-o", _o(d), "--label", "nope"]),
    Case("non-numeric-column", "a chosen feature column is not numeric",
         lambda d: ["encode", _write(d, "t.csv", "a,b\nx,1\ny,2\n"), "-o", _o(d),
                    "--columns", "a"]),
    Case("no-numeric-columns", "0 selected columns (nothing numeric)",
         lambda d: ["encode", _write(d, "t.csv", "a,b\nx,y\n"), "-o", _o(d)]),
    Case("nan-value", "NaN in a feature (default --on-nan error)", _nan_parquet),
    Case("inf-value", "inf in a CSV feature",
         lambda d: ["encode", _write(d, "i.csv", "a,b\n1,2\n3,inf\n"), "-o", _o(d),
                    "--gamma", "1"]),
    Case("ragged-csv", "ragged CSV (a row with too few fields)",
         lambda d: ["encode", _write(d, "r.csv", "a,b\n1,2\n3\n"), "-o", _o(d)]),
    Case("empty-csv", "empty file (no header)",
         lambda d: ["encode", _write(d, "e.csv", ""), "-o", _o(d)]),
    Case("no-rows", "header only (0 rows)",
         lambda d: ["encode", _write(d, "h.csv", "a,b\n"), "-o", _o(d)]),
    Case("one-row-gamma-auto", "a single row with gamma=auto",
         lambda d: ["encode", _write(d, "one.csv", "a,b\n1,2\n"), "-o", _o(d)]),
    Case("like-columns", "input lacks the columns of the --like store",
         lambda d: ["encode", _write(d, "few.csv", "f0,f1\n1,2\n"), "-o", _o(d),
                    "--like", _store(d)]),
    Case("model-columns", "raw input lacks the columns the model's map needs",
         lambda d: ["predict", _model(d), _write(d, "few.csv", "f0,f1\n1,2\n"), "-o", "-"]),
    Case("bits-range", "b outside 1..8",
         lambda d: ["encode", LETTER, "-o", _o(d), "-b", "9"]),
    Case("m-range", "m < 1", lambda d: ["encode", LETTER, "-o", _o(d), "-m", "0"]),
    Case("gamma-range", "gamma <= 0",
         lambda d: ["encode", LETTER, "-o", _o(d), "--gamma", "-1"]),
    Case("quantizer-file-malformed", "quantizer file is not valid JSON",
         lambda d: ["encode", LETTER, "-o", _o(d), "--quantizer-file",
                    _write(d, "q.json", '{"kind": "lm", "bits": 2')]),
    Case("quantizer-file-inconsistent", "quantizer file with the wrong number of levels",
         lambda d: ["encode", LETTER, "-o", _o(d), "--quantizer-file",
                    _write(d, "q.json", '{"kind": "lm", "bits": 3, "borders": [0], '
                           '"levels": [-1, 1]}')]),
    Case("quantizer-file-bits", "quantizer file that does not match -b",
         lambda d: (run(["fit-quantizer", "-b", "3", "-o", os.path.join(d, "q3.json")],
                        check=True),
                    ["encode", LETTER, "-o", _o(d), "-b", "2", "--quantizer-file",
                     os.path.join(d, "q3.json")])[1]),
    Case("store-incomplete", "store without its completion marker",
         lambda d: ["train", _copy_store(d, "inc.zarr", complete=False), "--model", "krr",
                    "-o", _o(d, "x.npz")]),
    Case("store-version", "store of an unknown format version",
         lambda d: ["train", _copy_store(d, "ver.zarr", format_version=9), "--model", "krr",
                    "-o", _o(d, "x.npz")]),
    Case("store-corrupt-chunk", "store chunk with a flipped byte (checksum)", _flip_chunk),
    Case("store-missing-chunk", "store chunk file deleted", _missing_chunk),
    Case("store-not-a-store", "a directory that is not a store",
         lambda d: (os.makedirs(os.path.join(d, "nots.zarr")),
                    ["inspect", os.path.join(d, "nots.zarr")])[1]),
    Case("model-malformed", "model file that is not a model",
         lambda d: ["evaluate", _write(d, "bad.npz", "junk"), LETTER_TEST]),
    Case("model-other-map", "model used with a store encoded by another map",
         _other_map_model),
    Case("output-exists", "output exists (no --overwrite)",
         lambda d: ["encode", LETTER, "-o", _store(d)]),
    Case("output-dir-missing", "output directory does not exist",
         lambda d: ["encode", LETTER, "-o", os.path.join(d, "no", "such", "s.zarr")]),
    Case("output-unwritable", "output directory not writable (a file in the way)",
         lambda d: ["decode", _store(d), "-o",
                    os.path.join(_write(d, "afile", "x"), "f.npy")]),
    Case("output-format", "decode output with an unknown extension",
         lambda d: ["decode", _store(d), "-o", _o(d, "f.txt")]),
    Case("disk-full", "the disk fills up while writing a store", _full_disk),
    Case("memory-krr", "KRR whose m x m matrices cannot fit --memory",
         lambda d: ["train", _store(d), "--model", "krr", "-o", _o(d, "x.npz"),
                    "--memory", "20K"]),
    Case("memory-encode", "--memory too small for one chunk",
         lambda d: ["encode", LETTER, "-o", _o(d), "--memory", "64K"]),
    Case("option-wrong-kernel", "a map option for a kernel that does not take it",
         lambda d: ["encode", LETTER, "-o", _o(d), "--depth", "2"]),
    Case("resume-stdin", "--resume with stdin input",
         lambda d: ["encode", "-", "-o", _o(d), "--resume"]),
    Case("url-unknown-protocol", "an output URL of an unknown protocol",
         lambda d: ["encode", LETTER, "-o", "nosuch://bucket/s.zarr"]),
    Case("resume-url", "--resume with an object-storage output",
         lambda d: ["encode", LETTER, "-o", "memory://bucket/s.zarr", "--resume"]),
    Case("dask-csv", "--engine dask with CSV input",
         lambda d: ["predict", _model(d), _letter_csv(d), "--engine", "dask"]),
    Case("dask-drop", "--engine dask with --on-nan drop",
         lambda d: ["encode", LETTER, "-o", _o(d), "--engine", "dask", "--on-nan", "drop"]),
    # issue 17: internal errors on ordinary input
    Case("evaluate-label-types", "evaluate a model of integer classes on text labels",
         lambda d: ["evaluate", _model(d), _text_labels(d)]),
    Case("memory-features", "encode -m 100000000 (more than the physical memory)",
         lambda d: ["encode", LETTER, "-o", _o(d), "-m", "100000000", "--threads", "1"]),
    # silent wrong results
    Case("predict-unknown-id", "predict --id naming no column of the input (a typo)",
         lambda d: ["predict", _model(d), LETTER_TEST, "--id", "lable", "-o", _o(d, "p.csv")]),
    Case("predict-store-id", "predict --id on a store without that id array",
         lambda d: ["predict", _model(d), _store(d), "--id", "event", "-o", _o(d, "p.csv")]),
    Case("glf-option-gaussian", "encode --gp-kernel with the gaussian kernel",
         lambda d: ["encode", LETTER, "-o", _o(d), "--gp-kernel", "matern32"]),
    Case("glf-nodes-gaussian", "encode --nodes with the gaussian kernel",
         lambda d: ["encode", LETTER, "-o", _o(d), "--nodes", "64"]),
    Case("gamma-no-bandwidth", "encode --gamma with a kernel without a bandwidth",
         lambda d: ["encode", LETTER, "-o", _o(d), "--kernel", "arccos0", "--gamma", "1"]),
    Case("sign-bits", "encode -b 3 --quantizer sign (a 1-bit quantizer)",
         lambda d: ["encode", LETTER, "-o", _o(d), "-b", "3", "--quantizer", "sign"]),
    Case("bits-none-quantizer", "encode -b none with another quantizer",
         lambda d: ["encode", LETTER, "-o", _o(d), "-b", "none", "--quantizer", "lm"]),
    Case("like-option", "encode --like with a map option (the store's map is used)",
         lambda d: ["encode", LETTER_TEST, "-o", _o(d), "--like", _store(d), "-m", "64"]),
    Case("quantizer-domain-lm", "--quantizer-domain with a quantizer that is not fitted",
         lambda d: ["encode", LETTER, "-o", _o(d), "--quantizer-domain", "log"]),
    # misleading messages
    Case("evaluate-swapped", "evaluate STORE MODEL (arguments swapped)",
         lambda d: ["evaluate", _store(d), _model(d)]),
    Case("model-not-store", "a model file where a store is needed",
         lambda d: ["decode", _model(d), "-o", _o(d, "f.npy")]),
    Case("like-model", "encode --like a model file",
         lambda d: ["encode", LETTER_TEST, "-o", _o(d), "--like", _model(d)]),
    Case("parquet-not-store", "raw Parquet data where a store is needed",
         lambda d: ["decode", LETTER, "-o", _o(d, "f.npy")]),
    Case("store-not-model", "a store where a model file is needed",
         lambda d: ["predict", _store(d), LETTER_TEST]),
    Case("predict-nan", "NaN in raw input to predict (default --on-nan error)",
         lambda d: ["predict", _model(d), _nan_letter(d), "-o", _o(d, "p.csv")]),
    Case("label-typo", "--label naming no column (a typo)",
         lambda d: ["encode", LETTER, "-o", _o(d), "--label", "lable"]),
    Case("env-bad-value", "RFCLI_ENCODE_FEATURES=abc in the environment",
         lambda d: ["encode", LETTER, "-o", _o(d)], env={"RFCLI_ENCODE_FEATURES": "abc"}),
    Case("parquet-named-csv", "a Parquet file named .csv",
         lambda d: ["encode", _parquet_named_csv(d), "-o", _o(d)]),
    Case("sweep-output", "sweep -o with an unknown extension (checked before any work)",
         lambda d: ["sweep", LETTER, LETTER_TEST, "--model", "svm", "--label", "label",
                    "-o", _o(d, "sw.txt")]),
    Case("sweep-plot", "sweep --plot without matplotlib (checked before any work)",
         _needs_no_matplotlib),
    # the ternary thresholds of a non-homogeneous target on raw coordinates
    Case("ternary-raw-cos", "ternary cos features of raw pen-tablet coordinates",
         lambda d: ["encode", LETTER, "-o", _o(d), "--kernel", "ternary", "--target", "cos",
                    "-m", "64"]),
    # options of another model are refused by train, never ignored
    Case("train-svm-alpha", "train --model svm with --alpha (a krr option)",
         lambda d: ["train", _store(d), "--model", "svm", "--alpha", "1", "-o", _o(d, "x.npz")]),
    Case("train-krr-svm-options", "train --model krr with -C and --loss (svm options)",
         lambda d: ["train", _store(d), "--model", "krr", "-C", "1", "--loss", "hinge",
                    "-o", _o(d, "x.npz")]),
    Case("train-krr-gp-options", "train --model krr with --lengthscale --ard (gpr options)",
         lambda d: ["train", _store(d), "--model", "krr", "--lengthscale", "3", "--ard",
                    "-o", _o(d, "x.npz")]),
    Case("encode-gamma-search-no-label", "encode --gamma search without --label",
         lambda d: ["encode", LETTER, "-o", _o(d), "--gamma", "search"]),
    # -b auto: the bits chosen for a budget (--row-bytes), by validation on the labelled sample
    Case("encode-bits-auto-no-budget", "encode -b auto without --row-bytes",
         lambda d: ["encode", LETTER, "-o", _o(d), "--label", "label", "-b", "auto"]),
    Case("encode-bits-auto-no-label", "encode -b auto --row-bytes 64 without --label",
         lambda d: ["encode", LETTER, "-o", _o(d), "-b", "auto", "--row-bytes", "64"]),
    Case("encode-bits-auto-fixed-quantizer", "encode -b auto with a quantizer of fixed bits",
         lambda d: ["encode", LETTER, "-o", _o(d), "--label", "label", "-b", "auto",
                    "--row-bytes", "64", "--kernel", "arccos0"]),
    Case("encode-bits-auto-float", "encode -b auto --quantizer none",
         lambda d: ["encode", LETTER, "-o", _o(d), "--label", "label", "-b", "auto",
                    "--row-bytes", "64", "--quantizer", "none"]),
    Case("encode-bits-auto-features", "encode -b auto --row-bytes 64 -m 128",
         lambda d: ["encode", LETTER, "-o", _o(d), "--label", "label", "-b", "auto",
                    "--row-bytes", "64", "-m", "128"]),
    Case("encode-row-bytes-contradicts-m", "encode --row-bytes 64 -b 2 -m 100",
         lambda d: ["encode", LETTER, "-o", _o(d), "--row-bytes", "64", "-b", "2", "-m", "100"]),
    Case("encode-row-bytes-glf", "encode --row-bytes with --kernel glf",
         lambda d: ["encode", QUAKES, "-o", _o(d), "--kernel", "glf", "--row-bytes", "64"]),
    # an option where it does not apply (never silently ignored), old and new spellings
    Case("train-cv-folds-given-C", "train --model svm -C 1 --cv-folds 3 (nothing to choose)",
         lambda d: ["train", _store(d), "--model", "svm", "-C", "1", "--cv-folds", "3",
                    "-o", _o(d, "x.npz")]),
    # svm/krr settings: TrainSettings' table (rfcli.constraints), naming the flags
    Case("train-tol-negative", "train --model svm --tol -1",
         lambda d: ["train", _store(d), "--model", "svm", "--tol", "-1", "-o", _o(d, "x.npz")]),
    Case("train-tol-below-float32", "train --model svm --tol 1e-9 (below float32 resolution)",
         lambda d: ["train", _store(d), "--model", "svm", "--tol", "1e-9",
                    "-o", _o(d, "x.npz")]),
    Case("train-max-iter-zero", "train --model svm --max-iter 0",
         lambda d: ["train", _store(d), "--model", "svm", "--max-iter", "0",
                    "-o", _o(d, "x.npz")]),
    Case("train-C-zero", "train --model svm -C 0",
         lambda d: ["train", _store(d), "--model", "svm", "-C", "0", "-o", _o(d, "x.npz")]),
    Case("train-alpha-negative", "train --model krr --alpha -1",
         lambda d: ["train", _store(d), "--model", "krr", "--alpha", "-1",
                    "-o", _o(d, "x.npz")]),
    Case("train-max-iter-float", "train --model svm --max-iter 2.5 (not an integer)",
         lambda d: ["train", _store(d), "--model", "svm", "--max-iter", "2.5",
                    "-o", _o(d, "x.npz")]),
    Case("gpr-store-label", "train --model gpr on a store with --label (the store's is used)",
         lambda d: ["train", _store(d), "--model", "gpr", "--label", "y", "-o", _o(d, "x.npz")]),
    Case("gpr-glf-features", "train --model gpr -m 256 with GLF features (-m is RFF's)",
         lambda d: ["train", QUAKES, "--model", "gpr", "--label", "y", "-m", "256",
                    "-o", _o(d, "x.npz")]),
    Case("gpr-lengthscale-learn", "train --model gpr --lengthscale without --no-learn",
         lambda d: ["train", QUAKES, "--model", "gpr", "--label", "y", "--lengthscale", "0.3",
                    "-o", _o(d, "x.npz")]),
    Case("old-and-new-spelling", "encode --tol and --kernel-tol (the old and new spelling)",
         lambda d: ["encode", QUAKES, "-o", _o(d), "--kernel", "glf", "--tol", "0.01",
                    "--kernel-tol", "0.01"]),
    Case("scheduler-local", "--scheduler without --engine dask",
         lambda d: ["predict", _model(d), LETTER_TEST, "--scheduler", "tcp://host:8786"]),
    Case("predict-store-on-nan", "predict --on-nan on a store (encoded rows have no NaN)",
         lambda d: ["predict", _model(d), _store(d), "--on-nan", "drop"]),
    Case("overwrite-stdout", "decode -o - --overwrite (stdout is not a file)",
         lambda d: ["decode", _store(d), "-o", "-", "--overwrite"]),
    Case("evaluate-rows-no-kernel-error", "evaluate MODEL TEST --rows (a --kernel-error option)",
         lambda d: ["evaluate", _model(d), LETTER_TEST, "--rows", "100"]),
    Case("kernel-error-dask", "evaluate --kernel-error with --engine dask",
         lambda d: ["evaluate", "--kernel-error", _store(d), "--data", LETTER, "--engine",
                    "dask"]),
    Case("fit-quantizer-seed-lm", "fit-quantizer --kind lm --seed 3 (lm draws nothing)",
         lambda d: ["fit-quantizer", "--kind", "lm", "--seed", "3"]),
    Case("train-no-model", "train STORE without --model (click lists the choices)",
         lambda d: ["train", _store(d)]),
    Case("sweep-keep-no-workdir", "sweep --keep without --workdir (kept where?)",
         lambda d: ["sweep", LETTER, LETTER_TEST, "--model", "svm", "--label", "label",
                    "--keep"]),
    # issue 28: messages that say what to do
    Case("like-columns-many", "encode --like a store of 29 feature columns the input lacks",
         lambda d: ["encode", _write(d, "few.csv", "f0,f1\n1,2\n"), "-o", _o(d),
                    "--like", _wide_store(d)]),
    Case("text-cell", "a column of numbers with one text cell ('abc' at data row 300)",
         lambda d: ["encode", _wide_csv(d, cell=(300, "x3", "abc")), "-o", _o(d),
                    "--label", "target"]),
    Case("na-cell-line", "'n/a' in a CSV feature: named by its file line",
         lambda d: ["encode", _wide_csv(d, cell=(300, "x3", "n/a")), "-o", _o(d),
                    "--label", "target"]),
    Case("train-raw-svm", "train raw CSV --model svm --label (encode it first)",
         lambda d: ["train", _letter_csv(d), "--model", "svm", "--label", "label",
                    "-o", _o(d, "m.npz")]),
    Case("label-not-found-wide", "--label label where the label is 'target' (30 columns)",
         lambda d: ["encode", _wide_csv(d), "-o", _o(d), "--label", "label"]),
    Case("delimiter-hint", "a tab-separated .txt read as comma CSV (predict)",
         lambda d: ["predict", _model(d), _wide_csv(d, "wide.txt", sep="\t")]),
    Case("delimiter-bad", "--delimiter of two characters",
         lambda d: ["encode", LETTER_TEST, "-o", _o(d), "--delimiter", ";;"]),
    Case("delimiter-store", "predict --delimiter on a store (not CSV)",
         lambda d: ["predict", _model(d), _store(d), "--delimiter", "tab"]),
    Case("resume-other-settings", "--resume of a partial store started with another -m",
         _resume_other),
    Case("inspect-partial", "inspect the partial store of an interrupted encode",
         lambda d: ["inspect", _partial(d) + ".partial"]),
]  # fmt: skip


def run(args, check=False, stdin=None, env=None):
    r = subprocess.run(
        [sys.executable, "-m", "rfcli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=ROOT,
        env={**os.environ, **env} if env else None,
    )
    if check and r.returncode != 0:
        raise RuntimeError(f"setup failed: {' '.join(args)}: {r.stderr}")
    return r


def normalize(text: str, tmp: str) -> str:
    """Replace the temporary directories and the project root by placeholders."""
    import re

    for d in (SHARED, tmp):
        if d:
            text = text.replace(os.path.realpath(d), "TMP").replace(d, "TMP")
    text = re.sub(r"this machine's [0-9.]+ [KMGT]iB", "this machine's MEMORY", text)
    return text.replace(ROOT, "ROOT")


def run_case(case: Case, tmp: str):
    args = case.setup(tmp)
    r = run(args, stdin="" if "-" in args else None, env=case.env)
    lines = r.stderr.strip().splitlines()
    return r.returncode, normalize(lines[-1] if lines else "", tmp), r.stderr


def markdown(results) -> str:
    out = [
        "# Errors: every bad input, its message and exit status",
        "",
        "Generated by `python -m tests.cli.error_cases > docs/errors.md` from the cases that",
        "tests/cli/test_error_table.py runs through the real CLI (a subprocess each); the",
        "test fails when a message drifts from this table. `TMP` is the case's temporary",
        "directory, `ROOT` the project, `MEMORY` the machine's physical memory. Exit status",
        "2: usage/input errors; 1 is reserved for internal errors (none below); 130:",
        "interrupted. No case prints a traceback (`--debug` shows one for internal errors).",
        "An option value out of its range is refused by click before anything runs, in one",
        "line that names the flag. Library messages name the Python parameters; the command",
        "line names its flags instead (`--overwrite`, `--on-nan`, `--memory`).",
        "",
        "| case | bad input | exit | message (stderr, one line) |",
        "|---|---|---|---|",
    ]
    for case, (code, msg) in results:
        cell = msg.replace("|", "\\|")
        out.append(f"| {case.name} | {case.what} | {code} | `{cell}` |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    import tempfile

    SHARED = tempfile.mkdtemp(prefix="rfcli-errors-")
    results = []
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                code, msg, _ = run_case(case, tmp)
            except OSError as e:
                code, msg = "–", f"(not run here: {e})"
            finally:
                mnt = os.path.join(tmp, "small-fs")
                if os.path.ismount(mnt):
                    subprocess.run(["umount", mnt])
            results.append((case, (code, msg)))
    sys.stdout.write(markdown(results))
