"""How often the codes from the phase (rfcli/quantize/phase.py) differ from cos-then-compare
on real data: the ../shared/data sets (a sample of each train split), each Fourier kernel
with gamma by the median heuristic, m = 2048, every threshold quantizer kind.

    python bench/phase_agreement.py [--rows 3000] [--out build/bench/phase_agreement.json]

Prints one JSON line per (set, kernel, quantizer) and a Markdown table for
docs/store-format.md (Codes from the phase).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DATA = os.path.join(ROOT, "..", "shared", "data")
#: set -> (label column, preprocessing as in the data README: unit rows or z-scores)
SETS = {
    "letter": ("label", "normalize"),
    "optdigits": ("label", "normalize"),
    "diamonds": ("y", "standardize"),
    "co2": ("y", "standardize"),
    "quakes": ("y", "standardize"),
}
KERNELS = ("gaussian", "laplacian", "matern32")


def load(name: str, rows: int) -> np.ndarray:
    label, prep = SETS[name]
    t = pq.read_table(os.path.join(DATA, f"{name}.train.parquet"))
    X = np.column_stack([t[c].to_numpy() for c in t.column_names if c != label])[:rows]
    X = X.astype(np.float64)
    if prep == "standardize":
        X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    else:
        X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
    return X


def quantizers(z_sample: np.ndarray):
    from rfcli.quantize import make_quantizer
    from rfcli.quantize.empirical import EmpiricalQuantizer

    out = [make_quantizer("lm", b) for b in (1, 2, 3, 4, 8)]
    out += [make_quantizer("lm2", 2), make_quantizer("uniform", 3), make_quantizer("sign", 1)]
    out.append(EmpiricalQuantizer.fit(z_sample, 3))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--m", type=int, default=2048)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "phase_agreement.json"))
    args = ap.parse_args()
    from rfcli.encoder import BLOCK_ROWS
    from rfcli.maps import make_map

    rows_out = []
    totals: dict[str, list[int]] = {}
    for name in SETS:
        X = load(name, args.rows)
        for kernel in KERNELS:
            fmap = make_map(kernel, args.m, gamma="auto", seed=0).fit(X.shape[1], X[:1000])
            blocks = [X[i : i + BLOCK_ROWS] for i in range(0, len(X), BLOCK_ROWS)]
            t = np.concatenate([fmap.transform_phase(b) for b in blocks])
            u = np.concatenate([fmap.transform_turns(b) for b in blocks])
            z = np.cos(t)
            big = int(np.count_nonzero(np.abs(u) > 2048))
            for q in quantizers(z[:200].ravel()):
                by_cos = q.codes(z)
                by_phase = q._phase_coder.codes(u)
                diff = by_cos != by_phase
                r = {
                    "set": name, "kernel": kernel, "quantizer": f"{q.kind}{q.bits}",
                    "codes": int(diff.size), "differ": int(diff.sum()),
                    "rows": len(X), "rows_differ": int(diff.any(axis=1).sum()),
                    "max_abs_t": float(np.abs(t).max()), "turns_over_2048": big,
                }  # fmt: skip
                rows_out.append(r)
                tot = totals.setdefault(r["quantizer"], [0, 0, 0, 0])
                tot[0] += r["codes"]
                tot[1] += r["differ"]
                tot[2] += r["rows"]
                tot[3] += r["rows_differ"]
                print(json.dumps(r), flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": rows_out, "totals": totals}, f, indent=1)
    print()
    print("| quantizer | codes compared | codes that differ | fraction | rows that differ |")
    print("|---|---|---|---|---|")
    for k, (n, d, nr, dr) in totals.items():
        print(f"| {k} | {n:,} | {d:,} | {d / n:.1e} | {dr:,} of {nr:,} |")


if __name__ == "__main__":
    main()
