"""rfcli side by side with scikit-learn: start-up, encode against RBFSampler and the floor,
KRR against Ridge, model selection against GridSearchCV (bench/speed.py), the trig-free
quantization, and memory as the rows grow.

    python bench/benchmarks.py [--quick] [--keep-coretype]
        [--only machine,startup,encode,krr,select,trigfree,scale]

Every comparison is a ratio measured in the same run on the same machine (times are the
best of a few repetitions; peak memory is each process's own VmHWM, in a fresh
interpreter per measurement).  Writes bench/results/benchmarks.json (kept in the
repository: a run of some sections keeps the others' results) and docs/benchmarks.md (the
sections other scripts write, e.g. bench/bits_auto.py's, are carried over).
scikit-learn is a benchmark-only dependency (`pip install -e .[bench]`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import speed  # noqa: E402
from cli_peak import compile_rfcli, run_cli  # noqa: E402
from speed_doc import speed_doc, targets_doc  # noqa: E402

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

    # the encoder's: the phase in turns comes from its GEMM (here once, outside the timing)
    u = (theta.astype(np.float64) / (2 * np.pi)).astype(np.float32)

    def in_turns():
        return q._phase_coder.codes(u)

    ref = with_cos()
    row = {"m": m, "bits": b}
    methods = (("cos", with_cos), ("remainder", by_remainder), ("floor", by_floor),
               ("turns", in_turns))  # fmt: skip
    for name, fn in methods:
        row[f"{name}_ms"] = 1e3 * speed.best_of(fn, reps)
        row[f"{name}_agreement"] = float(np.mean(fn() == ref))
    print(json.dumps(row), flush=True)
    return row


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
            "store_bytes": speed._du(store),
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
    if res.get("load"):
        L += [
            "One-minute load average before/after each section (the machine is shared; a "
            "load above its 2 cores slows both sides of a comparison, not always alike): "
            + ", ".join(f"{k} {a:.1f}/{b:.1f}" for k, (a, b) in res["load"].items())
            + ".",
            "",
        ]
    L += speed_doc(res)
    if res.get("trigfree"):
        r = res["trigfree"]
        L += [
            "## Trig-free quantization (docs/methods.md): the reductions compared",
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
            *(
                [
                    "| the encoder's: the phase in turns u (from its GEMM), |u - rint(u)| "
                    f"(exact) + turn-border comparisons | {r['turns_ms']:.2f} | "
                    f"{r['turns_agreement']:.6f} |"
                ]
                if "turns_ms" in r
                else []
            ),
            "",
            "The encoder's phase in turns is exact for every phase (docs/store-format.md, Codes",
            "from the phase); its GEMM is timed in the encode section's floor.",
            "",
        ]
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
    L += _foreign_sections(L)
    L += targets_doc(res)
    if os.path.exists(os.path.join(ROOT, "docs", "profile.md")):
        L += ["Where the time goes: [profile.md](profile.md).", ""]
    with open(DOC, "w") as f:
        f.write("\n".join(L))


def _foreign_sections(ours: list[str]) -> list[str]:
    """The ``## `` sections of the current doc that this script does not write (those of
    bench/doc_section.py's writers), in their order, to keep them."""
    if not os.path.exists(DOC):
        return []
    own = {x for x in ours if x.startswith("## ")} | {"## Against the targets"}
    lines = open(DOC).read().split("\n")
    heads = [i for i, x in enumerate(lines) if x.startswith("## ")] + [len(lines)]
    out = []
    for i, j in zip(heads, heads[1:], strict=False):
        if lines[i] not in own:
            out += lines[i:j]
    return out


def main():
    if os.environ.get("OPENBLAS_CORETYPE") and "--keep-coretype" not in sys.argv:
        # the machine as it is: the AVX-512 sections measure OpenBLAS's own choice of
        # kernels (the AVX-512-off section sets its own coretype for its processes), and
        # OpenBLAS reads the variable once, when this process loads it
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        print("bench: OPENBLAS_CORETYPE unset for the run (was "
              f"{os.environ['OPENBLAS_CORETYPE']}; --keep-coretype keeps it)",
              file=sys.stderr)  # fmt: skip
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="machine,startup,encode,krr,select,trigfree,scale")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--keep-coretype", action="store_true",
                    help="keep OPENBLAS_CORETYPE (a CPU OpenBLAS misdetects)")  # fmt: skip
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    compile_rfcli()  # rfcli's bytecode, as an installed package has it
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    path = os.path.join(ROOT, "bench", "results", "benchmarks.json")
    res = json.load(open(path)) if os.path.exists(path) else {}
    work = tempfile.mkdtemp(prefix="rfcli-bench-")
    q = args.quick
    n64 = 20_000 if q else 200_000
    synth64 = synthetic(os.path.join(OUT, f"synth-d64-{n64}.parquet"), n64, 64)

    def data(name):
        return os.path.join(DATA, f"{name}.train.parquet"), os.path.join(
            DATA, f"{name}.test.parquet"
        )

    try:
        for part in args.only.split(","):
            load0 = os.getloadavg()[0]
            if part == "machine":
                res["machine"] = machine()
            elif part == "startup":
                res["startup"] = speed.startup_section()
            elif part == "encode":
                res["encode"] = speed.encode_section(synth64, "y", work, reps=1 if q else 9)
                res["encode"]["in_process"] = speed.encode_in_process(
                    synth64, "y", work, reps=2 if q else 5
                )
                # the same rows as on a CPU with AVX2 only (NumPy's cos is 5x slower there)
                res["encode_noavx512"] = speed.encode_section_without_avx512(
                    synth64, "y", work, reps=1 if q else 9
                )
            elif part == "krr":
                store = os.path.join(work, "krr.zarr")
                run_cli("encode", synth64, "-o", store, "--label", "y", "-m", 2048, "-b", 2,
                        "--gamma", 0.01, "--overwrite")  # fmt: skip
                res["krr"] = speed.krr_section(store, work)
                shutil.rmtree(store, ignore_errors=True)
            elif part == "select":
                cases = [
                    ("letter", *data("letter"), "label", ["--normalize-rows"], "svm", 1024),
                    ("optdigits", *data("optdigits"), "label", ["--standardize"], "svm", 1024),
                    ("diamonds", *data("diamonds"), "y", ["--standardize"], "krr", 1024),
                ]
                res["select"] = [speed.selection_section(*c, work) for c in cases[: 1 if q else 3]]
            elif part == "trigfree":
                res["trigfree"] = trigfree_section()
            elif part == "scale":
                res["scale"] = scale_section(
                    work,
                    [10_000, 100_000] if q else [100_000, 1_000_000, 10_000_000],
                    previous=None if q else res.get("scale"),
                )
            res.setdefault("load", {})[part] = [load0, os.getloadavg()[0]]
            with open(path, "w") as f:
                json.dump(res, f, indent=1, default=str)
            write_doc(res)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
