"""Stores, models and Parquet inputs at fsspec URLs: ``memory://`` (in-process), ``file://``
and ``s3://`` against a local S3 endpoint (moto's server), on both engines.  A store written
to a URL is byte-identical, object by object, to the one written on local disk."""

import hashlib
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from rfcli import EncodeSettings, ReadSettings, encode
from rfcli.errors import OutputError, StoreError, UsageError
from rfcli.io.store import FeatureStore
from rfcli.jobs.evaluate import evaluate
from rfcli.jobs.predict import predict
from rfcli.jobs.train import TrainSettings, train
from tests.helpers import LETTER as LETTER_PATH
from tests.helpers import ridge_engines_tolerance, tree_digest

LETTER = os.fspath(LETTER_PATH)
SETTINGS = dict(n_features=48, standardize=True, store_chunk_rows=2048)


def url_digest(url: str) -> dict[str, str]:
    from fsspec.core import url_to_fs

    fs, root = url_to_fs(url)
    root = fs._strip_protocol(root).rstrip("/") + "/"
    return {p[len(root) :]: hashlib.sha256(fs.cat_file(p)).hexdigest() for p in fs.find(root)}


@pytest.fixture(scope="module")
def local_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("lake")
    os.makedirs(d / "lake")
    import pyarrow.parquet as pq

    t = pq.read_table(LETTER)
    pq.write_table(t.slice(0, 7000), d / "lake" / "p0.parquet", row_group_size=2000)
    pq.write_table(t.slice(7000), d / "lake" / "p1.parquet", row_group_size=2000)
    out = str(d / "s.zarr")
    encode(str(d / "lake"), out, EncodeSettings(**SETTINGS), ReadSettings(label="label"))
    return str(d / "lake"), out


def test_memory_urls_store_model_predict(local_store, tmp_path):
    fsspec = pytest.importorskip("fsspec")
    lake, disk_store = local_store
    fs = fsspec.filesystem("memory")
    for name in ("p0.parquet", "p1.parquet"):
        fs.pipe(f"/lake/{name}", open(os.path.join(lake, name), "rb").read())
    store = "memory://t1/s.zarr"
    encode("memory://lake/", store, EncodeSettings(**SETTINGS), ReadSettings(label="label"))
    assert url_digest(store) == tree_digest(disk_store)
    with pytest.raises(OutputError, match="already exists"):
        encode("memory://lake/", store, EncodeSettings(**SETTINGS), ReadSettings(label="label"))
    train(store, "memory://t1/m.npz", TrainSettings(model="krr", alpha=1.0))
    train(disk_store, str(tmp_path / "m.npz"), TrainSettings(model="krr", alpha=1.0))
    ev_url, ev_disk = evaluate("memory://t1/m.npz", store), evaluate(str(tmp_path / "m.npz"),
                                                                     disk_store)  # fmt: skip
    assert ev_url["accuracy"] == ev_disk["accuracy"]
    predict("memory://t1/m.npz", store, str(tmp_path / "p.csv"))
    assert sum(1 for _ in open(tmp_path / "p.csv")) == 12001


def test_a_url_store_with_a_missing_chunk_is_refused():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/t2/in.parquet", open(LETTER, "rb").read())
    encode("memory://t2/in.parquet", "memory://t2/s.zarr", EncodeSettings(**SETTINGS),
           ReadSettings(label="label"))  # fmt: skip
    fs.rm("/t2/s.zarr/codes/c/1/0")
    store = FeatureStore("memory://t2/s.zarr")
    with pytest.raises(StoreError, match="codes chunk 1 .* is missing"):
        for _ in store.iter_encoded():
            pass


def test_file_urls_are_local_paths(local_store, tmp_path):
    lake, disk_store = local_store
    out = tmp_path / "f.zarr"
    encode(f"file://{lake}", f"file://{out}", EncodeSettings(**SETTINGS),
           ReadSettings(label="label"))  # fmt: skip
    assert tree_digest(out) == tree_digest(disk_store)
    train(f"file://{out}", f"file://{tmp_path / 'm.npz'}", TrainSettings(model="krr", alpha=1.0))
    assert (tmp_path / "m.npz").is_file()


def test_a_protocol_without_its_package_is_one_clear_line(tmp_path):
    pytest.importorskip("fsspec")
    try:
        import gcsfs  # noqa: F401

        pytest.skip("gcsfs is installed")
    except ImportError:
        pass
    with pytest.raises(UsageError, match=r"gs:// URLs need gcsfs \(pip install gcsfs\)"):
        encode(LETTER, "gs://bucket/s.zarr", EncodeSettings(n_features=8))


# -- S3 (a local moto server) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3(local_store):
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # read by s3fs/botocore here and in Dask workers started later
    try:
        import s3fs

        for _ in range(100):
            try:
                fs = s3fs.S3FileSystem(skip_instance_cache=True)
                fs.mkdir("bkt")
                break
            except Exception:
                time.sleep(0.1)
        else:
            pytest.skip("the local S3 server did not start")
        lake, _ = local_store
        for name in ("p0.parquet", "p1.parquet"):
            fs.put(os.path.join(lake, name), f"bkt/lake/{name}")
        yield fs
    finally:
        server.kill()
        server.wait()
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def test_s3_encode_train_predict(s3, local_store, tmp_path):
    _, disk_store = local_store
    store = "s3://bkt/local/s.zarr"
    encode("s3://bkt/lake/", store, EncodeSettings(**SETTINGS), ReadSettings(label="label"))
    assert url_digest(store) == tree_digest(disk_store)
    # --overwrite replaces the store in place (object storage has no rename)
    encode("s3://bkt/lake/", store, EncodeSettings(**SETTINGS), ReadSettings(label="label"),
           overwrite=True)  # fmt: skip
    assert url_digest(store) == tree_digest(disk_store)
    res = train(store, "s3://bkt/models/krr.npz", TrainSettings(model="krr", alpha=1.0))
    ref = train(disk_store, None, TrainSettings(model="krr", alpha=1.0))
    np.testing.assert_array_equal(res.model.W, ref.model.W)
    n = predict("s3://bkt/models/krr.npz", "s3://bkt/lake/", str(tmp_path / "p.parquet"))
    assert n == 12000


def _set_env(env):
    """(On a Dask worker) set or, for None, remove environment variables."""
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def test_s3_on_dask(s3, local_store, scheduler):
    from rfcli.engines.dask import DaskSettings

    _, disk_store = local_store
    store = "s3://bkt/dask/s.zarr"
    from distributed import Client

    env = {k: os.environ[k] for k in os.environ if k.startswith("AWS_")}
    with Client(scheduler) as client:  # the session's workers started before the S3 server
        client.run(_set_env, env)
        try:
            dask = DaskSettings(scheduler=scheduler)
            encode("s3://bkt/lake/", store, EncodeSettings(**SETTINGS),
                   ReadSettings(label="label"), engine="dask", dask=dask)  # fmt: skip
            assert url_digest(store) == tree_digest(disk_store)
            dist = train(store, None, TrainSettings(model="krr", alpha=1.0), engine="dask",
                         dask=dask)  # fmt: skip
        finally:
            client.run(_set_env, {k: None for k in env})
    ref = train(disk_store, None, TrainSettings(model="krr", alpha=1.0))
    tol = ridge_engines_tolerance(disk_store, ref.model.W, 1.0)
    assert np.linalg.norm(dist.model.W - ref.model.W) <= tol


def test_verify_a_url_store():
    fsspec = pytest.importorskip("fsspec")
    from rfcli.io.store.verify import verify_store

    fs = fsspec.filesystem("memory")
    fs.pipe("/t3/in.parquet", open(LETTER, "rb").read())
    store = "memory://t3/s.zarr"
    encode("memory://t3/in.parquet", store, EncodeSettings(**SETTINGS), ReadSettings(label="label"))
    rep = verify_store(store)
    assert rep.ok and rep.rows == 12000 and rep.chunks == 6
    blob = bytearray(fs.cat_file("/t3/s.zarr/codes/c/2/0"))
    blob[len(blob) // 2] ^= 0xFF
    fs.pipe("/t3/s.zarr/codes/c/2/0", bytes(blob))
    fs.rm("/t3/s.zarr/norms/c/4")
    probs = verify_store(store).problems
    assert any("codes: chunk 2" in p and "decoded" in p for p in probs), probs
    assert any("norms: chunk 4" in p and "missing" in p for p in probs), probs


def test_unreachable_object_storage_is_one_line():
    """Credentials or endpoint problems of a URL's backend: exit 2 and one line, not an
    internal error."""
    pytest.importorskip("s3fs")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_MAX_ATTEMPTS": "1"}  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "rfcli", "inspect", "s3://bucket/s.zarr"],
                       env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("rfcli: error: object storage: EndpointConnectionError")
    assert "Traceback" not in r.stderr
