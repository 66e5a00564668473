"""rfcli.io.arrays.ArraySource, the in-memory input of rfcli.sklearn: the Source interface of
rfcli.io.sources for NumPy arrays, pandas DataFrames and pyarrow Tables, read exactly as the
same rows in a Parquet file (chunks, row ranges, nulls, NaN messages, the fitted encoder)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rfcli.encoder_fit import fit_encoder_on
from rfcli.engines.local import LocalEngine
from rfcli.errors import InputError, ParameterTypeError
from rfcli.io.arrays import ArraySource, is_array_input
from rfcli.io.readers import ReadSettings, iter_chunks, open_source, read_range, select_columns
from rfcli.io.sources import ParquetSource
from rfcli.jobs.encode import EncodeSettings
from rfcli.learn.data import RawData
from tests.helpers import LETTER


@pytest.fixture(scope="module")
def table():
    return pq.read_table(LETTER).slice(0, 3000)


@pytest.fixture(scope="module")
def parquet(table, tmp_path_factory):
    path = tmp_path_factory.mktemp("arr") / "letter3000.parquet"
    pq.write_table(table, path, row_group_size=700)
    return str(path)


def chunks(source, label="label", rows=1024, **kw):
    sel = select_columns(source, label=label)
    return [(c.row0, c.X, c.label) for c in iter_chunks(source, sel, rows, **kw)]


def same_chunks(a, b) -> bool:
    return len(a) == len(b) and all(
        ra == rb and np.array_equal(xa, xb) and np.array_equal(ya, yb)
        for (ra, xa, ya), (rb, xb, yb) in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("rows", [1, 700, 1024, 5000])
def test_table_reads_like_its_parquet_file(table, parquet, rows):
    """Chunks (float64 C-ordered features, labels, row indices) and row ranges equal the
    Parquet source's for the same rows, whatever the chunk size."""
    src, ref = ArraySource(table), ParquetSource(parquet)
    assert src.names == ref.names and src.numeric == ref.numeric and src.num_rows == 3000
    assert same_chunks(chunks(src, rows=rows), chunks(ref, rows=rows))
    sel = select_columns(ref, label="label")
    got = list(read_range(src, sel, 650, 2050, 300))
    want = list(read_range(ref, sel, 650, 2050, 300))
    assert all(
        np.array_equal(g.X, w.X) and g.row0 == w.row0 for g, w in zip(got, want, strict=True)
    )


def test_numpy_pandas_and_mapping_inputs(table):
    pd = pytest.importorskip("pandas")
    X = np.column_stack([table[c].to_numpy() for c in table.column_names if c != "label"])
    y = table["label"].to_numpy()
    ref = chunks(ArraySource(table))
    named = ArraySource(X, names=table.column_names[:-1], extra={"label": y})
    assert same_chunks(chunks(named), ref)
    assert ArraySource(X).names == [f"x{j}" for j in range(16)]
    # Fortran order (what validate_data makes of a DataFrame) and float32 read the same
    f32 = ArraySource(np.asfortranarray(X.astype(np.float32)), names=table.column_names[:-1],
                      extra={"label": y})  # fmt: skip
    assert same_chunks(chunks(f32), ref)
    assert same_chunks(chunks(ArraySource(table.to_pandas())), ref)
    mapping = dict(zip(table.column_names, table.columns, strict=True))
    assert same_chunks(chunks(ArraySource(mapping)), ref)
    df = pd.DataFrame({"a": [1.5, 2.5, 3.5], "b": pd.array([1, None, 3], dtype="Int64"),
                       "s": ["x", None, "z"]})  # fmt: skip
    src = ArraySource(df)
    assert src.numeric == {"a": True, "b": True, "s": False}
    cols = src.read_rows(["b", "s"], 0, 3)
    assert np.isnan(cols["b"][1]) and cols["b"][2] == 3.0 and cols["s"].tolist() == ["x", None, "z"]


def test_nulls_and_nan_policy_match_parquet(tmp_path):
    """A null in a nullable column reads as NaN; on_nan error names the same global row,
    drop and zero give the same chunks."""
    t = pa.table({"a": pa.array([1.0, 2.0, None, 4.0, 5.0]), "b": pa.array([1, 2, 3, None, 5]),
                  "y": pa.array([0, 1, 0, 1, 0])})  # fmt: skip
    pq.write_table(t, tmp_path / "n.parquet")
    src, ref = ArraySource(t), ParquetSource(str(tmp_path / "n.parquet"))
    msgs = []
    for s in (src, ref):
        with pytest.raises(InputError, match="row 2: column 'a' is nan") as e:
            chunks(s, label="y", rows=2)
        msgs.append(str(e.value).split(":", 1)[1])
    assert msgs[0] == msgs[1]
    for policy in ("drop", "zero"):
        assert same_chunks(chunks(src, "y", 2, on_nan=policy), chunks(ref, "y", 2, on_nan=policy))


def test_encoder_and_passes_equal_the_files(table, parquet):
    """The local engine fits the same encoder on the in-memory rows as on the file, and
    RawData's batches (encoded on the fly) are the same arrays."""
    settings = EncodeSettings(n_features=64, standardize=True, gamma="search")
    read = ReadSettings(label="label", chunk_rows=1000)
    encs = []
    for src in (ArraySource(table), open_source(parquet)):
        sel = select_columns(src, label="label")
        encs.append(fit_encoder_on(LocalEngine(threads=1), src, sel, settings, read))
    assert encs[0].fingerprint() == encs[1].fingerprint()
    a = RawData(ArraySource(table), select_columns(ArraySource(table), encs[0].columns, "label"),
                encs[0], chunk_rows=800)  # fmt: skip
    b = RawData.open(parquet, encs[0], False, "label", chunk_rows=800)
    for x, z in zip(a.batches(), b.batches(), strict=True):
        assert x.row0 == z.row0 and np.array_equal(x.F, z.F) and np.array_equal(x.y, z.y)


def test_refusals():
    X = np.zeros((4, 2))
    with pytest.raises(InputError, match="must be 2-D"):
        ArraySource(np.zeros(4))
    with pytest.raises(InputError, match="3 column names given for 2 columns"):
        ArraySource(X, names=["a", "b", "c"])
    with pytest.raises(InputError, match="appears twice"):
        ArraySource(X, names=["a", "a"])
    with pytest.raises(InputError, match="expected \\(4,\\)"):
        ArraySource(X, extra={"y": np.zeros(3)})
    with pytest.raises(ParameterTypeError, match="in-memory data must be"):
        ArraySource([[1.0, 2.0]])
    assert is_array_input(X) and is_array_input(pa.table({"a": [1]})) and not is_array_input("x")
