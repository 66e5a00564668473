"""The other feature families on real data (issue 5): ternary random features against
their target's random features, NTK features against Gaussian RFF at equal bits, the
condition number of Han et al. ("Random Features for the Neural Tangent Kernel",
arXiv:2104.01351, 2021) for plain vs modified order-1 features, and positive features'
kernel error for linear vs log-domain empirical quantizers.

    python bench/families_report.py [--data ../shared/data] [--only trf,ntk,cond,positive]

Every accuracy cell runs the library pipeline end to end (encode train, encode test with
the train store's encoder, train KRR with alpha by 80/20 validation, evaluate).  Results
go to build/bench/families.json and docs/families-report.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from rfcli.jobs.encode import EncodeSettings, ReadSettings, encode  # noqa: E402
from rfcli.jobs.evaluate import evaluate  # noqa: E402
from rfcli.jobs.fit_quantizer import fit_quantizer_on_input  # noqa: E402
from rfcli.jobs.kernel_error import kernel_error_report  # noqa: E402
from rfcli.jobs.train import TrainSettings, train  # noqa: E402
from rfcli.maps import make_map  # noqa: E402

OUT = os.path.join(ROOT, "build", "bench")
DOC = os.path.join(ROOT, "docs", "families-report.md")


def cell(data, name, work, settings: EncodeSettings, model="krr", label="label"):
    """Encode train/test, train, evaluate: the test metrics plus bits per feature."""
    tag = f"{name}-{abs(hash(json.dumps(settings.__dict__, sort_keys=True, default=str)))}"
    tr, te, mo = (os.path.join(work, f"{tag}.{s}") for s in ("train.zarr", "test.zarr", "npz"))
    read = ReadSettings(label=label)
    t0 = time.perf_counter()
    res = encode(os.path.join(data, f"{name}.train.parquet"), tr, settings, read, overwrite=True)
    encode(os.path.join(data, f"{name}.test.parquet"), te, like=tr, overwrite=True)
    train(tr, mo, TrainSettings(model=model), overwrite=True)
    ev = evaluate(mo, te)
    for p in (tr, te):
        shutil.rmtree(p, ignore_errors=True)
    return {
        "accuracy": ev.get("accuracy"),
        "bits": res.encoder.quantizer.bits_per_feature,
        "fitted": res.encoder.fmap.fitted_params(),
        "seconds": time.perf_counter() - t0,
    }


def trf_section(data, work, sets, ms, targets):
    rows = []
    for name in sets:
        for m in ms:
            for target in targets:
                opts = {"target": target}
                base = dict(n_features=m, normalize_rows=True, map_options=opts)
                act = cell(data, name, work, EncodeSettings(kernel="activation", **base))
                ter = cell(
                    data, name, work, EncodeSettings(kernel="ternary", quantizer="trits", **base)
                )
                row = {
                    "set": name,
                    "m": m,
                    "target": target,
                    "activation_accuracy": act["accuracy"],
                    "ternary_accuracy": ter["accuracy"],
                    "ternary_bits": ter["bits"],
                    "thresholds": ter["fitted"],
                }
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def ntk_section(data, work, sets, ms):
    rows = []
    for name in sets:
        for m in ms:
            for label, kw in (
                ("gaussian rff, lm 2 bits", dict(kernel="gaussian", quantizer="lm", bits=2)),
                ("ntk depth 1, empirical 2 bits", dict(kernel="ntk")),
                (
                    "ntk depth 1 modified, empirical 2 bits",
                    dict(kernel="ntk", map_options={"modified": True}),
                ),  # fmt: skip
                ("ntk depth 2, empirical 2 bits", dict(kernel="ntk", map_options={"depth": 2})),
                ("ntk depth 1, float32", dict(kernel="ntk", quantizer="none", bits=32)),
            ):
                r = cell(data, name, work, EncodeSettings(n_features=m, normalize_rows=True, **kw))
                row = {"set": name, "m": m, "features": label, **r}
                row.pop("fitted")
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def load_rows(data, name, n, label="label"):
    t = pq.read_table(os.path.join(data, f"{name}.train.parquet"))
    X = np.column_stack([t[c].to_numpy() for c in t.column_names if c != label])[:n]
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def cond_section(data, sets, m1s, n=1000, seeds=5):
    """Han et al. (2021)'s metric for the order-1 arc-cosine kernel: condition number of
    (K + lam I)^{-1/2} (Phi Phi' + lam I) (K + lam I)^{-1/2}, lam = 1e-4 n, and the kernel
    MSE; mean over seeds."""
    rows = []
    for name in sets:
        X = load_rows(data, name, n)
        K = make_map("arccos1", 8).fit_data(X).kernel(X, X)
        lam = 1e-4 * n
        e, U = np.linalg.eigh(K)
        inv_sqrt = (U / np.sqrt(np.maximum(e, 0.0) + lam)) @ U.T
        for m1 in m1s:
            for modified in (False, True):
                conds, mses = [], []
                for s in range(seeds):
                    f = make_map("arccos1", m1, seed=s, modified=modified).fit_data(X)
                    F = f.transform(X).astype(np.float64)
                    Kh = F @ F.T
                    ev = np.linalg.eigvalsh(inv_sqrt @ (Kh + lam * np.eye(n)) @ inv_sqrt)
                    conds.append(float(ev[-1] / ev[0]))
                    mses.append(float(np.mean((Kh - K) ** 2)))
                row = {
                    "set": name,
                    "m1": m1,
                    "modified": modified,
                    "condition_number": float(np.mean(conds)),
                    "condition_number_sd": float(np.std(conds, ddof=1)),
                    "kernel_mse": float(np.mean(mses)),
                }
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def positive_section(data, work, Ds, bits_list, gamma=0.25, name="letter", n=1000):
    rows = []
    train_path = os.path.join(data, f"{name}.train.parquet")
    read = ReadSettings(label="label")
    for D in Ds:
        base = dict(kernel="positive", n_features=D, normalize_rows=True, gamma=gamma)
        fpath = os.path.join(work, f"pos{D}.float.zarr")
        encode(train_path, fpath, EncodeSettings(quantizer="none", bits=32, **base), read,
               overwrite=True)  # fmt: skip
        variants = [("float32", 32, None)]
        for b in bits_list:
            for domain in ("linear", "log"):
                q = fit_quantizer_on_input(fpath, train_path, b, domain=domain)
                variants.append((f"empirical {domain}", b, q.to_config()))
        for label, b, qcfg in variants:
            if qcfg is None:
                path = fpath
            else:
                path = os.path.join(work, f"pos{D}.{label.split()[-1]}{b}.zarr")
                encode(train_path, path, EncodeSettings(quantizer_config=qcfg, **base), read,
                       overwrite=True)  # fmt: skip
            rep = kernel_error_report(path, train_path, rows=n)
            row = {
                "D": D,
                "quantizer": label,
                "bits": b,
                "rel_frobenius": rep["plain"]["rel_frobenius"],
                "rel_frobenius_normalized": rep["normalized"]["rel_frobenius"],
                "rel_spectral_scaled": rep["plain"]["rel_spectral_scaled"],
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
            if path != fpath:
                shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(fpath, ignore_errors=True)
    return rows


def _best_time(fn, *args, reps=5):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t0)
    return min(ts)


def projection_section(n=8192, m=4096, ds=(16, 64, 256), eps_list=(0.0, 0.5, 0.9), reps=5):
    """TRF's projection X W: dense float32 GEMM (what encode uses) against a sparse
    (CSR) product that skips the zero weights; best of ``reps`` runs, same process."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    rows = []
    for d in ds:
        X = rng.standard_normal((n, d)).astype(np.float32)
        for eps in eps_list:
            f = make_map("ternary", m, sparsity=eps, target="relu")
            f.fit(d)
            W = f._weights()
            S = sp.csr_matrix(W)
            XT = np.ascontiguousarray(X.T)

            dense = _best_time(np.matmul, X, W, reps=reps)
            sparse = _best_time(lambda a, b: (a @ b).T, S.T, XT, reps=reps)
            row = {"d": d, "sparsity": eps, "dense_s": dense, "sparse_s": sparse,
                   "sparse_over_dense": sparse / dense}  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def fmt(v, pct=False):
    if v is None:
        return "–"
    return f"{100 * v:.2f}%" if pct else f"{v:.4g}"


def write_doc(res):
    L = ["# Other feature families on real data (issue 5)", ""]
    L += [
        "Generated by `python bench/families_report.py` (numbers below are from one run on",
        "the 2-core development machine; accuracies are on the test splits of",
        "`../shared/data`, rows unit-normalized, KRR with alpha chosen on an 80/20",
        "validation split of train, one-vs-rest targets).",
        "",
    ]
    if "trf" in res:
        L += [
            "## Ternary random features vs their target's random features",
            "",
            "`activation`: Gaussian weights and the target activation, float32 features (32",
            "bits). `ternary`: ternary weights, thresholds fitted to the target's generalized",
            "Gaussian moments (tau = 1 after row normalization), stored as trits (1.6 bits).",
            "",
            "| set | m | target | activation (32 bits) | TRF (1.6 bits) | difference | s-, s+ (pattern) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in res["trf"]:
            th = r["thresholds"]
            L.append(
                f"| {r['set']} | {r['m']} | {r['target']} | {fmt(r['activation_accuracy'], 1)} | "
                f"{fmt(r['ternary_accuracy'], 1)} | "
                f"{100 * (r['ternary_accuracy'] - r['activation_accuracy']):+.2f} | "
                f"{th['s_minus']:.4f}, {th['s_plus']:.4f} ({th['pattern']}) |"
            )
        L.append("")
    if "ntk" in res:
        L += [
            "## NTK features vs Gaussian RFF at equal bits per sample",
            "",
            "| set | m | features | bits/feature | accuracy |",
            "|---|---|---|---|---|",
        ]
        for r in res["ntk"]:
            L.append(
                f"| {r['set']} | {r['m']} | {r['features']} | {r['bits']} | "
                f"{fmt(r['accuracy'], 1)} |"
            )
        L.append("")
    if "cond" in res:
        L += [
            "## Plain vs modified order-1 arc-cosine features (the metric of Han et al. 2021)",
            "",
            "Condition number of (K + lam I)^{-1/2} (Phi Phi' + lam I) (K + lam I)^{-1/2},",
            "lam = 1e-4 n, n = 1000 training rows (unit-normalized), mean (sd) over 5 seeds;",
            "K the exact order-1 arc-cosine kernel.",
            "",
            "| set | m1 | plain: condition number | modified | plain: kernel MSE | modified |",
            "|---|---|---|---|---|---|",
        ]
        by = {(r["set"], r["m1"], r["modified"]): r for r in res["cond"]}
        for s, m1, mod in by:
            if mod:
                continue
            p, q = by[(s, m1, False)], by[(s, m1, True)]
            L.append(
                f"| {s} | {m1} | {p['condition_number']:.1f} ({p['condition_number_sd']:.1f}) | "
                f"{q['condition_number']:.1f} ({q['condition_number_sd']:.1f}) | "
                f"{p['kernel_mse']:.3g} | {q['kernel_mse']:.3g} |"
            )
        L.append("")
    if "projection" in res:
        L += [
            "## TRF projection: dense GEMM vs sparse product",
            "",
            "X (8192 x d, float32) times ternary W (d x 4096): dense float32 GEMM (OpenBLAS, what",
            "encode uses) against a CSR sparse product that skips zero weights (scipy); best of",
            "5 runs in the same process.  Ratio > 1: the sparse product is slower.",
            "",
            "| d | sparsity | dense ms | sparse ms | sparse / dense |",
            "|---|---|---|---|---|",
        ]
        for r in res["projection"]:
            L.append(
                f"| {r['d']} | {r['sparsity']} | {1e3 * r['dense_s']:.1f} | "
                f"{1e3 * r['sparse_s']:.1f} | {r['sparse_over_dense']:.1f} |"
            )
        L.append("")
    if "positive" in res:
        L += [
            "## Positive random features: kernel error vs D, linear vs log-domain quantizer",
            "",
            "letter, unit-normalized rows, beta (gamma) = 0.25, 1000 training rows; relative",
            "Frobenius error of the decoded plain and normalized estimators against the exact",
            "Gaussian kernel.  Empirical quantizers fitted on 200,000 feature values.",
            "",
            "| D | quantizer | bits | rel. Frobenius (plain) | (normalized) | rel. spectral (scaled) |",
            "|---|---|---|---|---|---|",
        ]
        for r in res["positive"]:
            L.append(
                f"| {r['D']} | {r['quantizer']} | {r['bits']} | {r['rel_frobenius']:.4f} | "
                f"{r['rel_frobenius_normalized']:.4f} | {r['rel_spectral_scaled']:.4f} |"
            )
        L.append("")
    L += OBSERVATIONS
    with open(DOC, "w") as f:
        f.write("\n".join(L))


OBSERVATIONS = [
    "## What the tables show",
    "",
    "* **TRF.** The fitted thresholds reproduce the target's generalized Gaussian moments",
    "  d1, d2 to better than 1e-13 (tests: relu, abs, cos, sin, erf, tanh at tau = 0.25, 0.5,",
    "  1). On optdigits (d = 64) TRF at 1.6 bits per feature is within 1 point of the",
    "  full-precision target features at m = 4096 for all three targets (relu -0.85, cos",
    "  -0.44, erf -0.58) and within about 2 points at m = 1024. On letter (d = 16) the gap",
    "  is 3.5-4.6 points at m = 4096 (6.5-8.6 at m = 1024), so the issue's \"within 1 point",
    "  on two sets\" holds on one of the two classification sets available. Ali et al. (2022)'s",
    "  equivalence is asymptotic in the dimension (the kernels match spectrally when",
    "  p, n grow together); letter's 16 non-negative integer features are far from that",
    "  regime, and standardizing them first (tested) makes the gap larger, not smaller.",
    "  TRF's storage is 20x below float32 and its projection needs no multiplications,",
    "  but on a CPU the dense float32 GEMM of ternary weights beats a sparse product even",
    "  at 90% zeros (table above), so encode keeps the GEMM.",
    "* **NTK vs Gaussian RFF at 2 bits.** On letter at m = 4096 the NTK features (depth 1,",
    "  empirical 2-bit quantizer) match 2-bit LM Gaussian RFF (91.8-92.0% vs 91.6%); on",
    "  optdigits Gaussian RFF is ahead (99.2% vs 98.3-98.4%). Depth 2 is not better than",
    "  depth 1 here. The 2-bit empirical quantizer costs the NTK features 1-2 points against",
    "  float32 (letter 94.1% at m = 4096).",
    "* **Modified order-1 features** have the smaller condition number in all six cells",
    "  (e.g. letter m1 = 100: 14.5 vs 17.8; optdigits m1 = 300: 14.5 vs 15.0), as Han et al. (2021)",
    "  reports; the gain shrinks as m1 grows. Their kernel MSE is lower in 4 of 6 cells.",
    "* **Positive features: linear vs log-domain quantizer.** At 4 bits the log-domain",
    "  quantizer has the smaller plain and scaled-spectral error at every D; at 2 bits the",
    "  linear one has the smaller plain error (it keeps the few large values that dominate",
    "  the kernel), the log one the smaller normalized and spectral error. `encode",
    "  --quantizer empirical` therefore fits in the log domain for positive features at 3",
    "  bits or more (`--quantizer-domain auto`). These features are heavy-tailed: the plain",
    "  float32 error does not fall monotonically with D (0.108, 0.104, 0.023 at D = 256,",
    "  1024, 4096), as the nmfkc documentation of positive features warns (they need a larger D than cosine RFF).",
    "",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--only", default="trf,ntk,cond,projection,positive")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "families.json")
    res = json.load(open(path)) if os.path.exists(path) else {}
    work = tempfile.mkdtemp(prefix="rfcli-families-")
    try:
        for part in args.only.split(","):
            if part == "trf":
                res["trf"] = trf_section(
                    args.data, work, ["letter", "optdigits"], [1024, 4096], ["relu", "cos", "erf"]
                )
            elif part == "ntk":
                res["ntk"] = ntk_section(args.data, work, ["letter", "optdigits"], [1024, 4096])
            elif part == "cond":
                res["cond"] = cond_section(args.data, ["letter", "optdigits"], [100, 300, 1000])
            elif part == "projection":
                res["projection"] = projection_section()
            elif part == "positive":
                res["positive"] = positive_section(args.data, work, [256, 1024, 4096], [2, 4])
            with open(path, "w") as f:
                json.dump(res, f, indent=1)
            write_doc(res)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
