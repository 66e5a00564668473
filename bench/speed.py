"""Speed against what a user would otherwise run, measured honestly: the baselines compute
in the dtype rfcli computes in (float32), select hyperparameters the way scikit-learn's
users do (GridSearchCV, 5 folds, refit), and both sides report wall and CPU seconds and
peak memory, in the same run on the same machine.

Sections (each returns rows for docs/benchmarks.md, see benchmarks.py):

* start-up: ``rfcli --version`` / ``--help`` / a usage error against ``python -c "import numpy"``;
* encode: the CLI as a process end to end (Parquet in, store out, start-up included)
  against ``RBFSampler(float32).fit(X).transform(X)`` on the in-memory array, and the
  floor: each unavoidable step of the encode alone on the same data;
* KRR: ``rfcli train --model krr`` from a 2-bit store against ``Ridge(solver="cholesky")``
  on the same features as a float32 array in memory (fit alone);
* model selection: ``rfcli train`` with its default selection against
  ``GridSearchCV(LinearSVC(dual=True) / Ridge, grid, cv=5)`` on the decoded features.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cli_peak import run_cli  # noqa: E402

C_GRID = [0.01, 0.1, 1, 10, 100]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed_process(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of a command in a fresh process."""
    c0, t0 = _children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if p.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return wall, cpu, p.stdout


def cli(*args) -> dict:
    """``rfcli -q ARGS`` in a fresh process: wall and CPU seconds, peak RSS."""
    c0 = _children_cpu()
    wall, peak = run_cli(*args)
    return {"wall": wall, "cpu": _children_cpu() - c0, "peak_mib": peak}


def rfcli_bin() -> str:
    return os.path.join(os.path.dirname(sys.executable), "rfcli")


# -- start-up -----------------------------------------------------------------------------
def startup_section(reps: int = 7) -> dict:
    """Best of ``reps`` fresh processes each."""
    cases = {
        "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
        "rfcli --version": [rfcli_bin(), "--version"],
        "rfcli --help": [rfcli_bin(), "--help"],
        "rfcli train --bogus (usage error)": [rfcli_bin(), "train", "--bogus"],
        "rfcli encode --help": [rfcli_bin(), "encode", "--help"],
    }
    out = {}
    for name, cmd in cases.items():
        out[name] = min(timed_process(cmd)[0] for _ in range(reps))
    print(json.dumps(out), flush=True)
    return out


# -- encode -------------------------------------------------------------------------------
_RBF = """
import json, sys, time, numpy as np, pyarrow.parquet as pq
from sklearn.kernel_approximation import RBFSampler
path, label, m, gamma, dtype = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
t = pq.read_table(path)
X = np.column_stack([t[c].to_numpy() for c in t.column_names if c != label]).astype(dtype)
del t
def run():
    c0, t0 = time.process_time(), time.perf_counter()
    F = RBFSampler(n_components=m, gamma=gamma, random_state=0).fit(X).transform(X)
    assert F.dtype == X.dtype
    return time.perf_counter() - t0, time.process_time() - c0
first = run()
repeats = [run() for _ in range(3)]
warm = min(repeats)
print(json.dumps({"first_wall": first[0], "first_cpu": first[1], "warm_wall": warm[0],
                  "warm_cpu": warm[1], "repeats_wall": sum(r[0] for r in repeats)}))
"""


def rbf_process(path: str, label: str, m: int, gamma: float, dtype: str) -> dict:
    """One fresh process: RBFSampler's first call (what a script pays: its output's pages
    are touched for the first time) and the best of 3 repeated calls (warm allocator);
    ``script_wall``: the process's wall time but for the repeated calls, what a script that
    reads the Parquet and runs RBFSampler once takes (interpreter start and imports too)."""
    cmd = [sys.executable, "-c", _RBF, path, label, str(m), str(gamma), dtype]
    wall, _, out = timed_process(cmd)
    r = json.loads(out)
    r["script_wall"] = wall - r["repeats_wall"]
    return r


def rbfsampler(path: str, label: str, m: int, gamma: float, dtype: str, reps: int = 3,
               runs: list[dict] | None = None) -> dict:  # fmt: skip
    """RBFSampler in ``reps`` fresh processes (or the processes ``runs`` already ran): the
    process with the median first call, every first call, the best repeated call."""
    if runs is None:
        runs = [rbf_process(path, label, m, gamma, dtype) for _ in range(reps)]
    mid = median_run(runs, "first_wall")
    scripts = sorted(r["script_wall"] for r in runs if "script_wall" in r)
    if scripts:
        mid = {**mid, "script_walls": scripts, "script_wall": statistics.median(scripts)}
    return {**mid, "first_walls": sorted(r["first_wall"] for r in runs),
            "warm_wall": min(r["warm_wall"] for r in runs),
            "warm_cpu": min(r["warm_cpu"] for r in runs)}  # fmt: skip


def median_run(runs: list[dict], key: str) -> dict:
    """The run with the median ``key`` (the upper middle one of an even count).  The
    first touch of a fresh process's memory costs from 0.9 to 2.6 s for the same
    RBFSampler call on this kind of machine (the kernel's page supply), so the headline
    compares medians of both sides, with every run's time beside it."""
    return sorted(runs, key=lambda r: r[key])[len(runs) // 2]


def best_of(fn, reps: int = 3) -> float:
    """The least wall time of ``reps`` calls of ``fn``."""
    return min(times_of(fn, reps))


def times_of(fn, reps: int) -> list[float]:
    """The wall times of ``reps`` calls of ``fn``."""
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def encode_floor(path: str, label: str, m: int, bits: int, gamma: float, work: str,
                 reps: int = 3, cores: int = 2) -> dict:  # fmt: skip
    """Each step an encode cannot avoid, alone, on one core, on the same rows, ``reps``
    times (the least and the median time of each: the encode's runs are compared with
    the floor by the same statistic, the best with the best and the median with the median):
    reading the Parquet columns (stacked as columns, as the encode reads them), the float32
    GEMM (in the encoder's row blocks; the random phases enter it as one more input column),
    the codes from the phase (reduction and comparisons: no cosine, docs/store-format.md,
    Codes from the phase), the packing, the row norms, and writing
    the packed bytes as new files (one per store chunk, in a new directory, as a new store
    is written; the directory is removed between the repetitions, untimed).  The cosine
    and its comparisons, which the encode no longer computes, are timed beside the floor
    (``cosine``), not in it.  Beside it, not in it: ``compute_at_once``, the per-block steps
    chained on ``cores`` threads at once (:func:`at_once`), what these cores deliver for that
    work; ``compute_chained``, the same on one thread (what chaining the steps costs)."""
    import pyarrow.parquet as pq

    from rfcli.encoder import BLOCK_ROWS
    from rfcli.maps import make_map
    from rfcli.quantize import make_quantizer, pack_codes
    from rfcli.threads import one_blas_thread

    f = pq.ParquetFile(path)
    cols = [c for c in f.schema_arrow.names if c != label]

    def read():
        # decoded on this thread alone, as the encode's reading thread decodes (pyarrow's own
        # threads took 0.118 s of CPU in 0.075 s of wall for these rows: not one core's step)
        for b in f.iter_batches(batch_size=8192, columns=cols, use_threads=False):
            np.stack([c.to_numpy() for c in b.columns])  # column-major, as the encode

    t = pq.read_table(path, columns=cols)
    X = np.column_stack([t[c].to_numpy() for c in cols]).astype(np.float32)
    n, d = X.shape
    fmap = make_map("gaussian", m, gamma=gamma, seed=0).fit(d)
    q = make_quantizer("lm", bits)
    blocks = [X[i : i + BLOCK_ROWS] for i in range(0, n, BLOCK_ROWS)]
    u = fmap.transform_turns(blocks[0])
    t = fmap.transform_phase(blocks[0])
    zc = np.cos(t)
    codes = q.codes(zc)
    packed = pack_codes(codes, bits)
    allp = np.tile(packed, (len(blocks), 1))[:n]
    out = os.path.join(work, "floor-bytes")

    def write():
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        t0 = time.perf_counter()
        for i in range(0, n, 8192):
            with open(os.path.join(out, str(i)), "wb") as fh:
                fh.write(allp[i : i + 8192])
        return time.perf_counter() - t0

    def each(fn):
        def loop():
            for b in blocks:
                fn(b)  # results dropped: no block's output outlives the next

        return loop

    with one_blas_thread():
        times = {
            "parquet read": times_of(read, reps),
            "GEMM": times_of(each(fmap.transform_turns), reps),
            "codes from the phase": times_of(each(lambda b: q._phase_coder.codes(u)), reps),
            "pack": times_of(each(lambda b: pack_codes(codes, bits)), reps),
            "row norms": times_of(each(lambda b: q._row_norms(codes, packed)), reps),
            "write bytes": [write() for _ in range(reps)],
        }
        cosine = times_of(each(lambda b: q.codes(np.cos(t, out=zc))), reps)
    shutil.rmtree(out, ignore_errors=True)
    steps = {k: min(v) for k, v in times.items()}
    medians = {k: statistics.median(v) for k, v in times.items()}
    together = at_once(blocks, fmap, q, bits, cores, reps)
    chained = at_once(blocks, fmap, q, bits, 1, reps)
    return {"rows": n, "d": d, "reps": reps, "steps": steps, "sum": sum(steps.values()),
            "steps_median": medians, "sum_median": sum(medians.values()),
            "cosine": {"least": min(cosine), "median": statistics.median(cosine)},
            "compute_at_once": {"cores": cores, "least": min(together),
                                "median": statistics.median(together)},
            "compute_chained": {"least": min(chained), "median": statistics.median(chained)}}  # fmt: skip


def at_once(blocks, fmap, q, bits: int, cores: int, reps: int) -> list[float]:
    """The wall times of the floor's per-block steps (speed_doc.COMPUTE_STEPS) chained block
    after block on ``cores`` threads at once, each with its own arrays, taking the next
    block as it frees (as the encode's workers take chunks), BLAS held at one thread by the
    caller for the whole measurement: what the cores deliver for this work together, where
    the floor's sum / cores assumes each adds a whole core (on this VM two threads gave
    1.39-1.8x one over a day).  With ``cores`` 1 it is the steps chained on one core, which
    take longer than their separately timed sum (each step alone reuses one block's inputs,
    in cache)."""
    import threading

    from rfcli.quantize import pack_codes
    from rfcli.threads import one_blas_thread

    errors: list[BaseException] = []
    cores = max(1, min(cores, len(blocks)))

    def run():
        lock, nxt = threading.Lock(), iter(blocks)

        def work():
            try:
                while True:
                    with lock:
                        b = next(nxt, None)
                    if b is None:
                        return
                    codes = q._phase_coder.codes(fmap.transform_turns(b))
                    q._row_norms(codes, pack_codes(codes, bits))
            except BaseException as e:  # re-raised below: a failed thread is no timing
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(cores)]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]
        return time.perf_counter() - t0

    with one_blas_thread():
        run()  # the code paths, the allocator's arenas and the BLAS state warmed once
        return [run() for _ in range(reps)]


def encode_section(path: str, label: str, work: str, m: int = 2048, bits: int = 2,
                   gamma: float = 0.01, threads: int = 2, reps: int = 7) -> dict:  # fmt: skip
    """Each encode writes a new store (the previous one is removed before it, untimed: a
    run with ``--overwrite`` also pays for deleting the old store's files)."""
    import pyarrow.parquet as pq

    n = pq.ParquetFile(path).metadata.num_rows
    out = os.path.join(work, "enc.zarr")
    args = ("encode", path, "-o", out, "-m", m, "-b", bits, "--gamma", gamma)

    def fresh(*more):
        shutil.rmtree(out, ignore_errors=True)
        return cli(*args, *more)

    # rfcli and RBFSampler(float32) in turns, so that both meet the machine in the same
    # states (a first call's time follows the kernel's supply of fresh pages, which drifts,
    # and is shortest right after a process that freed as much memory): in the order
    # A B, B A, A B, ... each side follows itself as often as it follows the other
    runs, rbf_runs = [], []
    for i in range(reps):
        for side in ("rfcli", "rbf") if i % 2 == 0 else ("rbf", "rfcli"):
            if side == "rfcli":  # (after RBFSampler's process in the odd turns)
                runs.append({**fresh("--threads", threads), "after_rbf": i % 2 == 1})
            else:
                rbf_runs.append(rbf_process(path, label, m, gamma, "float32"))
    one = median_run([fresh("--threads", 1) for _ in range(reps)], "wall")
    # the runs the floor is compared with: one after another, as the floor's steps are
    # measured (a run right after RBFSampler's process meets the 1.6 GB it freed being
    # handed back by the kernel, on this VM a cost of the turns, not of the encode)
    alone = [fresh("--threads", threads) for _ in range(reps)]
    e2e = {**median_run(runs, "wall"), "walls": sorted(r["wall"] for r in runs)}
    after = {prev: [r["wall"] for r in runs if r["after_rbf"] == (prev == "rbf")]
             for prev in ("rbf", "rfcli")}  # fmt: skip
    if all(after.values()):
        e2e["after"] = {k: statistics.median(v) for k, v in after.items()}
    row = {
        "rows": n,
        "m": m,
        "bits": bits,
        "threads": threads,
        "rfcli": e2e,
        "rfcli_threads1": one,
        "rfcli_alone": {**median_run(alone, "wall"), "walls": sorted(r["wall"] for r in alone)},
        "rbf32": rbfsampler(path, label, m, gamma, "float32", runs=rbf_runs),
        # the ratio of each turn's two runs, whose median is steadier than medians' ratio
        "pair_ratios": sorted(
            b["first_wall"] / a["wall"] for a, b in zip(runs, rbf_runs, strict=True)
        ),
        "rbf64": rbfsampler(path, label, m, gamma, "float64", 3),
        "floor": encode_floor(path, label, m, bits, gamma, work, reps, threads),
        # what a Python process that reads Parquet pays before its first row (least, median)
        **_interpreter(reps),
        "store_bytes": _du(out),
    }
    print(json.dumps(row), flush=True)
    return row


#: the environment that turns AVX-512 off for NumPy's SIMD loops and OpenBLAS's kernels
#: (X86_V4 is NumPy 2.4's name for the AVX-512 group; older NumPy ignores it)
NO_AVX512 = {
    "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL "
    "AVX512_SPR X86_V4",
    "OPENBLAS_CORETYPE": "Haswell",
}

_INPROC = """
import json, os, shutil, statistics, sys, time, numpy as np, pyarrow.parquet as pq
from numpy._core._multiarray_umath import __cpu_features__ as features
from sklearn.kernel_approximation import RBFSampler
import rfcli
from rfcli import EncodeSettings
from rfcli.maps.fourier import FourierMap
path, label, work = sys.argv[1], sys.argv[2], sys.argv[3]
m, bits, gamma, threads, reps = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), \
    int(sys.argv[7]), int(sys.argv[8])
t = pq.read_table(path)
X = np.column_stack([t[c].to_numpy() for c in t.column_names if c != label]).astype(np.float32)
del t
out = os.path.join(work, "inproc.zarr")
settings = EncodeSettings(n_features=m, bits=bits, gamma=gamma)
def ours(phase):
    FourierMap.cosine_phase = phase  # False: the cosine path (the encode before the phase codes)
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    rfcli.encode(X, out, settings, threads=threads)
    return time.perf_counter() - t0
def rbf():
    t0 = time.perf_counter()
    F = RBFSampler(n_components=m, gamma=gamma, random_state=0).fit(X).transform(X)
    assert F.dtype == np.float32
    return time.perf_counter() - t0
sides = {"phase": lambda: ours(True), "cosine": lambda: ours(False), "rbf32": rbf}
for f in sides.values():
    f()  # warm: imports, first pages
walls = {k: [] for k in sides}
order = list(sides)
for i in range(reps):  # in turns, the order rotating
    for k in order[i % 3:] + order[: i % 3]:
        walls[k].append(sides[k]())
shutil.rmtree(out, ignore_errors=True)
avx512 = sorted(k for k, v in features.items() if v and ("AVX512" in k or k == "X86_V4"))
print(json.dumps({"rows": len(X), "d": X.shape[1], "m": m, "bits": bits, "threads": threads,
                  "walls": walls, "median": {k: statistics.median(v) for k, v in walls.items()},
                  "avx512_features": avx512,
                  "env": {k: os.environ.get(k) for k in ("NPY_DISABLE_CPU_FEATURES",
                                                          "OPENBLAS_CORETYPE")}}))
"""


def encode_in_process(path: str, label: str, work: str, m: int = 2048, bits: int = 2,
                      gamma: float = 0.01, threads: int = 2, reps: int = 5,
                      env: dict | None = None) -> dict:  # fmt: skip
    """In one fresh process (with ``env`` added to its environment), warm: ``rfcli.encode``
    of the in-memory float32 array into a new store (codes from the phase), the same encode
    by the cosine path (``FourierMap.cosine_phase = False``: the encode before the codes
    from the phase), and ``RBFSampler(float32).fit(X).transform(X)``, ``reps`` times each in
    turns; the AVX-512 features NumPy still uses are recorded."""
    cmd = [sys.executable, "-c", _INPROC, path, label, work, str(m), str(bits), str(gamma),
           str(threads), str(reps)]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if p.returncode:
        raise SystemExit(f"the in-process encode failed:\n{p.stderr}")
    row = json.loads(p.stdout.strip().splitlines()[-1])
    print(json.dumps(row), flush=True)
    return row


def encode_section_without_avx512(path: str, label: str, work: str, reps: int = 7) -> dict:
    """:func:`encode_section` (the CLI, RBFSampler's processes, the floor) and
    :func:`encode_in_process` in a process whose environment turns AVX-512 off
    (:data:`NO_AVX512`): the encode rows as on a CPU with AVX2 only."""
    cmd = [sys.executable, os.path.abspath(__file__), "encode", path, label, work, str(reps)]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **NO_AVX512})
    if p.returncode:
        raise SystemExit(f"the encode section without AVX-512 failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _interpreter(reps: int) -> dict:
    ts = [timed_process([sys.executable, "-c", "import numpy, pyarrow.parquet"])[0]
          for _ in range(reps)]  # fmt: skip
    return {"interpreter": min(ts), "interpreter_median": statistics.median(ts)}


def _du(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


# -- training -----------------------------------------------------------------------------
_SK = """
import json, sys, time, numpy as np
kind = sys.argv[1]
F = np.load(sys.argv[2]); y = np.load(sys.argv[3], allow_pickle=False)
Ft = np.load(sys.argv[4]) if sys.argv[4] != "-" else None
yt = np.load(sys.argv[5], allow_pickle=False) if sys.argv[5] != "-" else None
grid = json.loads(sys.argv[6])
c0, t0 = time.process_time(), time.perf_counter()
if kind == "ridge":
    from sklearn.linear_model import Ridge
    model = Ridge(alpha=grid[0], solver="cholesky").fit(F, y)
elif kind == "ridge-cv":
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV
    model = GridSearchCV(Ridge(solver="cholesky"), {"alpha": grid}, cv=5,
                         scoring="neg_mean_squared_error").fit(F, y)
else:
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import LinearSVC
    warnings.simplefilter("ignore", ConvergenceWarning)
    model = GridSearchCV(LinearSVC(dual=True), {"C": grid}, cv=5).fit(F, y)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
out = {"wall": wall, "cpu": cpu, "dtype": str(F.dtype)}
if hasattr(model, "best_params_"):
    out["best"] = model.best_params_
if Ft is not None:
    p = model.predict(Ft)
    out["score"] = float(np.mean(p == yt)) if kind == "svm-cv" else float(np.mean((p - yt) ** 2))
else:
    out["train_mse"] = float(np.mean((model.predict(F) - y) ** 2))
hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM")][0].split()[1]
out["peak_mib"] = int(hwm) / 1024
print(json.dumps(out))
"""


def sklearn_run(kind: str, F: str, y: str, Ft: str, yt: str, grid) -> dict:
    return json.loads(
        timed_process([sys.executable, "-c", _SK, kind, F, y, Ft, yt, json.dumps(grid)])[2]
    )


def _decoded(store: str, work: str, name: str) -> tuple[str, str]:
    """The store's decoded float32 features and its labels as .npy files."""
    from rfcli import FeatureStore

    f = os.path.join(work, f"{name}.F.npy")
    run_cli("decode", store, "-o", f, "--overwrite")
    y = os.path.join(work, f"{name}.y.npy")
    np.save(y, FeatureStore(store).labels())
    return f, y


def krr_section(store: str, work: str, alpha: float = 1.0) -> dict:
    """``rfcli train --model krr --alpha A`` against Ridge(alpha=A, solver='cholesky').fit
    on the store's decoded features as float32 in memory (the fit alone is timed; its peak
    memory includes the features)."""
    from rfcli import FeatureStore

    st = FeatureStore(store)
    model = os.path.join(work, "krr.npz")
    ours = cli("train", store, "--model", "krr", "--alpha", alpha, "-o", model, "--overwrite")
    from rfcli.learn.model_file import load_model

    ours["train_mse"] = load_model(model)[0].info["train_mse"]
    F, y = _decoded(store, work, "krr")
    sk = sklearn_run("ridge", F, y, "-", "-", [alpha])
    for p in (F, y):
        os.remove(p)
    row = {"rows": st.n_rows, "m": st.n_features, "bits": st.bits, "rfcli": ours, "ridge": sk}
    print(json.dumps(row), flush=True)
    return row


def selection_section(name: str, train: str, test: str, label: str, prep: list[str],
                      model: str, m: int, work: str) -> dict:  # fmt: skip
    """``rfcli train`` with its default model selection against GridSearchCV(cv=5) of
    LinearSVC(dual=True) (svm) or Ridge(solver='cholesky') (krr) over the same grid, on the
    same decoded float32 features; test scores of both."""
    from rfcli.jobs.evaluate import evaluate
    from rfcli.learn.model_file import load_model

    tr, te = os.path.join(work, f"{name}.tr.zarr"), os.path.join(work, f"{name}.te.zarr")
    run_cli("encode", train, "-o", tr, "--label", label, "-m", m, "-b", 2, *prep, "--overwrite")
    run_cli("encode", test, "-o", te, "--like", tr, "--overwrite")
    path = os.path.join(work, f"{name}.{model}.npz")
    ours = cli("train", tr, "--model", model, "-o", path, "--overwrite")
    info = load_model(path)[0].info
    ours["report"] = {k: v for k, v in info.items() if not isinstance(v, list | dict) or
                      k in ("validation_accuracy", "validation_mse", "cv", "passes_per_C",
                            "candidates")}  # fmt: skip
    ev = evaluate(path, te)
    ours["score"] = ev["accuracy"] if model == "svm" else ev["mse"]
    F, y = _decoded(tr, work, f"{name}.tr")
    Ft, yt = _decoded(te, work, f"{name}.te")
    if model == "svm":
        sk = sklearn_run("svm-cv", F, y, Ft, yt, C_GRID)
    else:
        from rfcli.learn.ridge import ALPHA_GRID

        Fm = np.load(F)
        scale = float(((Fm - Fm.mean(0)) ** 2).sum()) / Fm.shape[1]  # rfcli's grid, absolute
        del Fm
        sk = sklearn_run("ridge-cv", F, y, Ft, yt, [float(a * scale) for a in ALPHA_GRID])
    for p in (F, y, Ft, yt):
        os.remove(p)
    row = {"set": name, "model": model, "m": m, "rfcli": ours, "sklearn": sk}
    print(json.dumps(row, default=str), flush=True)
    return row


if __name__ == "__main__":  # python bench/speed.py encode PATH LABEL WORK REPS (one JSON line)
    if sys.argv[1:2] == ["encode"]:
        p, lab, w, k = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
        sec = encode_section(p, lab, w, reps=k)
        sec["in_process"] = encode_in_process(p, lab, w, reps=max(3, k // 2))
        print(json.dumps(sec), flush=True)
