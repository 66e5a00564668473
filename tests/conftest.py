"""Fixtures shared by the tests; the shared plain helpers are in tests/helpers.py."""

import pathlib

import pyarrow.parquet as pq
import pytest

from tests.helpers import LETTER


@pytest.fixture(scope="session")
def letter_train() -> pathlib.Path:
    return LETTER


@pytest.fixture(scope="session")
def letter_small(tmp_path_factory) -> pathlib.Path:
    """The first 600 rows of letter.train (real data, small)."""
    path = tmp_path_factory.mktemp("data") / "letter600.parquet"
    table = pq.read_table(LETTER).slice(0, 600)
    pq.write_table(table, path, row_group_size=250)
    return path


@pytest.fixture(scope="session")
def letter_small_csv(letter_small, tmp_path_factory) -> pathlib.Path:
    import pyarrow.csv as pacsv

    path = tmp_path_factory.mktemp("data") / "letter600.csv"
    pacsv.write_csv(pq.read_table(letter_small), path)
    return path


@pytest.fixture(scope="session")
def scheduler():
    """One Dask LocalCluster (2 worker processes, one thread each) for every test that runs
    jobs on Dask; tests that kill workers start their own."""
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:  # fmt: skip
        yield cluster.scheduler_address
