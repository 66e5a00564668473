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


#: the files that take longest (tens of seconds each on 2 cores), run first: pytest-xdist
#: hands whole files to its two workers in collection order (``make test``: --dist
#: loadfile), and a long file handed out last keeps one worker busy while the other idles
HEAVY_FIRST = (
    "tests/test_sklearn.py",
    "tests/test_dask_engine.py",
    "tests/learn/test_gpr_defaults.py",
    "tests/test_object_storage.py",
    "tests/learn/test_gpr_exact_route.py",
    "tests/cli/test_resume.py",
    "tests/test_docs_examples.py",
    "tests/test_jobs_in_memory.py",
)


def pytest_collection_modifyitems(config, items):
    """The HEAVY_FIRST files' tests first, in that order; the rest as collected."""
    order = {config.rootpath / f: i for i, f in enumerate(HEAVY_FIRST)}
    # stable: each file's own order kept
    items[:] = sorted(items, key=lambda item: order.get(item.path, len(order)))
