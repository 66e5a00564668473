"""Encode pipeline and store: reproducibility, --like, labels/ids, decode, failures."""

import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from rfcli import EncodeSettings, FeatureStore, ReadSettings, decode, encode
from rfcli.errors import IncompatibleError, InputError, OutputError, StoreError
from tests.helpers import chunk_files_digest, letter_matrix, run, write_parquet


@pytest.mark.parametrize("quantizer,bits", [("lm", 2), ("stoc", 3), ("lm2", 5)])
def test_byte_identical_for_chunk_sizes_and_threads(tmp_path, letter_small, quantizer, bits):
    kw = dict(
        label="label",
        quantizer=quantizer,
        bits=bits,
        n_features=200,
        standardize=True,
        normalize_rows=True,
    )
    a = run(letter_small, tmp_path / "a.zarr", chunk_rows=600, threads=1, **kw)
    b = run(letter_small, tmp_path / "b.zarr", chunk_rows=77, threads=3, **kw)
    c = run(letter_small, tmp_path / "c.zarr", chunk_rows=1, threads=2, **kw)
    assert a.encoder.fingerprint() == b.encoder.fingerprint() == c.encoder.fingerprint()
    assert chunk_files_digest(tmp_path / "a.zarr") == chunk_files_digest(tmp_path / "b.zarr")
    assert chunk_files_digest(tmp_path / "a.zarr") == chunk_files_digest(tmp_path / "c.zarr")


@pytest.mark.parametrize(
    "kernel, quantizer, bits, prep",
    [
        ("gaussian", "lm", 2, {}),  # codes from the phase in turns, no preprocessing
        ("laplacian", "lm", 3, {"standardize": True, "normalize_rows": True}),
        ("gaussian", "stoc", 2, {"normalize_rows": True}),  # the cosine path
        ("arccos1", "lm", 2, {}),  # no phases
    ],
)
def test_column_major_chunks_encode_as_row_major_ones(kernel, quantizer, bits, prep):
    """The encode loop reads Parquet and CSV columns into column-major chunks; the encoder
    writes the same bytes as for the same rows row-major: the maps' products and the row
    reductions of preprocessing get row-major rows (other BLAS kernels may round a
    transposed operand differently), the phases in turns copies of each block."""
    from rfcli.encoder import Encoder
    from rfcli.maps import Preprocessor, make_map
    from rfcli.quantize import make_quantizer

    rng = np.random.default_rng(5)
    X = (rng.normal(size=(700, 64)) * rng.uniform(0.5, 20, 64)).astype(np.float32)
    pre = Preprocessor(**prep)
    if pre.needs_stats:
        pre.mean_, pre.scale_ = X.astype(np.float64).mean(0), X.astype(np.float64).std(0)
    fmap = make_map(kernel, 96, gamma=0.05, seed=3).fit(64, X[:200])
    q = make_quantizer(quantizer, bits, seed=2, law=fmap.value_law)
    enc = Encoder([f"x{i}" for i in range(64)], pre, fmap, q)
    seen = []  # the layouts the map's own products and reductions get (not the phases')
    raw = fmap.transform_raw
    fmap.transform_raw = lambda B: (seen.append(B.flags.c_contiguous), raw(B))[1]
    a = enc.encode_chunk(np.ascontiguousarray(X), 300)
    b = enc.encode_chunk(np.asfortranarray(X), 300)
    assert all(seen) and (len(seen) > 0) == (quantizer == "stoc" or kernel == "arccos1")
    assert pre.transform(np.asfortranarray(X)).flags.c_contiguous or not (
        pre.standardize or pre.normalize_rows
    )
    np.testing.assert_array_equal(a.packed, b.packed)
    np.testing.assert_array_equal(a.norms, b.norms)
    if a.row_scale is not None:
        np.testing.assert_array_equal(a.row_scale, b.row_scale)


def test_csv_and_parquet_inputs_give_the_same_codes(tmp_path, letter_small, letter_small_csv):
    run(letter_small, tmp_path / "p.zarr", label="label", n_features=64)
    run(letter_small_csv, tmp_path / "c.zarr", label="label", n_features=64, chunk_rows=100)
    assert chunk_files_digest(tmp_path / "p.zarr") == chunk_files_digest(tmp_path / "c.zarr")


def test_like_reproduces_training_map(tmp_path, letter_small):
    train = run(
        letter_small, tmp_path / "train.zarr", label="label", n_features=128, standardize=True
    )
    again = run(
        letter_small,
        tmp_path / "again.zarr",
        like=os.fspath(tmp_path / "train.zarr"),
        chunk_rows=99,
    )
    assert again.encoder.fingerprint() == train.encoder.fingerprint()
    s1, s2 = (
        FeatureStore(os.fspath(tmp_path / "train.zarr")),
        FeatureStore(os.fspath(tmp_path / "again.zarr")),
    )
    np.testing.assert_array_equal(s1.group["codes"][:], s2.group["codes"][:])
    np.testing.assert_array_equal(s1.labels(), s2.labels())  # label picked up from the like store
    assert chunk_files_digest(tmp_path / "train.zarr") == chunk_files_digest(
        tmp_path / "again.zarr"
    )


def test_like_with_missing_columns_is_clear(tmp_path, letter_small):
    run(letter_small, tmp_path / "train.zarr", label="label", n_features=16)
    other = write_parquet(tmp_path / "o.parquet", f0=np.ones(3), f1=np.ones(3))
    with pytest.raises(InputError, match="f2"):
        run(other, tmp_path / "o.zarr", like=os.fspath(tmp_path / "train.zarr"))


def test_store_contents_labels_ids_and_metadata(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    path = write_parquet(
        tmp_path / "d.parquet",
        a=rng.normal(size=n),
        b=rng.normal(size=n),
        name=np.array([f"row{i}" for i in range(n)]),
        cls=np.array(["cat", "dog", "eel"])[rng.integers(0, 3, n)],
    )
    res = run(path, tmp_path / "s.zarr", label="cls", ids=["name"], n_features=32, gamma=0.5)
    assert res.skipped_columns == []
    st = FeatureStore(os.fspath(tmp_path / "s.zarr"))
    assert st.n_rows == n and st.complete
    assert st.encoder.columns == ["a", "b"]
    info = st.label_info
    assert info["kind"] == "category"
    classes = np.array(info["classes"])
    src = pq.read_table(path)
    np.testing.assert_array_equal(classes[st.labels()], src["cls"].to_numpy(zero_copy_only=False))
    np.testing.assert_array_equal(st.ids()["name"], src["name"].to_numpy(zero_copy_only=False))
    assert st.group["codes"].shape == (n, 8)  # 32 features * 2 bits / 8


def test_decoded_features_estimate_the_kernel(tmp_path, letter_small):
    # b = none (float32): decoded F F^T is the plain RFF estimate; check against exact kernel
    run(
        letter_small,
        tmp_path / "f.zarr",
        label="label",
        n_features=4096,
        quantizer="none",
        gamma=0.01,
    )
    st = FeatureStore(os.fspath(tmp_path / "f.zarr"))
    F = np.concatenate([f for _, f in st.iter_features(chunk_rows=128)])[:50].astype(np.float64)
    X = letter_matrix(50)
    K = np.exp(-0.01 * ((X[:, None] - X[None]) ** 2).sum(-1))
    # per-entry sd <= sqrt(1.5/m) (Var[2 cos cos] <= 1.5); 6 sd bound over 1275 pairs
    assert np.abs(F @ F.T - K).max() < 6 * np.sqrt(1.5 / 4096)
    N = np.concatenate([f for _, f in st.iter_features(normalized=True)])
    np.testing.assert_allclose(np.linalg.norm(N, axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("ext", ["npy", "parquet", "csv"])
def test_decode_outputs_agree(tmp_path, letter_small, ext):
    run(letter_small, tmp_path / "s.zarr", label="label", n_features=24, bits=3)
    st = FeatureStore(os.fspath(tmp_path / "s.zarr"))
    ref = np.concatenate([f for _, f in st.iter_features()])
    out = tmp_path / f"f.{ext}"
    # about 360-row chunks on 2 threads: two chunks, decoded in parallel, written in order
    decode(os.fspath(tmp_path / "s.zarr"), os.fspath(out), threads=2, memory=1_000_000)
    if ext == "npy":
        got = np.load(out, allow_pickle=False)
    else:
        import pyarrow.csv as pacsv

        t = pq.read_table(out) if ext == "parquet" else pacsv.read_csv(out)
        assert t.column_names[0] == "label"
        got = np.column_stack([t[f"f{j}"].to_numpy() for j in range(24)])
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    with pytest.raises(OutputError):
        decode(os.fspath(tmp_path / "s.zarr"), os.fspath(out))


def test_incomplete_and_foreign_stores_are_refused(tmp_path, letter_small):
    run(letter_small, tmp_path / "s.zarr", n_features=8)
    import zarr

    g = zarr.open_group(os.fspath(tmp_path / "s.zarr"), mode="r+")
    meta = dict(g.attrs["rfcli"])
    g.attrs["rfcli"] = {**meta, "complete": False}
    with pytest.raises(StoreError, match="incomplete"):
        FeatureStore(os.fspath(tmp_path / "s.zarr"))
    g.attrs["rfcli"] = {**meta, "format_version": 99}
    with pytest.raises(StoreError, match="version"):
        FeatureStore(os.fspath(tmp_path / "s.zarr"))
    with pytest.raises(StoreError):
        FeatureStore(os.fspath(tmp_path / "nothing.zarr"))


def test_nan_policies(tmp_path):
    a = np.array([1.0, np.nan, 3.0, 4.0])
    path = write_parquet(tmp_path / "n.parquet", a=a, b=np.ones(4))
    with pytest.raises(InputError, match="row 1: column 'a'"):
        run(path, tmp_path / "x.zarr", n_features=8, gamma=1.0)
    assert run(path, tmp_path / "d.zarr", n_features=8, gamma=1.0, on_nan="drop").n_rows == 3
    assert run(path, tmp_path / "z.zarr", n_features=8, gamma=1.0, on_nan="zero").n_rows == 4


def test_empty_input_and_existing_output(tmp_path):
    path = write_parquet(tmp_path / "e.parquet", a=np.array([], dtype=float))
    with pytest.raises(InputError, match="no rows"):
        run(path, tmp_path / "e.zarr", n_features=8, gamma=1.0)
    assert not (tmp_path / "e.zarr").exists() and not (tmp_path / "e.zarr.partial").exists()
    ok = write_parquet(tmp_path / "ok.parquet", a=np.arange(5.0))
    encode(ok, os.fspath(tmp_path / "ok.zarr"), EncodeSettings(n_features=8, gamma=1.0))
    with pytest.raises(OutputError, match="exists"):
        encode(ok, os.fspath(tmp_path / "ok.zarr"), EncodeSettings(n_features=8, gamma=1.0))


def test_default_output_path_beside_input(tmp_path):
    ok = write_parquet(tmp_path / "data.parquet", a=np.arange(5.0))
    res = encode(ok, settings=EncodeSettings(n_features=8, gamma=1.0))
    assert res.path == os.fspath(tmp_path / "data.rff.zarr")


def test_standardize_statistics_match_numpy(tmp_path, letter_small):
    res = run(
        letter_small,
        tmp_path / "s.zarr",
        label="label",
        n_features=8,
        standardize=True,
        chunk_rows=37,
    )
    X = letter_matrix(600)
    np.testing.assert_allclose(res.encoder.preprocess.mean_, X.mean(0), rtol=1e-12)
    np.testing.assert_allclose(res.encoder.preprocess.scale_, X.std(0), rtol=1e-12)


def test_arccos_maps_quantizer_rules(tmp_path, letter_small):
    r0 = run(letter_small, tmp_path / "a0.zarr", kernel="arccos0", n_features=64)
    assert r0.encoder.quantizer.kind == "binary" and r0.encoder.row_bytes == 8
    r1 = run(letter_small, tmp_path / "a1.zarr", kernel="arccos1", n_features=64, label="label")
    q1 = r1.encoder.quantizer  # the universal Lloyd-Max design for the relu-normal law
    assert (q1.kind, q1.law, q1.bits) == ("lm", "relu-normalized", 2)
    st = FeatureStore(os.fspath(tmp_path / "a1.zarr"))
    np.testing.assert_allclose(
        st.group["row_scale"][:], np.linalg.norm(letter_matrix(600), axis=1), rtol=1e-5
    )
    from rfcli.errors import UsageError

    with pytest.raises(UsageError, match="does not fit"):
        run(letter_small, tmp_path / "bad.zarr", kernel="arccos0", quantizer="lm")


def test_model_of_other_map_is_incompatible(tmp_path, letter_small):
    a = run(letter_small, tmp_path / "a.zarr", n_features=8, seed=1).encoder
    b = run(letter_small, tmp_path / "b.zarr", n_features=8, seed=2).encoder
    with pytest.raises(IncompatibleError, match=a.fingerprint()):
        a.check_same(b)


def test_zarr_input(tmp_path, letter_small):
    import zarr

    X = letter_matrix(600)
    g = zarr.open_group(os.fspath(tmp_path / "in.zarr"), mode="w")
    t = pq.read_table(letter_small)
    for c in t.column_names:
        g.create_array(c, data=t[c].to_numpy())
    run(tmp_path / "in.zarr", tmp_path / "fromzarr.zarr", label="label", n_features=32, gamma=0.1)
    run(letter_small, tmp_path / "fromparquet.zarr", label="label", n_features=32, gamma=0.1)
    # group columns are read in sorted order: compare decoded kernels, not raw codes
    s1 = FeatureStore(os.fspath(tmp_path / "fromzarr.zarr"))
    assert s1.n_rows == len(X) and sorted(s1.encoder.columns) == sorted(f"f{i}" for i in range(16))
    a2 = zarr.create_array(os.fspath(tmp_path / "x2d.zarr"), data=X)
    assert a2.shape == X.shape
    run(tmp_path / "x2d.zarr", tmp_path / "from2d.zarr", n_features=32, gamma=0.1)
    assert FeatureStore(os.fspath(tmp_path / "from2d.zarr")).encoder.columns[0] == "x0"


def test_memory_budget_changes_chunking_not_the_store(tmp_path, letter_small):
    from rfcli.memory import parse_size

    kw = dict(label="label", n_features=128, normalize_rows=True)
    run(letter_small, tmp_path / "a.zarr", **kw)
    res = encode(
        os.fspath(letter_small),
        os.fspath(tmp_path / "b.zarr"),
        EncodeSettings(n_features=128, normalize_rows=True),
        ReadSettings(label="label"),
        memory=parse_size("3M"),  # about 500-row chunks
        threads=2,
    )
    assert res.n_rows == 600
    assert chunk_files_digest(tmp_path / "a.zarr") == chunk_files_digest(tmp_path / "b.zarr")
    assert parse_size("1.5G") == 3 << 29 and parse_size("512k") == 512 << 10
    with pytest.raises(Exception, match="not a size"):
        parse_size("lots")


def test_float32_staging_holds_the_float64_values_rounded():
    """An encoder that computes on float32 reads its chunks as float32: each value is
    rounded once, exactly as the float64 chunk's value would be rounded (64-bit integers
    through float64, as before), so the codes are those of the float64 path."""
    from rfcli.io.readers import Selection, make_chunk

    # 2**54 + 2**30 + 1 rounds up as float32, but to the even float32 through float64
    big = np.array([2**54 + 2**30 + 1, 2**24 + 1, -(2**40) - 3, 7], dtype=np.int64)
    cols = {
        "i64": big,
        "u64": big.astype(np.uint64) & np.uint64(2**62 - 1),
        "i32": np.array([2**24 + 1, -(2**31), 3, 5], dtype=np.int32),
        "f64": np.array([0.1, 1e30, -3.3e-39, np.pi]),
        "f16": np.array([0.1, 2, -3, 65504], dtype=np.float16),
        "f32": np.array([0.1, 2, -3, 4], dtype=np.float32),
    }
    sel = Selection(list(cols), None, [])
    ref = make_chunk(cols, sel, 0, 0, "error", "t").X
    got = make_chunk(cols, sel, 0, 0, "error", "t", np.float32).X
    assert ref.dtype == np.float64 and got.dtype == np.float32
    assert np.array_equal(got, ref.astype(np.float32))
    # a float64 beyond float32's range is refused by name, not encoded as inf
    cols["f64"][1] = 1e39
    with pytest.raises(InputError, match=r"column 'f64' is 1e\+39 \(beyond float32's range\)"):
        make_chunk(cols, sel, 0, 0, "error", "t", np.float32)


def test_float32_and_float64_rows_give_the_same_codes(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(700, 5)).astype(np.float32).astype(np.float64)
    paths = []
    for dt in (np.float64, np.float32):
        cols = {f"x{j}": X[:, j].astype(dt) for j in range(5)}
        src = write_parquet(tmp_path / f"{dt.__name__}.parquet", **cols)
        out = tmp_path / f"{dt.__name__}.zarr"
        res = encode(src, str(out), EncodeSettings(n_features=64, bits=2, gamma=0.5))
        paths.append(out)
    assert res.encoder.input_dtype is np.float32
    assert chunk_files_digest(paths[0]) == chunk_files_digest(paths[1])
    # the float32 staging against the float64 rows the encoder was given before
    a = res.encoder.encode_chunk(X, 0)
    b = res.encoder.encode_chunk(X.astype(np.float32), 0)
    assert np.array_equal(a.packed, b.packed) and np.array_equal(a.norms, b.norms)
