"""The jobs on in-memory data: ``rfcli.encode``, ``train``, ``train_gpr``, ``predict`` and
``evaluate`` take a NumPy array, a pandas DataFrame or a pyarrow Table wherever they take an
input path (one dispatch: rfcli.io.readers.open_source), and give what they give for a
Parquet file of the same rows: the same store bytes, the same model weights bit for bit,
the same predictions and metrics.  Bad in-memory inputs are one-line rfcli errors."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rfcli
from rfcli.errors import InputError, ParameterTypeError, RfcliError, UsageError
from rfcli.io.arrays import ArraySource
from rfcli.io.encoded import EncodedInput
from rfcli.io.readers import open_source, select_columns
from rfcli.io.store import FeatureStore
from rfcli.learn.data import StoreData
from tests.helpers import LETTER, SAMPLE

pd = pytest.importorskip("pandas")

FEATURES = [f"f{j}" for j in range(16)]


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """10,000 rows of letter.train as a pyarrow Table and as a Parquet file (row groups of
    700 rows, so that the file's reads cross row groups)."""
    table = pq.read_table(LETTER).slice(0, 10000)
    path = tmp_path_factory.mktemp("mem") / "letter10k.parquet"
    pq.write_table(table, path, row_group_size=700)
    return table, str(path)


def store_files(path: str) -> dict[str, bytes]:
    """Every file of a store by relative path, the root metadata apart (see root_meta)."""
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            full = os.path.join(root, f)
            out[os.path.relpath(full, path)] = open(full, "rb").read()
    out.pop("zarr.json")
    return out


def root_meta(path: str) -> dict:
    with open(os.path.join(path, "zarr.json")) as f:
        return json.load(f)["attributes"]["rfcli"]


def as_inputs(table: pa.Table) -> dict:
    """The same rows as in-memory inputs: (data, y) pairs whose label is ``label``."""
    df = table.to_pandas()
    features = [c for c in table.column_names if c != "label"]
    X = np.column_stack([df[c].to_numpy() for c in features])
    return {
        "DataFrame": (df, None),
        "Table": (table, None),
        "mapping": ({c: table[c].to_numpy() for c in table.column_names}, None),
        "X and y": (df[features], df["label"]),
        "ndarray and y": (X, df["label"].to_numpy()),
    }


# -- encode ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def file_store(tmp_path_factory):
    """The store of a Parquet file under settings ``es``, encoded once per (file, settings)
    for the module."""
    made: dict = {}

    def get(path: str, es) -> str:
        key = (path, repr(es))
        if key not in made:
            made[key] = str(tmp_path_factory.mktemp("file-store") / "file.zarr")
            rfcli.encode(path, made[key], es, rfcli.ReadSettings(label="label"))
        return made[key]

    return get


@pytest.mark.parametrize("kind", ["DataFrame", "Table", "mapping", "X and y", "ndarray and y"])
def test_encode_in_memory_equals_the_file_store(rows, file_store, tmp_path, kind):
    """Encoding the rows in memory writes the store the Parquet file gives, byte for byte
    (codes, norms, label, the fitted encoder's arrays), whatever the chunk size; the
    metadata differ only in the source's name.  The settings use every input-dependent
    step: z-scores (pass 1), gamma chosen by validation on the labelled hash sample, and
    the stoc quantizer, whose random rounding hashes each row's global index."""
    table, path = rows
    if kind == "ndarray and y":  # a NumPy array's columns are x0..x15: the file's too
        table = table.rename_columns([f"x{j}" for j in range(16)] + ["label"])
        path = str(tmp_path / "x.parquet")
        pq.write_table(table, path, row_group_size=700)
    data, y = as_inputs(table)[kind]
    es = rfcli.EncodeSettings(n_features=64, bits=2, quantizer="stoc", standardize=True,
                              gamma="search")  # fmt: skip
    ref = file_store(path, es)
    got = str(tmp_path / "mem.zarr")
    read = rfcli.ReadSettings(label=None if y is not None else "label", chunk_rows=999)
    res = rfcli.encode(data, got, es, read, y=y)
    assert res.n_rows == 10000 and res.path == got
    assert store_files(got) == store_files(ref)
    a, b = root_meta(got), root_meta(ref)
    assert a["source"].pop("path").startswith("<") and b["source"].pop("path") == os.path.basename(
        path
    )
    assert a == b


@pytest.mark.parametrize(
    "es",
    [
        rfcli.EncodeSettings(n_features=64, gamma=0.05),  # codes from the phase, no z-scores
        rfcli.EncodeSettings(n_features=64, gamma=0.05, quantizer="stoc"),  # the cosine path
        rfcli.EncodeSettings(n_features=64, kernel="arccos0"),  # a map without phases
    ],
    ids=["turns", "stoc", "arccos0"],
)
def test_column_major_file_chunks_store_the_array_rows_bytes(rows, tmp_path, es):
    """The encode reads the Parquet file's columns into column-major chunks; without
    preprocessing nothing else makes rows of them but the encoder: the store is the one the
    same rows give from a row-major NumPy array, byte for byte."""
    table, path = rows
    features = [c for c in table.column_names if c != "label"]
    X = np.column_stack([table[c].to_numpy() for c in features])
    y = table["label"].to_numpy()
    a, b = str(tmp_path / "file.zarr"), str(tmp_path / "array.zarr")
    rfcli.encode(path, a, es, rfcli.ReadSettings(label="label", chunk_rows=999))
    rfcli.encode(X, b, es, rfcli.ReadSettings(chunk_rows=999), y=y)
    assert store_files(a) == store_files(b)


def test_encode_like_a_store_or_an_encoder(rows, tmp_path):
    """A test set in memory encoded like a store (or like its encoder) is the store the file
    gives."""
    table, path = rows
    train = str(tmp_path / "train.zarr")
    rfcli.encode(path, train, rfcli.EncodeSettings(n_features=64, standardize=True),
                 rfcli.ReadSettings(label="label"))  # fmt: skip
    test = table.slice(0, 3000)
    ref = str(tmp_path / "ref.zarr")
    pq.write_table(test, tmp_path / "test.parquet")
    rfcli.encode(str(tmp_path / "test.parquet"), ref, like=train)
    for i, like in enumerate((train, FeatureStore(train).encoder)):
        out = str(tmp_path / f"like{i}.zarr")
        rfcli.encode(test.to_pandas(), out, like=like, read=rfcli.ReadSettings(label="label"))
        assert store_files(out) == store_files(ref)


def test_encoded_input_reads_like_the_store(rows, tmp_path):
    """EncodedInput (raw rows as the store encode would write) serves the learners the
    store's arrays: the same batches at the same global rows, with the learners' cache of
    decoded features, of packed codes, or none (every pass encodes the rows again)."""
    table, path = rows
    store_path = str(tmp_path / "s.zarr")
    res = rfcli.encode(path, store_path, rfcli.EncodeSettings(n_features=64, quantizer="stoc"),
                       rfcli.ReadSettings(label="label"))  # fmt: skip
    store = FeatureStore(store_path)
    source = ArraySource(table)
    mem = EncodedInput(source, select_columns(source, FEATURES, "label"), res.encoder)
    assert (mem.chunk_rows, mem.n_rows, mem.bits) == (store.chunk_rows, store.n_rows, store.bits)
    assert mem.label_info == store.label_info
    assert mem.meta["fingerprint"] == store.meta["fingerprint"]
    want = StoreData(store, chunk_rows=4096, cache_bytes=0)
    ref = [(b.row0, b.F, b.y) for b in want.batches()]
    assert [r for r, _, _ in ref] == [0, 4096, 8192]
    budgets = {"decoded": (1 << 30, 1 << 30), "packed": (mem.n_rows * (16 + 16), 0),
               "none": (0, 0)}  # fmt: skip
    for kind, (packed, decoded) in budgets.items():
        data = StoreData(mem, chunk_rows=4096, cache_bytes=packed, decoded_bytes=decoded)
        assert data.cache_kind == kind
        for _ in range(2):  # the pass that fills the cache and one that reads it
            got = [(b.row0, b.F, b.y) for b in data.batches()]
            assert len(got) == len(ref)
            for (r0, F, y), (s0, G, z) in zip(got, ref, strict=True):
                assert r0 == s0 and np.array_equal(F, G) and np.array_equal(y, z)


# -- train ----------------------------------------------------------------------------------
ENCODE = rfcli.EncodeSettings(n_features=64, standardize=True)


@pytest.fixture(scope="module")
def letter_store(rows, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("mem") / "letter.zarr")
    rfcli.encode(rows[1], path, ENCODE, rfcli.ReadSettings(label="label"))
    return path


@pytest.mark.parametrize(
    "settings",
    [rfcli.TrainSettings(model="svm", C=1.0, cv_folds=0), rfcli.TrainSettings(model="krr")],
    ids=["svm", "krr-cv"],
)
def test_train_in_memory_equals_encode_then_train(rows, letter_store, tmp_path, settings):
    """rfcli.train on the rows in memory (or on the Parquet file itself) with EncodeSettings
    == rfcli.encode of the file +
    rfcli.train on the store: the same encoder and the same weights bit for bit (10,000 rows
    are two 8192-row chunks: the SVM's cached passes run on two threads, as on the store).
    The result carries the encoder and saves a model file that predicts as the store's
    model does."""
    table, path = rows
    ref = rfcli.train(letter_store, str(tmp_path / "ref.npz"), settings, threads=2)
    df = table.to_pandas()
    runs = {
        "label column": rfcli.train(
            df, None, settings, rfcli.ReadSettings(label="label"), encode=ENCODE, threads=2
        ),
        "X and y": rfcli.train(
            df[FEATURES], None, settings, encode=ENCODE, y=df["label"], threads=2
        ),
        "Parquet file": rfcli.train(
            path, None, settings, rfcli.ReadSettings(label="label"), encode=ENCODE, threads=2
        ),
    }
    names = {"label column": "<DataFrame 10000 x 17>", "X and y": "<DataFrame 10000 x 16>",
             "Parquet file": path}  # fmt: skip
    for how, res in runs.items():
        assert res.encoder.fingerprint() == FeatureStore(letter_store).meta["fingerprint"]
        assert np.array_equal(res.model.W, ref.model.W) and np.array_equal(res.model.b, ref.model.b)
        assert res.model.targets.classes == ref.model.targets.classes
        assert res.trained_on["input"] == names[how] and res.trained_on["label"] == "label"
        for key in ("C", "alpha", "rows", "features", "bits", "cv"):
            assert res.report.get(key) == ref.report.get(key)
    res = runs["X and y"]
    saved = res.save(str(tmp_path / "mem.npz"))
    test = df.iloc[:2000]
    p_ref = rfcli.predict(str(tmp_path / "ref.npz"), test)["prediction"]
    assert np.array_equal(rfcli.predict(saved, test)["prediction"], p_ref)
    assert np.array_equal(rfcli.predict(res, test)["prediction"], p_ref)


def test_a_parquet_path_with_its_label_is_raw_input(rows):
    """A file that is not a store, given with read.label and no encode settings, is encoded
    with the default settings (not refused as a store given read)."""
    res = rfcli.train(rows[1], None, rfcli.TrainSettings(model="krr", alpha=1.0),
                      rfcli.ReadSettings(label="label"))  # fmt: skip
    assert res.trained_on["input"] == rows[1]
    assert rfcli.EncodeSettings().n_features is None  # the default: 1024 features
    assert res.encoder.n_features == 1024


def test_train_gpr_in_memory_equals_the_file(tmp_path):
    """rfcli.train_gpr on quakes as a DataFrame (label column, or X and y) == on the file:
    the same encoder and posterior weights."""
    path = SAMPLE / "quakes.train.parquet"
    gs = rfcli.GPRSettings(features="rff", n_features=64, learn=False, lengthscale=0.5)
    ref = rfcli.train_gpr(str(path), None, gs, rfcli.ReadSettings(label="y"))
    df = pq.read_table(path).to_pandas()
    for res in (rfcli.train_gpr(df, None, gs, rfcli.ReadSettings(label="y")),
                rfcli.train_gpr(df[["lat", "long"]], None, gs, y=df["y"])):  # fmt: skip
        assert res.encoder.fingerprint() == ref.encoder.fingerprint()
        assert np.array_equal(res.model.W, ref.model.W)
        assert res.trained_on == {"input": res.trained_on["input"], "label": "y"}


# -- predict and evaluate -----------------------------------------------------------------
def test_predict_and_evaluate_on_a_dataframe_equal_the_file(rows, letter_store, tmp_path):
    """predict on a DataFrame (output=None: the columns in memory; or written) == predict on
    the file; evaluate on it (its label column, or y apart) == evaluate on the file."""
    table, _ = rows
    test = table.slice(0, 3000).append_column("rid", pa.array(np.arange(3000) * 7))
    path = str(tmp_path / "test.parquet")
    pq.write_table(test, path, row_group_size=700)
    df = test.to_pandas()
    model = str(tmp_path / "svm.npz")
    rfcli.train(letter_store, model, rfcli.TrainSettings(model="svm", C=1.0, cv_folds=0))
    rfcli.predict(model, path, str(tmp_path / "file.parquet"), ids=["rid"])
    want = pq.read_table(tmp_path / "file.parquet")
    got = rfcli.predict(model, df, ids=["rid"])
    assert list(got) == want.column_names == ["rid", "prediction"]
    for name in got:
        assert np.array_equal(got[name], want[name].to_numpy())
    n = rfcli.predict(model, test, str(tmp_path / "mem.parquet"), ids=["rid"])
    assert n == 3000 and pq.read_table(tmp_path / "mem.parquet").equals(want)

    ref = rfcli.evaluate(model, path)
    for res in (rfcli.evaluate(model, df), rfcli.evaluate(model, df[FEATURES], y=df["label"]),
                rfcli.evaluate(model, test.drop(["label"]), y=test["label"])):  # fmt: skip
        assert {k: v for k, v in res.items() if k != "seconds"} == {
            k: v for k, v in ref.items() if k != "seconds"
        }


def test_gp_predictions_on_arrays(tmp_path):
    """A GP model's mean and standard deviation for a DataFrame == for the file."""
    path = SAMPLE / "quakes.test.parquet"
    gs = rfcli.GPRSettings(features="rff", n_features=64, learn=False, lengthscale=0.5)
    res = rfcli.train_gpr(str(SAMPLE / "quakes.train.parquet"), str(tmp_path / "gp.npz"), gs,
                          rfcli.ReadSettings(label="y"))  # fmt: skip
    rfcli.predict(str(tmp_path / "gp.npz"), str(path), str(tmp_path / "p.npy"))
    want = np.load(tmp_path / "p.npy")
    got = rfcli.predict(res, pq.read_table(path).to_pandas())
    assert np.array_equal(np.column_stack([got["prediction"], got["std"]]), want)


# -- bad inputs -----------------------------------------------------------------------------
def test_bad_in_memory_inputs_are_one_line_errors(rows, letter_store, tmp_path):
    table, path = rows
    df = table.slice(0, 500).to_pandas()
    X = df[FEATURES].to_numpy()
    model = str(tmp_path / "krr.npz")
    rfcli.train(letter_store, model, rfcli.TrainSettings(model="krr", alpha=1.0))
    out = str(tmp_path / "o.zarr")
    csv = str(tmp_path / "rows.csv")
    df.to_csv(csv, index=False)
    krr = rfcli.TrainSettings(model="krr", alpha=1.0)
    cases = [
        (lambda: rfcli.encode(X[:, 0], out), InputError, r"must be 2-D .*got shape \(500,\)"),
        (lambda: rfcli.encode(df["f0"], out), InputError, r"<Series shape \(500,\)>: .*2-D"),
        (lambda: rfcli.encode(df, None), UsageError, "in-memory input: give the output store"),
        (lambda: rfcli.encode(df, out, resume=True), UsageError, "resume needs a file input"),
        (lambda: rfcli.encode(df, out, y=df["label"]), UsageError, "has a column 'label' already"),
        (lambda: rfcli.encode([[1.0, 2.0]], out), ParameterTypeError, "got list"),
        (lambda: open_source(df, fmt="csv"), UsageError, "in-memory data has none"),
        (
            lambda: rfcli.encode(df, out, like=letter_store, read=rfcli.ReadSettings(label="y")),
            InputError,
            "label column 'y' not found",
        ),
        (
            lambda: rfcli.encode(X, out, like=letter_store),
            InputError,
            "of the store .* are missing from <ndarray .*; a NumPy array has no column names",
        ),
        (
            lambda: rfcli.predict(model, X),
            InputError,
            r"16 columns that the model's map needs are missing from <ndarray 500 x 16>: f0, .*; a "
            "NumPy array has no column",
        ),
        (
            lambda: rfcli.predict(model, df[["f0", "f1"]]),
            InputError,
            r"14 columns that the model's map needs are missing from <DataFrame 500 x 2>: f2, ",
        ),
        (lambda: rfcli.predict(42, df), ParameterTypeError, "model must be a model file's path"),
        (
            lambda: rfcli.evaluate(model, df[FEATURES]),
            InputError,
            "no label column 'label' .*give the labels as y",
        ),
        (lambda: rfcli.evaluate(model, X), InputError, "give the labels as y; a NumPy array"),
        (lambda: rfcli.train(df[FEATURES], None, krr), UsageError, "needs its label"),
        (lambda: rfcli.train(path, None, krr, y=df["label"]), UsageError, "y is the label of"),
        (
            lambda: rfcli.train(letter_store, None, krr, encode=ENCODE),
            UsageError,
            "a store is encoded already",
        ),
        (
            lambda: rfcli.train(df, None, krr, rfcli.ReadSettings(label="label"), engine="dask"),
            UsageError,
            "use the local engine",
        ),
        (
            lambda: rfcli.train(X, str(tmp_path / "m.npz"), krr, y=np.ones((500, 2))),
            UsageError,
            "a model file holds one regression output; y has 2 columns",
        ),
        (  # refused by the job itself, before a cluster is started
            lambda: rfcli.train_gpr(
                df, None, read=rfcli.ReadSettings(label="label", on_nan="drop"), engine="dask"
            ),  # fmt: skip
            UsageError,
            "the dask engine keeps every row in its place",
        ),
        (  # the same from the result of a training without an output
            lambda: rfcli.train(
                X, None, krr, y=np.random.default_rng(1).normal(size=(500, 2))
            ).save(str(tmp_path / "m2.npz")),
            UsageError,
            "a model file holds one regression output; y has 2 columns",
        ),
        (
            lambda: rfcli.train(X, None, rfcli.TrainSettings(model="svm"), y=np.ones((500, 2))),
            UsageError,
            "2 regression outputs: model krr",
        ),
        (
            lambda: rfcli.train(
                X, None, krr, encode=rfcli.EncodeSettings(gamma="search"), y=np.ones((500, 2))
            ),
            UsageError,
            "a label of one column",
        ),
        (lambda: rfcli.train(X, None, krr, y=np.ones(499)), InputError, r"expected \(500,\)"),
        (
            lambda: rfcli.train(csv, None, krr, rfcli.ReadSettings(label="label"), encode=ENCODE),
            UsageError,
            "reads it by row ranges: give Parquet or in-memory data",
        ),
        (
            lambda: rfcli.train(df, None, krr, rfcli.ReadSettings(label="label", on_nan="drop")),
            UsageError,
            "on_nan='drop'",
        ),
    ]
    for i, (call, cls, pattern) in enumerate(cases):
        with pytest.raises(cls, match=pattern) as e:
            call()
        assert isinstance(e.value, RfcliError) and "\n" not in str(e.value), (i, e.value)
    assert not os.path.exists(out)


def test_paths_as_pathlib_objects(rows, tmp_path):
    """os.PathLike paths work where text paths do (input, output, model)."""
    _, path = rows
    from pathlib import Path

    store = tmp_path / "p.zarr"
    rfcli.encode(Path(path), store, ENCODE, rfcli.ReadSettings(label="label"))
    res = rfcli.train(store, tmp_path / "m.npz", rfcli.TrainSettings(model="krr", alpha=1.0))
    assert res.trained_on["store"] == str(store)
    assert rfcli.evaluate(tmp_path / "m.npz", store)["rows"] == 10000


def test_feature_columns_of_one_array_are_copied_as_a_block_with_the_same_values():
    """A NumPy array's batches hand over strided column views; consecutive ones are read as
    one 2-D block (a copy: the caller's array is never written), others are stacked."""
    from rfcli.io.readers import _feature_block, column_stride

    X = np.random.default_rng(0).standard_normal((100, 5))
    cols = {f"x{j}": X[10:60, j] for j in range(5)}
    for dtype in (np.float32, np.float64):
        for names in (["x0", "x1", "x2", "x3", "x4"], ["x2", "x3", "x4"], ["x1", "x3"]):
            idx = [int(n[1:]) for n in names]
            want = np.column_stack([X[10:60, j].astype(dtype) for j in idx])
            for order in ("C", "F"):
                B = _feature_block(cols, names, dtype, order)
                assert np.array_equal(B, want) and B.dtype == dtype
                assert B.flags.writeable and not np.may_share_memory(B, X)
    # columns read one by one (Parquet's, CSV's): column-major on request
    apart = {f"x{j}": np.ascontiguousarray(X[:, j]) for j in range(5)}
    F = _feature_block(apart, ["x0", "x2", "x4"], np.float32, "F")
    assert F.strides == (4, column_stride(100, 4))
    assert np.array_equal(F, X[:, [0, 2, 4]].astype(np.float32)) and F.flags.writeable
    # ... whose columns never lie a multiple of 4 KiB apart (they would share a cache set:
    # the encoder's row-major copy of a block then missed on every value)
    for n, dtype in ((8192, np.float32), (8192, np.float64), (1000, np.float32)):
        many = {f"x{j}": np.arange(n, dtype=np.float64) + j for j in range(3)}
        B = _feature_block(many, ["x0", "x1", "x2"], dtype, "F")
        size = np.dtype(dtype).itemsize
        assert B.strides[0] == size and B.strides[1] % 4096 == 64
        assert n * size <= B.strides[1] < n * size + 4096
        assert np.array_equal(B, np.column_stack([many[c] for c in many]).astype(dtype))
    assert _feature_block(apart, ["x0", "x2"], np.float32).flags.c_contiguous
    src = ArraySource(X, extra={"y": np.zeros(100)})
    sel = select_columns(src, None, "y", [])
    from rfcli.io.readers import iter_chunks

    chunk = next(iter_chunks(src, sel, 64, "zero"))
    chunk.X[:] = 7.0  # the chunk is the reader's own
    assert not np.any(X == 7.0)


def test_krr_on_offset_targets_learns_the_same_function():
    """Regression targets far from zero (y + 1e9): the ridge statistics' sums of squared
    targets lost the variance (training MSE -131, an alpha 100x too small); with the
    targets shifted by their first row's (rfcli.learn.selection.first_target_shift) the
    same alpha is chosen and the predictions are those of y, plus 1e9 (to the rounding of
    numbers of 1e9: float64 keeps 1e-7 of them)."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (3000, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.normal(size=3000)
    es = rfcli.EncodeSettings(n_features=256, bits=2, seed=0)
    fits = [rfcli.train(X, None, rfcli.TrainSettings(model="krr"), encode=es, y=y + off)
            for off in (0.0, 1e9)]  # fmt: skip
    (a, b) = fits
    assert b.report["alpha"] == a.report["alpha"]
    assert b.report["train_mse"] == pytest.approx(a.report["train_mse"], rel=1e-4)
    Xt = rng.uniform(-3, 3, (500, 2))
    pa_, pb = (rfcli.predict(r, Xt)["prediction"] for r in fits)
    assert np.max(np.abs((pb - 1e9) - pa_)) < 1e-5


def test_columns_far_from_zero_for_a_float32_map_are_reported(tmp_path):
    """x = 1e9 + u keeps steps of 64 in float32, where the Fourier map computes: the
    encode warns, naming the column (a ridge on those features had R^2 -0.003); not with
    the columns standardized, and not for ordinary columns."""
    from rfcli.errors import PrecisionWarning

    rng = np.random.default_rng(5)
    u = rng.uniform(-3, 3, (500, 2))
    X = np.column_stack([u[:, 0] + 1e9, u[:, 1]])
    es = rfcli.EncodeSettings(n_features=64)
    with pytest.warns(PrecisionWarning, match=r"column 'x0': values up to 1e\+09") as got:
        rfcli.encode(X, str(tmp_path / "a.zarr"), es)
    assert len(got) == 1  # x1 is fine
    for X2, es2 in ((X, rfcli.EncodeSettings(n_features=64, standardize=True)), (u, es)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrecisionWarning)
            rfcli.encode(X2, str(tmp_path / "b.zarr"), es2, overwrite=True)


def test_numbers_with_decimal_commas_are_refused_not_left_out(tmp_path):
    """A semicolon CSV of numbers with decimal commas ('1,5'): its columns were read as
    text and the encode left them out ("skipped non-numeric column(s)"), training on what
    was left; now the first such cell is named."""
    p = tmp_path / "euro.csv"
    p.write_text("a;b;y\n1,5;2;0\n2,5;3;1\n3,25;1;0\n")
    with pytest.raises(InputError, match=r"line 2: column 'a' holds '1,5', a number with a "
                                         r"decimal comma"):  # fmt: skip
        rfcli.encode(str(p), str(tmp_path / "s.zarr"), rfcli.EncodeSettings(n_features=16),
                     rfcli.ReadSettings(label="y", delimiter=";"))  # fmt: skip
