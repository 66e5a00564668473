"""rfcli side by side with scikit-learn: encode speed and its GEMM roofline, training time
and memory, and memory as the rows grow (issue 6).

    python bench/benchmarks.py [--quick] [--only machine,encode,roofline,train,scale]

Every comparison is a ratio measured in the same run on the same machine (times are the
best of a few repetitions; peak memory is each process's own VmHWM, in a fresh
interpreter per measurement).  Writes build/bench/benchmarks.json and docs/benchmarks.md.
scikit-learn is a benchmark-only dependency (`pip install -e .[bench]`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from cli_peak import run_cli  # noqa: E402

from rfcli.jobs.encode import EncodeSettings, ReadSettings, encode  # noqa: E402

OUT = os.path.join(ROOT, "build", "bench")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
DATA = os.path.join(ROOT, "..", "shared", "data")
THREADS = 2


# -- data ---------------------------------------------------------------------------------
def synthetic(path: str, n: int, d: int, seed: int = 0, task: str = "regression") -> str:
    """A Gaussian-mixture table streamed to Parquet in 50,000-row groups (never whole)."""
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(8, d))
    v = rng.normal(size=d) / np.sqrt(d)
    fields = [pa.field(f"x{j}", pa.float32()) for j in range(d)]
    fields.append(pa.field("y", pa.float64() if task == "regression" else pa.int64()))
    tmp = path + ".tmp"
    with pq.ParquetWriter(tmp, pa.schema(fields)) as w:
        for start in range(0, n, 50_000):
            k = min(50_000, n - start)
            c = rng.integers(0, 8, k)
            X = (centres[c] + rng.normal(size=(k, d))).astype(np.float32)
            if task == "regression":
                y = np.sin(X @ v * 2) + 0.1 * rng.normal(size=k)
            else:
                y = c % 2
            cols = {f"x{j}": X[:, j] for j in range(d)}
            cols["y"] = y
            w.write_table(pa.table(cols, schema=pa.schema(fields)))
    os.replace(tmp, path)
    return path


def load_matrix(path: str, label: str, n: int | None = None):
    t = pq.read_table(path)
    if n is not None:
        t = t.slice(0, n)
    X = np.column_stack([t[c].to_numpy() for c in t.column_names if c != label])
    return X.astype(np.float64), t[label].to_numpy()


def best_of(fn, reps=3):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


# -- machine ------------------------------------------------------------------------------
def machine():
    from threadpoolctl import threadpool_info

    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import scipy
    import sklearn

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "blas": [
            {k: p.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
            for p in threadpool_info()
            if p.get("user_api") == "blas"
        ],
    }


# -- encode -------------------------------------------------------------------------------
def encode_section(work, sets, ms, bits, reps):
    """rfcli encode end to end (Parquet in, compressed store out, in process) against
    RBFSampler(n_components=m).fit(X).transform(X) on the same rows already in memory."""
    from sklearn.kernel_approximation import RBFSampler

    rows = []
    for name, path, label, norm in sets:
        X, _ = load_matrix(path, label)
        if norm:
            X /= np.linalg.norm(X, axis=1, keepdims=True)
        n, d = X.shape
        from rfcli.maps.bandwidth import median_heuristic

        gamma = median_heuristic(X[:1000])
        for m in ms:

            def rbf_run(m=m, X=X, g=gamma):
                return RBFSampler(gamma=g, n_components=m, random_state=0).fit(X).transform(X)

            rbf = best_of(rbf_run, reps)
            for b in bits:
                out = os.path.join(work, f"{name}.m{m}.b{b}.zarr")
                es = EncodeSettings(n_features=m, bits=b, normalize_rows=norm, gamma=gamma)

                def run(out=out, es=es, path=path, label=label):
                    return encode(path, out, es, ReadSettings(label=label), threads=THREADS,
                                  overwrite=True)  # fmt: skip

                run()
                secs = best_of(run, reps)
                row = {
                    "set": name,
                    "rows": n,
                    "d": d,
                    "m": m,
                    "bits": b,
                    "rfcli_rows_per_s": n / secs,
                    "rbfsampler_rows_per_s": n / rbf,
                    "speedup": rbf / secs,
                    "store_bytes": _du(out),
                }
                print(json.dumps(row), flush=True)
                rows.append(row)
                shutil.rmtree(out, ignore_errors=True)
    return rows


def _du(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def roofline_section(work, path, label, m=8192, b=2, reps=3):
    """The projection's share of the hardware: numpy float32 GEMM FLOP rate for the
    encoder's block shape (256 x d times d x m) and for one large product, against the
    GEMM FLOPs per second that encode (end to end, and its map step alone) achieves."""
    from rfcli.encoder import BLOCK_ROWS

    X, _ = load_matrix(path, label)
    n, d = X.shape
    rng = np.random.default_rng(0)
    W = rng.standard_normal((d, m)).astype(np.float32)
    X32 = X.astype(np.float32)
    flops = 2.0 * n * d * m
    big = best_of(lambda: X32 @ W, reps)
    blocks = best_of(lambda: [X32[i : i + BLOCK_ROWS] @ W for i in range(0, n, BLOCK_ROWS)], reps)
    out = os.path.join(work, "roof.zarr")
    es = EncodeSettings(n_features=m, bits=b, gamma=1.0 / d)

    def run():
        return encode(path, out, es, ReadSettings(label=label), threads=THREADS, overwrite=True)

    enc = run()
    e2e = best_of(run, reps)
    fmap = enc.encoder.fmap

    def map_only():
        for i in range(0, n, BLOCK_ROWS):
            fmap.transform_raw(X32[i : i + BLOCK_ROWS])

    mapping = best_of(map_only, reps)
    shutil.rmtree(out, ignore_errors=True)
    row = {
        "rows": n,
        "d": d,
        "m": m,
        "bits": b,
        "gemm_gflops_one_product": flops / big / 1e9,
        "gemm_gflops_256_row_blocks": flops / blocks / 1e9,
        "map_step_gflops": flops / mapping / 1e9,
        "encode_gflops": flops / e2e / 1e9,
        "encode_rows_per_s": n / e2e,
        "encode_fraction_of_gemm": big / e2e,
        "map_fraction_of_gemm": big / mapping,
    }
    print(json.dumps(row), flush=True)
    return row


def trigfree_section(m=2048, b=2, reps=50):
    """The trig-free encoding (docs/methods.md, Quantizers) against cos + border comparisons
    on one 256-row block of phases: code = #{i: psi < arccos t_i}, psi = |theta - 2 pi round(theta / 2 pi)|,
    with the reduction by np.remainder or by floor."""
    from rfcli.quantize import make_quantizer

    rng = np.random.default_rng(0)
    theta = (rng.normal(size=(256, m)) * 5).astype(np.float32)
    q = make_quantizer("lm", b)
    t = q._borders32
    a = np.arccos(t).astype(np.float32)
    pi, two_pi = np.float32(np.pi), np.float32(2 * np.pi)

    def count(x, thresholds, less):
        out = np.zeros(x.shape, np.uint8)
        for v in thresholds:
            np.add(out, (x < v) if less else (x > v), out=out, casting="unsafe")
        return out

    def with_cos():
        return count(np.cos(theta), t, False)

    def by_remainder():
        p = theta + pi
        np.remainder(p, two_pi, out=p)
        p -= pi
        return count(np.abs(p, out=p), a, True)

    def by_floor():
        k = np.floor(theta * np.float32(1 / (2 * np.pi)) + np.float32(0.5))
        p = theta - k * two_pi
        return count(np.abs(p, out=p), a, True)

    ref = with_cos()
    row = {"m": m, "bits": b}
    for name, fn in (("cos", with_cos), ("remainder", by_remainder), ("floor", by_floor)):
        row[f"{name}_ms"] = 1e3 * best_of(fn, reps)
        row[f"{name}_agreement"] = float(np.mean(fn() == ref))
    print(json.dumps(row), flush=True)
    return row


# -- train --------------------------------------------------------------------------------
_SKLEARN = """
import sys, time, json, numpy as np
X = np.load(sys.argv[1]); y = np.load(sys.argv[2]); Xt = np.load(sys.argv[3]); yt = np.load(sys.argv[4])
kind, param = sys.argv[5], float(sys.argv[6])
t0 = time.perf_counter()
if kind == "ridge":
    from sklearn.linear_model import Ridge
    model = Ridge(alpha=param, solver="cholesky").fit(X, y)
    score = float(np.mean((model.predict(Xt) - yt) ** 2))
else:
    from sklearn.svm import LinearSVC
    model = LinearSVC(C=param, dual=False, tol=1e-4).fit(X, y)
    score = float(np.mean(model.predict(Xt) == yt))
secs = time.perf_counter() - t0
hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM")][0].split()[1]
print(json.dumps({"seconds": secs, "score": score, "peak_mib": int(hwm) / 1024}))
"""

_BASELINE = """
import numpy, scipy, zarr, pyarrow, rfcli.cli, rfcli.jobs.train
hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM")][0].split()[1]
print(int(hwm) / 1024)
"""


def sklearn_fit(kind, param, X, y, Xt, yt, work):
    files = []
    for name, a in (("X", X), ("y", y), ("Xt", Xt), ("yt", yt)):
        f = os.path.join(work, f"{name}.npy")
        np.save(f, a)
        files.append(f)
    p = subprocess.run(
        [sys.executable, "-c", _SKLEARN, *files, kind, str(param)], capture_output=True, text=True
    )
    if p.returncode:
        raise SystemExit(p.stderr)
    for f in files:
        os.remove(f)
    return json.loads(p.stdout)


def decoded(store):
    from rfcli import FeatureStore

    st = FeatureStore(store)
    F = np.concatenate([f for _, f in st.iter_features()]).astype(np.float64)
    return F, st.labels()


def train_section(work, cases):
    """rfcli KRR/SVM from a 2-bit store (CLI, fresh process) against scikit-learn Ridge
    (cholesky) / LinearSVC on the same decoded features as float64 in memory."""
    base = float(subprocess.run([sys.executable, "-c", _BASELINE], capture_output=True,
                                text=True).stdout)  # fmt: skip
    rows = []
    for name, train_path, test_path, label, norm, task, m in cases:
        tr, te = os.path.join(work, "tr.zarr"), os.path.join(work, "te.zarr")
        extra = ["--normalize-rows"] if norm else ["--standardize"]
        run_cli("encode", train_path, "-o", tr, "--label", label, "-m", m, "-b", 2, *extra,
                "--overwrite")  # fmt: skip
        run_cli("encode", test_path, "-o", te, "--like", tr, "--overwrite")
        F, y = decoded(tr)
        Ft, yt = decoded(te)
        model = os.path.join(work, "model.npz")
        if task == "regression":
            # the same absolute penalty on the centred Gram matrix for both
            alpha = 1e-3 * float(((F - F.mean(0)) ** 2).sum()) / F.shape[1]
            secs, peak = run_cli("train", tr, "--model", "krr", "--alpha", alpha, "-o", model,
                                 "--overwrite")  # fmt: skip
            from rfcli.jobs.evaluate import evaluate

            score = evaluate(model, te)["mse"]
            sk = sklearn_fit("ridge", alpha, F, y, Ft, yt, work)
            metric = "mse"
        else:
            C = 1.0
            secs, peak = run_cli("train", tr, "--model", "svm", "-C", C, "-o", model,
                                 "--overwrite")  # fmt: skip
            from rfcli.jobs.evaluate import evaluate

            score = evaluate(model, te)["accuracy"]
            sk = sklearn_fit("svm", C, F, y, Ft, yt, work)
            metric = "accuracy"
        row = {
            "set": name,
            "rows": len(F),
            "m": m,
            "model": "krr" if task == "regression" else "svm",
            "metric": metric,
            "rfcli_seconds": secs,
            "rfcli_peak_mib": peak,
            "rfcli_score": score,
            "sklearn_seconds": sk["seconds"],
            "sklearn_peak_mib": sk["peak_mib"],
            "sklearn_score": sk["score"],
            "baseline_mib": base,
            "store_bytes": _du(tr),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
        for p in (tr, te):
            shutil.rmtree(p, ignore_errors=True)
    return rows


# -- scale --------------------------------------------------------------------------------
def scale_section(work, sizes, m=256, d=16, previous=None):
    rows = []
    done = {r["rows"]: r for r in (previous or [])}
    for n in sizes:
        if n in done and (n != sizes[0] or "float32_parquet_bytes" in done[n]):
            rows.append(done[n])  # kept from an earlier run (delete benchmarks.json to redo)
            continue
        src = synthetic(os.path.join(OUT, f"scale-{n}.parquet"), n, d, seed=1,
                        task="classification")  # fmt: skip
        store = os.path.join(work, f"scale-{n}.zarr")
        t_enc, p_enc = run_cli("encode", src, "-o", store, "--label", "y", "-m", m, "-b", 2,
                               "--normalize-rows", "--overwrite")  # fmt: skip
        model = os.path.join(work, "m.npz")
        t_krr, p_krr = run_cli("train", store, "--model", "krr", "--alpha", "1e-3", "-o",
                               model, "--overwrite")  # fmt: skip
        t_svm, p_svm = run_cli("train", store, "--model", "svm", "-C", "1", "--max-iter", "10",
                               "--cache-mb", "0", "-o", model, "--overwrite")  # fmt: skip
        row = {
            "rows": n,
            "encode_seconds": t_enc,
            "encode_peak_mib": p_enc,
            "krr_seconds": t_krr,
            "krr_peak_mib": p_krr,
            "svm10_seconds": t_svm,
            "svm10_peak_mib": p_svm,
            "store_bytes": _du(store),
            "float32_bytes": n * m * 4,
        }
        if n == sizes[0]:
            # the same features unquantized, as float32 Parquet (zstd)
            fstore, pqf = os.path.join(work, "f32.zarr"), os.path.join(work, "features.parquet")
            run_cli("encode", src, "-o", fstore, "--label", "y", "-m", m, "--quantizer", "none",
                    "--normalize-rows", "--overwrite")  # fmt: skip
            run_cli("decode", fstore, "-o", pqf, "--overwrite")
            row["float32_parquet_bytes"] = os.path.getsize(pqf)
            os.remove(pqf)
            shutil.rmtree(fstore, ignore_errors=True)
        print(json.dumps(row), flush=True)
        rows.append(row)
        shutil.rmtree(store, ignore_errors=True)
    return rows


# -- report -------------------------------------------------------------------------------
def write_doc(res):
    L = ["# Benchmarks", ""]
    L += [
        "Generated by `make bench` (`python bench/benchmarks.py`). Every comparison is a ratio",
        "measured in the same run; absolute numbers move with the machine and its load.",
        "",
    ]
    mc = res.get("machine")
    if mc:
        blas = "; ".join(
            f"{b['internal_api']} {b['version']} ({b['num_threads']} threads, {b['architecture']})"
            for b in mc["blas"]
        )
        L += [
            f"Machine: {mc['cpu']}, {mc['cores']} cores; Python {mc['python']}, numpy "
            f"{mc['numpy']}, scipy {mc['scipy']}, scikit-learn {mc['scikit-learn']}; BLAS: "
            f"{blas}. rfcli encodes with {THREADS} threads.",
            "",
        ]
    if res.get("encode"):
        L += [
            "## Encode: rfcli end to end vs RBFSampler.transform alone",
            "",
            "rfcli: read Parquet, preprocess, project (float32 GEMM), cos, quantize, pack,",
            "compress (zstd) and write the Zarr store, in process. scikit-learn:",
            "`RBFSampler(n_components=m).fit(X).transform(X)` on the same rows already in memory",
            "as float64 (no I/O, no quantization). Best of 3.",
            "",
            "| data | rows x d | m | b | rfcli rows/s | RBFSampler rows/s | rfcli / RBFSampler | store MB |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in res["encode"]:
            L.append(
                f"| {r['set']} | {r['rows']:,} x {r['d']} | {r['m']} | {r['bits']} | "
                f"{r['rfcli_rows_per_s']:,.0f} | {r['rbfsampler_rows_per_s']:,.0f} | "
                f"{r['speedup']:.2f}x | {r['store_bytes'] / 1e6:.2f} |"
            )
        L.append("")
    if res.get("roofline"):
        r = res["roofline"]
        L += [
            "## Roofline: the projection against numpy's GEMM",
            "",
            f"{r['rows']:,} rows, d = {r['d']}, m = {r['m']}, b = {r['bits']}; FLOPs = 2 n d m.",
            "",
            "| what | GFLOP/s | fraction of one big GEMM |",
            "|---|---|---|",
            f"| numpy float32 GEMM, one (n x d)(d x m) product | "
            f"{r['gemm_gflops_one_product']:.1f} | 1 |",
            f"| numpy float32 GEMM in encode's 256-row blocks | "
            f"{r['gemm_gflops_256_row_blocks']:.1f} | "
            f"{r['gemm_gflops_256_row_blocks'] / r['gemm_gflops_one_product']:.2f} |",
            f"| encode's map step (GEMM + phase + cos, 256-row blocks, 1 thread) | "
            f"{r['map_step_gflops']:.1f} | {r['map_fraction_of_gemm']:.2f} |",
            f"| encode end to end ({THREADS} threads, I/O, quantize, pack, compress) | "
            f"{r['encode_gflops']:.1f} | {r['encode_fraction_of_gemm']:.2f} |",
            "",
        ]
    if res.get("trigfree"):
        r = res["trigfree"]
        L += [
            "## Trig-free quantization (docs/methods.md) — evaluated, not adopted",
            "",
            f"One 256 x {r['m']} block of phases, {r['bits']}-bit LM codes, best of 50:",
            "",
            "| method | ms | codes equal to cos + compare |",
            "|---|---|---|",
            f"| cos (numpy's SIMD float32 cos) + border comparisons | {r['cos_ms']:.2f} | 1 |",
            f"| psi by np.remainder + arccos-border comparisons | {r['remainder_ms']:.2f} | "
            f"{r['remainder_agreement']:.6f} |",
            f"| psi by floor + arccos-border comparisons | {r['floor_ms']:.2f} | "
            f"{r['floor_agreement']:.6f} |",
            "",
            "numpy's vectorized float32 cos costs about as much as the cheapest phase reduction,",
            "so the trig-free path gains nothing here and could differ in rare boundary cases",
            "(float32 rounding of the reduction against cos); encode keeps cos.",
            "",
        ]
    if res.get("train"):
        L += [
            "## Training from a 2-bit store vs scikit-learn on float64 features in memory",
            "",
            "rfcli: the CLI in a fresh process (time includes its ~0.6 s start-up and the",
            "store reads; peak RSS includes the interpreter and libraries, about "
            f"{res['train'][0]['baseline_mib']:.0f} MiB). scikit-learn: fit time only, on the",
            "decoded features loaded as a float64 array; peak RSS of its process. Same alpha",
            "(Ridge, solver='cholesky') or C (LinearSVC, squared hinge, primal).",
            "",
            "| data | rows | m | model | rfcli s | sklearn s | rfcli peak MiB | sklearn peak MiB | "
            "memory ratio (above baseline) | rfcli | sklearn |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in res["train"]:
            b = r["baseline_mib"]
            ratio = (r["sklearn_peak_mib"] - b) / max(r["rfcli_peak_mib"] - b, 1)
            fmt = "{:.4f}" if r["metric"] == "accuracy" else "{:.5g}"
            L.append(
                f"| {r['set']} | {r['rows']:,} | {r['m']} | {r['model']} | "
                f"{r['rfcli_seconds']:.1f} | {r['sklearn_seconds']:.1f} | "
                f"{r['rfcli_peak_mib']:.0f} | {r['sklearn_peak_mib']:.0f} | {ratio:.1f}x | "
                f"{r['metric']} {fmt.format(r['rfcli_score'])} | {fmt.format(r['sklearn_score'])} |"
            )
        L.append("")
    if res.get("scale"):
        L += [
            "## Scale: peak memory as the rows grow",
            "",
            "Synthetic (d = 16, 2 classes), m = 256, 2-bit LM, unit rows; the CLI in fresh",
            "processes; SVM: 10 L-BFGS iterations without the packed-code cache.",
            "",
            "| rows | encode s | encode peak MiB | KRR s | KRR peak MiB | SVM(10 it) s | "
            "SVM peak MiB | store MB | float32 features MB |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in res["scale"]:
            L.append(
                f"| {r['rows']:,} | {r['encode_seconds']:.1f} | {r['encode_peak_mib']:.0f} | "
                f"{r['krr_seconds']:.1f} | {r['krr_peak_mib']:.0f} | {r['svm10_seconds']:.1f} | "
                f"{r['svm10_peak_mib']:.0f} | {r['store_bytes'] / 1e6:.1f} | "
                f"{r['float32_bytes'] / 1e6:.0f} |"
            )
        first = res["scale"][0]
        if "float32_parquet_bytes" in first:
            L += [
                "",
                f"At {first['rows']:,} rows the store takes {first['store_bytes'] / 1e6:.1f} MB; "
                f"the same features as float32 Parquet (zstd) "
                f"{first['float32_parquet_bytes'] / 1e6:.1f} MB "
                f"({first['float32_parquet_bytes'] / first['store_bytes']:.1f}x larger).",
            ]
        L.append("")
    L += targets_section(res)
    if os.path.exists(os.path.join(ROOT, "docs", "profile.md")):
        L += ["Where the time goes: [profile.md](profile.md).", ""]
    with open(DOC, "w") as f:
        f.write("\n".join(L))


def targets_section(res) -> list[str]:
    """The issue's targets, checked against this run's numbers."""
    out = ["## Against the targets", ""]
    enc = [r for r in res.get("encode", []) if r["m"] == 2048 and r["bits"] == 2]
    if enc:
        out.append(
            "* Encode end to end at m = 2048, b = 2, 2 threads: "
            + ", ".join(f"{r['set']} {r['speedup']:.2f}x" for r in enc)
            + " the rows/s of RBFSampler.transform alone (target: at least 1.5x)."
        )
    roof = res.get("roofline")
    if roof:
        out.append(
            f"* The projection (encode's map step) at m = {roof['m']}, d = {roof['d']} runs at "
            f"{roof['map_fraction_of_gemm']:.2f} of numpy's one-product GEMM rate (target: at "
            f"least half); encode end to end, which also quantizes, packs, compresses and "
            f"writes, reaches {roof['encode_fraction_of_gemm']:.2f} of it."
        )
    sc = res.get("scale", [])
    if len(sc) >= 2:
        parts = []
        for a, b in zip(sc, sc[1:], strict=False):
            g = [
                100 * (b[k] / a[k] - 1)
                for k in ("encode_peak_mib", "krr_peak_mib", "svm10_peak_mib")
            ]
            parts.append(
                f"{a['rows']:,} -> {b['rows']:,} rows: encode {g[0]:+.1f}%, KRR {g[1]:+.1f}%, "
                f"SVM {g[2]:+.1f}%"
            )
        out.append("* Peak RSS growth per 10x rows (target: below 10%): " + "; ".join(parts) + ".")
    tr = [r for r in res.get("train", []) if r["model"] == "krr"]
    for r in tr:
        b = r["baseline_mib"]
        out.append(
            f"* KRR from the 2-bit store ({r['rows']:,} rows, m = {r['m']}): "
            f"{r['sklearn_seconds'] / r['rfcli_seconds']:.2f}x the speed of Ridge "
            f"(cholesky) on float64 features in memory, "
            f"{r['sklearn_peak_mib'] / r['rfcli_peak_mib']:.0f}x less peak memory "
            f"({(r['sklearn_peak_mib'] - b) / (r['rfcli_peak_mib'] - b):.0f}x above the "
            f"interpreter's baseline), same test MSE to 7 digits (targets: at least as fast, "
            "at most 1/8 of the memory, equal accuracy)."
        )
    out.append("")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="machine,encode,roofline,trigfree,train,scale")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "benchmarks.json")
    res = json.load(open(path)) if os.path.exists(path) else {}
    work = tempfile.mkdtemp(prefix="rfcli-bench-")
    q = args.quick
    synth64 = synthetic(os.path.join(OUT, f"synth-d64-{20_000 if q else 200_000}.parquet"),
                        20_000 if q else 200_000, 64)  # fmt: skip
    letter = (os.path.join(DATA, "letter.train.parquet"), os.path.join(DATA,
              "letter.test.parquet"))  # fmt: skip
    try:
        for part in args.only.split(","):
            if part == "machine":
                res["machine"] = machine()
            elif part == "encode":
                sets = [("letter", letter[0], "label", True), ("synthetic", os.path.join(
                    OUT, "synth-enc.parquet"), "y", False)]  # fmt: skip
                synthetic(sets[1][1], 5_000 if q else 30_000, 64, seed=2)
                res["encode"] = encode_section(
                    work, sets, [512, 2048] if q else [512, 2048, 8192], [1, 2, 4], 1 if q else 3
                )
            elif part == "trigfree":
                res["trigfree"] = trigfree_section()
            elif part == "roofline":
                res["roofline"] = roofline_section(work, synth64, "y", m=2048 if q else 8192)
            elif part == "train":
                synth_test = synthetic(os.path.join(OUT, "synth-d64-test.parquet"), 20_000, 64,
                                       seed=5)  # fmt: skip
                res["train"] = train_section(
                    work,
                    [
                        ("letter", *letter, "label", True, "classification", 2048),
                        ("synthetic d=64", synth64, synth_test, "y", False, "regression", 2048),
                    ],
                )
            elif part == "scale":
                res["scale"] = scale_section(
                    work,
                    [10_000, 100_000] if q else [100_000, 1_000_000, 10_000_000],
                    previous=None if q else res.get("scale"),
                )
            with open(path, "w") as f:
                json.dump(res, f, indent=1)
            write_doc(res)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
