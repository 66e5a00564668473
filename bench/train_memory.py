"""Peak memory of training as the rows grow 10x (synthetic data, streamed from Parquet).

For n in (100000, 1000000): write a Parquet file (16 Gaussian features, binary label),
encode it (m=512, 2-bit LM), then train KRR and SVM (C=1, 10 iterations) in fresh
processes and record each process's peak RSS (VmHWM).  SVM runs with the packed-code
cache off (--cache-mb 0: every pass re-reads the store) and at its default (256 MiB).
Every input has 10000-row Parquet row groups (a reader holds one row group at a time).
Writes build/bench/train_memory.json and prints a markdown table.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from cli_peak import run_cli  # noqa: E402

OUT = os.path.join(ROOT, "build", "bench", "memory")


def run(*args):
    return run_cli(*args)[1]


def make_data(path, n, seed=0):
    rng = np.random.default_rng(seed)
    with pq.ParquetWriter(
        path,
        pa.schema(
            [*(pa.field(f"x{j}", pa.float64()) for j in range(16)), pa.field("label", pa.int64())]
        ),
    ) as w:
        # the same row-group size for every n: a Parquet reader holds one row group
        for start in range(0, n, 10000):
            k = min(10000, n - start)
            X = rng.normal(size=(k, 16))
            y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(np.int64)
            w.write_table(pa.table({**{f"x{j}": X[:, j] for j in range(16)}, "label": y}))


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = []
    # both sizes are far past the first store chunk (32768 rows at m=512, b=2), so
    # both runs reach the steady state of the chunk pipeline
    for n in (100000, 1000000):
        src = os.path.join(OUT, f"syn{n}.parquet")
        store = os.path.join(OUT, f"syn{n}.zarr")
        if not os.path.exists(src):
            make_data(src, n)
        enc = run(
            "encode", src, "-o", store, "--label", "label", "-m", "512", "-b", "2", "--overwrite"
        )
        krr = run(
            "train",
            store,
            "--model",
            "krr",
            "--alpha",
            "auto",
            "-o",
            os.path.join(OUT, "krr.npz"),
            "--overwrite",
        )
        svm0 = run(
            "train",
            store,
            "--model",
            "svm",
            "-C",
            "1",
            "--max-iter",
            "10",
            "--cache-mb",
            "0",
            "-o",
            os.path.join(OUT, "svm.npz"),
            "--overwrite",
        )
        svm = run(
            "train",
            store,
            "--model",
            "svm",
            "-C",
            "1",
            "--max-iter",
            "10",
            "-o",
            os.path.join(OUT, "svm.npz"),
            "--overwrite",
        )
        rows.append(
            {"rows": n, "encode": enc, "krr": krr, "svm_nocache": svm0, "svm_cache256": svm}
        )
        print(json.dumps(rows[-1]), flush=True)
    with open(os.path.join(ROOT, "build", "bench", "train_memory.json"), "w") as f:
        json.dump(rows, f, indent=2)
    a, b = rows
    print("\n| peak RSS (MiB) | 100k rows | 1M rows | growth |\n|---|---|---|---|")
    for k in ("encode", "krr", "svm_nocache", "svm_cache256"):
        print(f"| {k} | {a[k]:.0f} | {b[k]:.0f} | {100 * (b[k] / a[k] - 1):+.1f}% |")


if __name__ == "__main__":
    main()
