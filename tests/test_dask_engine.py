"""The Dask engine on a LocalCluster of 2 worker processes: encode byte-identical to the
local engine (multi-file Parquet input, a task that fails once), KRR statistics equal to
floating-point reduction order, the same error messages on both engines."""

import os

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("distributed")

from rfcli import EncodeSettings, ReadSettings, encode  # noqa: E402
from rfcli.dask_engine import DaskSettings  # noqa: E402
from rfcli.errors import InputError  # noqa: E402
from rfcli.training import TrainSettings, train  # noqa: E402
from tests.conftest import tree_digest as tree  # noqa: E402
from tests.conftest import write_parquet  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def scheduler():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:  # fmt: skip
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds")
    t = pq.read_table(os.path.join(ROOT, "sample_data", "letter.train.parquet"))
    t = t.append_column("name", t["label"].cast("string"))
    os.makedirs(d / "ds" / "k=1")
    pq.write_table(t.slice(0, 5000), d / "ds" / "k=0.parquet", row_group_size=1200)
    pq.write_table(t.slice(5000), d / "ds" / "k=1" / "part.parquet", row_group_size=2500)
    return str(d / "ds")


SETTINGS = [
    dict(n_features=96, normalize_rows=True, store_chunk_rows=1024),
    dict(n_features=64, standardize=True, quantizer="stoc", bits=3, store_chunk_rows=1024),
    dict(
        kernel="ternary",
        n_features=50,
        normalize_rows=True,
        quantizer="trits",
        store_chunk_rows=2048,
    ),
    # gamma by the median heuristic (merged row sample), kappa (map pass), empirical quantizer
    dict(kernel="positive", n_features=40, standardize=True, store_chunk_rows=1024),
]


@pytest.mark.parametrize(
    "kw", SETTINGS, ids=["lm", "stoc-standardize", "ternary-trits", "positive-empirical"]
)
def test_encode_on_dask_is_byte_identical(tmp_path, dataset, scheduler, kw):
    read = ReadSettings(label="label", ids=["name"])
    a = encode(dataset, str(tmp_path / "a.zarr"), EncodeSettings(**kw), read)
    b = encode(dataset, str(tmp_path / "b.zarr"), EncodeSettings(**kw), read, engine="dask",
               dask=DaskSettings(scheduler=scheduler))  # fmt: skip
    assert a.n_rows == b.n_rows == 12000
    assert tree(tmp_path / "a.zarr") == tree(tmp_path / "b.zarr")


_FAILED = {}


def test_a_task_failing_once_is_retried(tmp_path, dataset, scheduler, monkeypatch):
    from rfcli import dask_engine

    original = dask_engine._encode_task
    marker = tmp_path / "failed-once"

    def flaky(path, sel, encoder, tmp, start, stop, *rest):
        if start > 0 and not os.path.exists(marker):
            open(marker, "w").close()
            raise OSError("worker lost (simulated)")
        return original(path, sel, encoder, tmp, start, stop, *rest)

    monkeypatch.setattr(dask_engine, "_encode_task", flaky)
    kw = SETTINGS[0]
    read = ReadSettings(label="label")
    encode(dataset, str(tmp_path / "a.zarr"), EncodeSettings(**kw), read)
    encode(dataset, str(tmp_path / "b.zarr"), EncodeSettings(**kw), read, engine="dask",
           dask=DaskSettings(scheduler=scheduler))  # fmt: skip
    assert marker.exists()
    assert tree(tmp_path / "a.zarr") == tree(tmp_path / "b.zarr")


def test_krr_on_dask_equals_local(tmp_path, dataset, scheduler):
    store = str(tmp_path / "s.zarr")
    encode(dataset, store, EncodeSettings(**SETTINGS[0]), ReadSettings(label="label"))
    local = train(store, None, TrainSettings(model="krr"))
    dist = train(store, None, TrainSettings(model="krr", engine="dask",
                                            dask=DaskSettings(scheduler=scheduler)))  # fmt: skip
    # tolerance: the sums differ only in floating-point order (about 1e-16 per term, and the
    # solve's condition number at the chosen alpha); 1e-9 relative is far above that noise
    # and far below any real difference
    assert local.report["alpha"] == dist.report["alpha"]
    W1, W2 = local.model.W, dist.model.W
    assert np.abs(W1 - W2).max() <= 1e-9 * np.abs(W1).max()


def test_bad_input_same_message_on_both_engines(tmp_path, scheduler):
    a = np.arange(5000.0)
    a[4321] = np.nan  # found by a worker on the Dask engine
    src = write_parquet(tmp_path / "nan.parquet", a=a, b=np.arange(5000.0))
    msgs = []
    for engine in ("local", "dask"):
        with pytest.raises(InputError) as e:
            encode(str(src), str(tmp_path / f"{engine}.zarr"),
                   EncodeSettings(n_features=8, gamma=1.0), ReadSettings(), engine=engine,
                   dask=DaskSettings(scheduler=scheduler))  # fmt: skip
        msgs.append(str(e.value))
        assert not os.path.exists(tmp_path / f"{engine}.zarr")
    assert msgs[0] == msgs[1] and "row 4321" in msgs[0]
