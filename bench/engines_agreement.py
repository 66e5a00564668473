"""How closely the local and Dask engines agree on one input (docs/dask.md): diamonds'
training rows split into 4 Parquet files, encoded on both engines (stores compared byte
for byte), KRR (alpha by cross-validation) and the SVM-free GP statistics trained on the
store with both engines; relative differences of weights and predictions.

    python bench/engines_agreement.py
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import rfcli  # noqa: E402
from tests.helpers import tree_digest  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def main() -> None:
    from distributed import LocalCluster

    d = tempfile.mkdtemp(prefix="rfcli-engines-")
    t = pq.read_table(os.path.join(DATA, "diamonds.train.parquet"))
    os.makedirs(f"{d}/in")
    q = t.num_rows // 4
    for i in range(4):
        pq.write_table(t.slice(i * q, q if i < 3 else t.num_rows - 3 * q), f"{d}/in/p{i}.parquet")
    enc = rfcli.EncodeSettings(n_features=1024, bits=2, standardize=True, gamma="auto")
    read = rfcli.ReadSettings(label="y")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:  # fmt: skip
        dask = rfcli.DaskSettings(scheduler=cluster.scheduler_address)
        rfcli.encode(f"{d}/in", f"{d}/local.zarr", enc, read)
        rfcli.encode(f"{d}/in", f"{d}/dask.zarr", enc, read, engine="dask", dask=dask)
        same_store = tree_digest(f"{d}/local.zarr") == tree_digest(f"{d}/dask.zarr")
        s = rfcli.TrainSettings(model="krr")
        a = rfcli.train(f"{d}/local.zarr", None, s)
        b = rfcli.train(f"{d}/local.zarr", None, s, engine="dask", dask=dask)
    F = np.concatenate([f for _, f in rfcli.FeatureStore(f"{d}/local.zarr").iter_features()])
    pa_, pb = F @ a.model.W + a.model.b, F @ b.model.W + b.model.b
    rel = lambda x, y: float(np.linalg.norm(x - y) / np.linalg.norm(y))  # noqa: E731
    print(f"rows {t.num_rows}, m 1024, 2 bits, 4 files")
    print(f"stores byte-identical: {same_store}")
    print(f"krr alpha local {a.report['alpha']:.6g} dask {b.report['alpha']:.6g}")
    print(f"krr weights rel. diff {rel(b.model.W, a.model.W):.2e}")
    print(f"krr predictions rel. diff {rel(pb, pa_):.2e}, max abs {np.abs(pb - pa_).max():.2e}")


if __name__ == "__main__":
    main()
