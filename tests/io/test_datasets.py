"""Partitioned Parquet inputs: a directory or glob of files reads as one table in path
order, encodes byte-identically to the single file, and reads any row range alone."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rfcli.errors import InputError
from rfcli.io.sources import ParquetSource
from tests.helpers import chunk_files_digest, run


@pytest.fixture
def dataset(tmp_path, letter_small):
    t = pq.read_table(letter_small)
    for part in ("k=a", "k=b"):
        os.makedirs(tmp_path / "ds" / part)
    pq.write_table(t.slice(0, 250), tmp_path / "ds/k=a/000.parquet", row_group_size=100)
    pq.write_table(t.slice(250, 150), tmp_path / "ds/k=a/001.parquet", row_group_size=64)
    pq.write_table(t.slice(400), tmp_path / "ds/k=b/000.parquet")
    (tmp_path / "ds/_SUCCESS").write_text("")
    return tmp_path / "ds", t


@pytest.mark.parametrize("form", ["dir", "glob"])
def test_dataset_encodes_like_the_single_file(tmp_path, letter_small, dataset, form):
    ds, _ = dataset
    src = ds if form == "dir" else f"{ds}/*/*.parquet"
    a = run(letter_small, tmp_path / "a.zarr", label="label", n_features=64)
    b = run(src, tmp_path / "b.zarr", label="label", n_features=64, chunk_rows=77)
    assert a.encoder.fingerprint() == b.encoder.fingerprint()
    assert chunk_files_digest(tmp_path / "a.zarr") == chunk_files_digest(tmp_path / "b.zarr")


def test_row_ranges_and_row_groups(dataset):
    ds, t = dataset
    src = ParquetSource(str(ds))
    assert src.num_rows == 600 and len(src.files) == 3
    assert [g[2] for g in src.row_groups] == [0, 100, 200, 250, 314, 378, 400]
    for start, stop in ((0, 600), (99, 101), (240, 420), (599, 600), (300, 300)):
        got = src.read_rows(["f0", "label"], start, stop)
        np.testing.assert_array_equal(got["f0"], t["f0"].to_numpy()[start:stop])
        np.testing.assert_array_equal(got["label"], t["label"].to_numpy()[start:stop])


def test_dataset_errors(tmp_path, dataset):
    ds, t = dataset
    pq.write_table(pa.table({"other": [1.0]}), ds / "k=b" / "bad.parquet")
    with pytest.raises(InputError, match="differ"):
        ParquetSource(str(ds))
    os.makedirs(tmp_path / "empty")
    with pytest.raises(InputError, match="no Parquet files"):
        ParquetSource(str(tmp_path / "empty"))
    with pytest.raises(InputError, match="no Parquet files"):
        ParquetSource(str(tmp_path / "nothing-*.parquet"))
