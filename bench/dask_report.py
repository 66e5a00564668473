"""The Dask engine against the local one (issue 8): encode, KRR, SVM (10 L-BFGS iterations
at fixed C), GP regression (RFF statistics from the raw Parquet) and predict, rows/s on a
1M-row synthetic set with the local engine (threads), Dask with 1 worker and with 2
workers (local clusters of single-threaded processes), and an extrapolation to 10 and 100
workers.  Writes build/bench/dask.json and docs/dask-report.md.

    python bench/dask_report.py [--rows 1000000] [-m 512]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from benchmarks import OUT, synthetic  # noqa: E402

from rfcli.engines.dask import DaskSettings  # noqa: E402
from rfcli.jobs.encode import EncodeSettings, ReadSettings, encode  # noqa: E402
from rfcli.jobs.predict import predict  # noqa: E402
from rfcli.jobs.train import TrainSettings, train  # noqa: E402
from rfcli.jobs.train_gpr import GPRSettings, train_gpr  # noqa: E402

DOC = os.path.join(ROOT, "docs", "dask-report.md")


def cluster(workers):
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                        dashboard_address=None)  # fmt: skip


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc-only", action="store_true", help="rewrite the doc from dask.json")
    ap.add_argument("--task-code", nargs=2, metavar=("SRC", "STORE"),
                    help="(internal) time the encode tasks' code without Dask")  # fmt: skip
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("-m", type=int, default=512)
    args = ap.parse_args()
    if args.doc_only:
        with open(os.path.join(OUT, "dask.json")) as f:
            return write_doc(json.load(f))
    if args.task_code:
        return print(json.dumps(_task_code(*args.task_code)))
    n, m = args.rows, args.m
    src = synthetic(os.path.join(OUT, f"scale-{n}.parquet"), n, 16, seed=1,
                    task="classification")  # fmt: skip
    work = tempfile.mkdtemp(prefix="rfcli-dask-")
    es = EncodeSettings(n_features=m, bits=2, normalize_rows=True, gamma=1.0)
    read = ReadSettings(label="y")
    rows = []
    try:
        ref = os.path.join(work, "local.zarr")
        encode(src, ref, es, read, threads=2)  # warm-up (imports, page cache): not timed
        local = _learners(src, ref, work, es, read, None, "local")
        rows.append({"engine": "local (2 threads)", "workers": 0, **local})
        print(json.dumps(rows[-1]), flush=True)
        # the same with one thread (BLAS too), as each Dask worker runs: Dask's own overhead
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            one_thread = _learners(src, os.path.join(work, "local1.zarr"), work, es, read,
                                   None, "local1", ref=ref, threads=1)  # fmt: skip
        rows.append({"engine": "local (1 thread)", "workers": 0, **one_thread})
        print(json.dumps(rows[-1]), flush=True)
        # where Dask's overhead goes: the encode tasks' code run in a plain process, with
        # the allocator setting Dask gives its workers and without
        task_code = {
            name: _task_code_in_subprocess(src, ref, env)
            for name, env in (("plain", {}), ("dask_malloc", {"MALLOC_TRIM_THRESHOLD_": "65536"}))
        }
        print(json.dumps(task_code), flush=True)
        for w in (1, 2):
            with cluster(w) as c:
                ds = DaskSettings(scheduler=c.scheduler_address)
                out = os.path.join(work, f"dask{w}.zarr")
                r = _learners(src, out, work, es, read, ds, str(w), ref=ref)
            r["identical_store"] = _same(ref, out)
            r["identical_predictions"] = _same_file(
                os.path.join(work, "pred-local.parquet"), os.path.join(work, f"pred-{w}.parquet")
            )
            for key in ("svm_objective", "gpr_lml"):
                r[key + "_rel_diff"] = abs(r[key] / local[key] - 1)
            rows.append({"engine": f"dask, {w} worker(s)", "workers": w, **r})
            print(json.dumps(rows[-1]), flush=True)
            shutil.rmtree(out, ignore_errors=True)
        store_bytes = sum(
            os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ref) for f in fs
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res = {"rows": n, "m": m, "store_bytes": store_bytes, "runs": rows, "task_code": task_code}
    with open(os.path.join(OUT, "dask.json"), "w") as f:
        json.dump(res, f, indent=1)
    write_doc(res)


def _task_code(src, store) -> float:
    """Seconds for the Dask encode tasks' code (every 4-store-chunk range in turn) in this
    process, no Dask: reads its rows from the Parquet input, encodes, writes its chunks."""
    from rfcli.engines import dask as dask_engine
    from rfcli.io.readers import iter_chunks, open_source, select_columns
    from rfcli.io.store import FeatureStore
    from rfcli.jobs.encode import new_writer

    enc = FeatureStore(store).encoder
    source = open_source(src)
    sel = select_columns(source, None, "y", [])
    n = source.num_rows
    out = os.path.join(os.path.dirname(store), "task-code.zarr")
    es = EncodeSettings()
    w = new_writer(out, enc, sel, src, True, "bench", es, None)
    w.preallocate(n, next(iter_chunks(source, sel, 16, "error")), None)
    span = w.chunk_rows * dask_engine.CHUNKS_PER_TASK
    t0 = time.perf_counter()
    for a in range(0, n, span):
        dask_engine._encode_task(src, sel, enc, w.tmp, a, min(a + span, n), "error", 8192)
    secs = time.perf_counter() - t0
    w.abort()
    return secs


def _task_code_in_subprocess(src, store, env) -> float:
    import subprocess

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **env}
    r = subprocess.run([sys.executable, __file__, "--task-code", src, store], env=env,
                       capture_output=True, text=True, check=True)  # fmt: skip
    return float(r.stdout.strip().splitlines()[-1])


def _learners(src, out, work, es, read, ds, tag, ref=None, threads=2):
    """Timings of every job on one engine (``ds`` None: local).  Learners read ``ref`` (the
    local engine's store) so that all engines train on the same bytes."""
    kw = {} if ds is None else {"engine": "dask", "dask": ds}
    ref = ref or out
    r = {}
    t0 = time.perf_counter()
    encode(src, out, es, read, overwrite=True, **({"threads": threads} if ds is None else kw))
    r["encode_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    train(ref, None, TrainSettings(model="krr", alpha=1e-3), **kw)
    r["krr_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = train(ref, None, TrainSettings(model="svm", C=1.0, max_iter=10), **kw)
    r["svm_s"] = time.perf_counter() - t0
    r["svm_passes"], r["svm_objective"] = res.report["passes"], res.report["objective"]
    t0 = time.perf_counter()
    gs = GPRSettings(features="rff", n_features=256, learn=False)
    rep = train_gpr(src, None, gs, ReadSettings(label="y"), **kw).report
    r["gpr_s"] = time.perf_counter() - t0
    r["gpr_lml"] = rep["log_marginal_likelihood"]
    model = os.path.join(work, "krr.npz")
    if ds is None:
        train(ref, model, TrainSettings(model="krr", alpha=1e-3), overwrite=True)
    t0 = time.perf_counter()
    predict(model, ref, os.path.join(work, f"pred-{tag}.parquet"), overwrite=True, **kw)
    r["predict_s"] = time.perf_counter() - t0
    return r


def _same_file(a, b) -> bool:
    return open(a, "rb").read() == open(b, "rb").read()


def _same(a, b):
    import hashlib

    def tree(p):
        return {
            os.path.relpath(os.path.join(r, f), p): hashlib.sha256(
                open(os.path.join(r, f), "rb").read()
            ).hexdigest()
            for r, _, fs in os.walk(p)
            for f in fs
        }

    return tree(a) == tree(b)


def write_doc(res):
    n, runs = res["rows"], res["runs"]
    local = runs[0]
    local1 = next((r for r in runs if r["engine"] == "local (1 thread)"), None)
    one = next(r for r in runs if r["workers"] == 1)
    two = next(r for r in runs if r["workers"] == 2)
    L = [
        "# Dask engine vs local engine",
        "",
        f"Generated by `python bench/dask_report.py`: {n:,} synthetic rows (d = 16), "
        f"m = {res['m']}, 2-bit LM, unit rows; the development machine has 2 cores, so the",
        "2-worker cluster and the local engine use the same hardware. Times include the",
        "fitting passes (gamma is fixed here), Dask's scheduling and, for Dask, starting the",
        "tasks (not the cluster).",
        "",
        "| engine | encode s | rows/s | KRR s | rows/s | SVM s (passes) | rows x passes/s "
        "| GPR s | rows/s | predict s | rows/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        L.append(
            f"| {r['engine']} | {r['encode_s']:.1f} | {n / r['encode_s']:,.0f} | "
            f"{r['krr_s']:.1f} | {n / r['krr_s']:,.0f} | {r['svm_s']:.1f} ({r['svm_passes']}) | "
            f"{n * r['svm_passes'] / r['svm_s']:,.0f} | {r['gpr_s']:.1f} | "
            f"{n / r['gpr_s']:,.0f} | {r['predict_s']:.1f} | {n / r['predict_s']:,.0f} |"
        )
    L += [
        "",
        "Same results: "
        + "; ".join(
            f"{r['engine']}: store identical {r['identical_store']}, predictions file "
            f"identical {r['identical_predictions']}, SVM objective rel. diff "
            f"{r['svm_objective_rel_diff']:.1e}, GPR log marginal likelihood rel. diff "
            f"{r['gpr_lml_rel_diff']:.1e}"
            for r in runs
            if r["workers"]
        )
        + ".",
    ]
    per_worker = n / one["encode_s"]
    write_mb = res["store_bytes"] / one["encode_s"] / 1e6
    L += [
        "",
        f"* Dask with 1 worker against the local engine: encode "
        f"{one['encode_s'] / local['encode_s']:.2f}x the time (the local engine uses 2 threads; "
        f"the worker 1), KRR {one['krr_s'] / local['krr_s']:.2f}x, SVM "
        f"{one['svm_s'] / local['svm_s']:.2f}x, GPR {one['gpr_s'] / local['gpr_s']:.2f}x, "
        f"predict {one['predict_s'] / local['predict_s']:.2f}x.",
        *(
            [
                "* Dask's own overhead, 1 worker against the local engine on 1 thread (BLAS "
                "limited to 1 thread by threadpoolctl, as in Dask's workers): encode "
                f"{one['encode_s'] / local1['encode_s']:.2f}x, KRR "
                f"{one['krr_s'] / local1['krr_s']:.2f}x, SVM {one['svm_s'] / local1['svm_s']:.2f}x, "
                f"GPR {one['gpr_s'] / local1['gpr_s']:.2f}x, predict "
                f"{one['predict_s'] / local1['predict_s']:.2f}x.",
            ]
            if local1
            else []
        ),
        *(
            [
                "* Where the encode overhead goes: the tasks' own code (each opens the Parquet "
                "file and the store, reads its row groups, writes its chunks), run in a plain "
                "process with 1 thread, takes "
                f"{res['task_code']['plain']:.1f} s against the local engine's "
                f"{local1['encode_s']:.1f} s; with the allocator setting Dask gives its workers "
                "(MALLOC_TRIM_THRESHOLD_=65536, which returns freed memory to the system at once, "
                f"so every large temporary array is faulted in again) {res['task_code']['dask_malloc']:.1f} s "
                f"against the worker's {one['encode_s']:.1f} s: the allocator setting, not the "
                "scheduling, makes most of the difference (overriding it for rfcli's own local "
                "cluster gained less than this machine's run-to-run noise, so it is left as Dask "
                "sets it).",
            ]
            if local1 and "task_code" in res
            else []
        ),
        f"* 2 workers against 1: encode {one['encode_s'] / two['encode_s']:.2f}x faster, KRR "
        f"{one['krr_s'] / two['krr_s']:.2f}x, SVM {one['svm_s'] / two['svm_s']:.2f}x, GPR "
        f"{one['gpr_s'] / two['gpr_s']:.2f}x, predict {one['predict_s'] / two['predict_s']:.2f}x.",
        "",
        "On paper, for more machines: each worker encodes about "
        f"{per_worker:,.0f} rows/s and writes {write_mb:.1f} MB/s of compressed store here;",
        "tasks are independent (each owns whole store chunks), so throughput scales with",
        "workers until the shared store's write bandwidth or the input's read bandwidth",
        "saturates. Assuming one such worker per core, 10 workers would encode about "
        f"{10 * per_worker:,.0f} rows/s ({10 * write_mb:.0f} MB/s of writes) and 100 workers "
        f"about {100 * per_worker:,.0f} rows/s ({100 * write_mb:.0f} MB/s) — within a parallel "
        "file system's or an object store's aggregate bandwidth, beyond a single NFS server's",
        "(~1 GB/s). The fitting passes scale the same way (per-range partial statistics), and",
        "the client's merge is O(ranges x d). KRR's per-task statistics are m x m float64",
        f"({8 * res['m'] ** 2 / 1e6:.1f} MB at m = {res['m']}); the tree reduction moves "
        "log2(tasks) of them per path, negligible next to the data pass at these sizes.",
        "",
        "The SVM is the one learner with many passes (one per L-BFGS function evaluation). A "
        f"worker processes about {one['svm_passes'] * n / one['svm_s']:,.0f} rows per second "
        "per pass here (packed codes cached in its memory), so with W workers a pass over N "
        "rows takes about N / (W x that rate) plus a fixed cost: submitting one task per "
        "slice and a log2(slices)-deep tree of gradient sums (m x k float64: "
        f"{8 * res['m'] / 1e3:.0f} KB for a binary problem at m = {res['m']}), a few "
        "milliseconds per level on a LAN. At this data size 10 workers would make a pass in "
        f"about {n / (10 * one['svm_passes'] * n / one['svm_s']) * 1e3:.0f} ms and 100 "
        f"workers in about {n / (100 * one['svm_passes'] * n / one['svm_s']) * 1e3:.0f} ms, "
        "where the fixed cost is no longer small: the SVM gains from more workers while each "
        "holds at least a few hundred thousand rows.",
        "",
    ]
    with open(DOC, "w") as f:
        f.write("\n".join(L))


if __name__ == "__main__":
    main()
