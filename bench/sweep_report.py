"""Accuracy / MSE against bits per sample on the real datasets (the experiments of Li & Li,
"Quantization Algorithms for Random Fourier Features", ICML 2021, Section 5), with
exact-kernel ceilings from scikit-learn (benchmark extra only).

    python bench/sweep_report.py [--data ../shared/data] [--sets letter,optdigits,...]

Results are appended to build/bench/sweep.jsonl as they come (a rerun skips finished
combinations) and summarized in docs/sweep-report.md with one plot per dataset.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from rfcli.jobs.encode import EncodeSettings, ReadSettings  # noqa: E402
from rfcli.jobs.sweep import plot, sweep  # noqa: E402
from rfcli.jobs.train import TrainSettings  # noqa: E402

OUT = os.path.join(ROOT, "build", "bench")
SETS = {
    # name: (model, label, preprocessing)
    "letter": ("svm", "label", dict(normalize_rows=True)),
    "optdigits": ("svm", "label", dict(normalize_rows=True)),
    "diamonds": ("krr", "y", dict(standardize=True)),
    "quakes": ("krr", "y", dict(standardize=True)),
    "co2": ("krr", "y", dict(standardize=True)),
}


def load(data, name, split):
    t = pq.read_table(os.path.join(data, f"{name}.{split}.parquet"))
    label = SETS[name][1]
    X = np.column_stack([t[c].to_numpy() for c in t.column_names if c != label]).astype(np.float64)
    return X, t[label].to_numpy()


def exact_ceiling(data, name, gamma, seed=0):
    """Exact kernel machine with the same kernel (gamma) and preprocessing, C/alpha tuned on
    an 80/20 split of train then refit; KRR on at most 10000 training rows."""
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.svm import SVC

    model = SETS[name][0]
    Xtr, ytr = load(data, name, "train")
    Xte, yte = load(data, name, "test")
    if SETS[name][2].get("normalize_rows"):
        Xtr = Xtr / np.linalg.norm(Xtr, axis=1, keepdims=True)
        Xte = Xte / np.linalg.norm(Xte, axis=1, keepdims=True)
    else:
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    rng = np.random.default_rng(seed)
    if model == "krr" and len(Xtr) > 10000:
        keep = rng.choice(len(Xtr), 10000, replace=False)
        Xtr, ytr = Xtr[keep], ytr[keep]
    perm = rng.permutation(len(Xtr))
    cut = int(0.8 * len(Xtr))
    tr, va = perm[:cut], perm[cut:]
    t0 = time.perf_counter()
    if model == "svm":
        grid = [0.1, 1, 10, 100, 1000]
        scores = [SVC(C=C, gamma=gamma).fit(Xtr[tr], ytr[tr]).score(Xtr[va], ytr[va]) for C in grid]
        best = grid[int(np.argmax(scores))]
        acc = SVC(C=best, gamma=gamma).fit(Xtr, ytr).score(Xte, yte)
        return {
            "model": "exact SVC",
            "C": best,
            "accuracy": acc,
            "seconds": time.perf_counter() - t0,
            "train_rows": len(Xtr),
        }
    grid = 10.0 ** np.arange(-6, 2)
    ym = ytr.mean()
    mses = [
        np.mean(
            (
                KernelRidge(alpha=a, kernel="rbf", gamma=gamma)
                .fit(Xtr[tr], ytr[tr] - ym)
                .predict(Xtr[va])
                + ym
                - ytr[va]
            )
            ** 2
        )
        for a in grid
    ]
    best = grid[int(np.argmin(mses))]
    pred = KernelRidge(alpha=best, kernel="rbf", gamma=gamma).fit(Xtr, ytr - ym).predict(Xte) + ym
    return {
        "model": "exact KRR",
        "alpha": best,
        "mse": float(np.mean((pred - yte) ** 2)),
        "seconds": time.perf_counter() - t0,
        "train_rows": len(Xtr),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--sets", default="letter,optdigits,diamonds,quakes,co2")
    ap.add_argument("--features", default="256,1024,4096")
    ap.add_argument("--bits", default="1,2,4,none")
    ap.add_argument("--quantizers", default="lm,stoc")
    ap.add_argument("--no-exact", action="store_true")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    log = os.path.join(OUT, "sweep.jsonl")
    done = []
    if os.path.exists(log):
        done = [json.loads(line) for line in open(log)]
    feats = [int(f) for f in args.features.split(",")]
    bits = [b if b == "none" else int(b) for b in args.bits.split(",")]
    for name in args.sets.split(","):
        model, label, pre = SETS[name]
        for m in feats:
            for b in bits:
                for q in ["none"] if b == "none" else args.quantizers.split(","):
                    bb = 32 if b == "none" else b
                    if any(
                        r["set"] == name
                        and r.get("features") == m
                        and r.get("bits") == bb
                        and r.get("quantizer") == q
                        for r in done
                    ):
                        continue
                    rows = sweep(
                        os.path.join(args.data, f"{name}.train.parquet"),
                        os.path.join(args.data, f"{name}.test.parquet"),
                        bits=[b],
                        features=[m],
                        quantizers=[q],
                        encode_settings=EncodeSettings(**pre),
                        read=ReadSettings(label=label),
                        train_settings=TrainSettings(model=model),
                    )
                    for r in rows:
                        r["set"] = name
                        print(json.dumps(r), flush=True)
                        with open(log, "a") as f:
                            f.write(json.dumps(r) + "\n")
                        done.append(r)
        if not args.no_exact and not any(
            r["set"] == name and r.get("model", "").startswith("exact") for r in done
        ):
            gamma = next(r["gamma"] for r in done if r["set"] == name and "gamma" in r)
            r = {"set": name, **exact_ceiling(args.data, name, gamma), "gamma": gamma}
            print(json.dumps(r), flush=True)
            with open(log, "a") as f:
                f.write(json.dumps(r) + "\n")
            done.append(r)
    write_markdown(done)


def write_markdown(rows):
    lines = [
        "# Accuracy against bits per sample (real data)",
        "",
        "Generated by `bench/sweep_report.py` from build/bench/sweep.jsonl. Each cell: encode train "
        "(Gaussian kernel, gamma from the median heuristic, seed 0), encode test with `--like`, train "
        "with hyperparameters chosen on an 80/20 validation split of train (SVM: C in 0.01..100; KRR: "
        "alpha grid), then one evaluation on the test split. Classification: instance-normalized rows, "
        "squared-hinge linear SVM, one-vs-rest; regression: standardized columns, KRR, MSE in y units. "
        "Exact-kernel rows: scikit-learn SVC / KernelRidge with the same gamma and preprocessing, "
        "C/alpha tuned the same way (KRR on at most 10000 training rows).",
        "",
    ]
    for name in dict.fromkeys(r["set"] for r in rows):
        rs = [r for r in rows if r["set"] == name and not r.get("model", "").startswith("exact")]
        ex = [r for r in rows if r["set"] == name and r.get("model", "").startswith("exact")]
        if not rs:
            continue
        metric = "accuracy" if "accuracy" in rs[0] else "mse"
        feats = sorted({r["features"] for r in rs})
        lines += [
            f"## {name} ({rs[0]['model']}, test {metric}; gamma = {rs[0]['gamma']:.4g})",
            "",
            "| quantizer | bits | " + " | ".join(f"m={m}" for m in feats) + " |",
            "|---|---|" + "---|" * len(feats),
        ]
        keys = sorted(
            {(r["quantizer"], r["bits"]) for r in rs}, key=lambda k: (k[0] == "none", k[0], k[1])
        )
        for q, b in keys:
            cells = []
            for m in feats:
                hit = [
                    r for r in rs if r["quantizer"] == q and r["bits"] == b and r["features"] == m
                ]
                cells.append(f"{hit[0][metric]:.4f}" if hit else "")
            lines.append(
                f"| {'full (float32)' if q == 'none' else q} | {b} | " + " | ".join(cells) + " |"
            )
        for e in ex:
            val = e.get("accuracy", e.get("mse"))
            lines.append(
                f"| {e['model']} | - | {val:.4f} (all m; {e['train_rows']} train rows, {e['seconds']:.0f} s) |"
                + " |" * (len(feats) - 1)
            )
        png = f"sweep-{name}.png"
        try:
            plot(rs, os.path.join(ROOT, "docs", png), metric)
            lines += ["", f"![{name}]({png})"]
        except Exception as e:  # matplotlib missing: table only
            lines += ["", f"(no plot: {e})"]
        lines.append("")
    with open(os.path.join(ROOT, "docs", "sweep-report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
