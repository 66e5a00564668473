import os
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"


@pytest.fixture(scope="session")
def letter_train() -> pathlib.Path:
    return SAMPLE / "letter.train.parquet"


@pytest.fixture(scope="session")
def letter_small(tmp_path_factory) -> pathlib.Path:
    """The first 600 rows of letter.train (real data, small)."""
    path = tmp_path_factory.mktemp("data") / "letter600.parquet"
    table = pq.read_table(SAMPLE / "letter.train.parquet").slice(0, 600)
    pq.write_table(table, path, row_group_size=250)
    return path


@pytest.fixture(scope="session")
def letter_small_csv(letter_small, tmp_path_factory) -> pathlib.Path:
    import pyarrow.csv as pacsv

    path = tmp_path_factory.mktemp("data") / "letter600.csv"
    pacsv.write_csv(pq.read_table(letter_small), path)
    return path


def letter_matrix(n: int = 600) -> np.ndarray:
    t = pq.read_table(SAMPLE / "letter.train.parquet").slice(0, n)
    return np.column_stack([t[c].to_numpy() for c in t.column_names if c != "label"]).astype(
        np.float64
    )


def write_parquet(path, **cols) -> str:
    pq.write_table(pa.table(cols), path)
    return os.fspath(path)


def tree_digest(path) -> dict[str, str]:
    """SHA-256 of every file under ``path`` by relative name (whole-store comparisons)."""
    import hashlib

    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = hashlib.sha256(fh.read()).hexdigest()
    return out
