"""Small data against scikit-learn: fits on fewer rows than random features (the dual
paths of rfcli.learn.dual and rfcli.learn.dual_svm) next to scikit-learn's exact kernel
methods with the same selection.

    python bench/small_data.py [--repeats 3] [--only svm,krr,wine] [--data ../shared/data]

* svm: ``RandomFeatureSVC(n_features=1024).fit`` on the first 1,000 rows of letter (C by
  5-fold cross-validation over 0.01 .. 100) against ``GridSearchCV(SVC(), 5 C values,
  cv=5).fit``; test accuracy on letter's test rows.
* krr: ``RandomFeatureRidge(n_features=1024).fit`` on scikit-learn's diabetes (442 rows;
  alpha by 5-fold cross-validation) against ``GridSearchCV(KernelRidge(kernel="rbf"),
  5 alphas, cv=5).fit``; 5-fold R^2 of both around the fits (outer split, seed 0).
* wine: the same KRR pair on wine (178 rows, the class code as a real target).

rfcli runs on its default threads (every core, at most 8); scikit-learn's search runs
twice: as a default GridSearchCV (one core) and with ``n_jobs`` as many worker processes
(the same cores; the workers started before the turns).  The sides run in turns in this
one process, each timed in wall and CPU seconds (CPU of all the process's threads: the
n_jobs workers' CPU is not counted); the ratios are of the medians.  Prints the numbers
and writes build/bench/small_data.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
OUT = os.path.join(ROOT, "build", "bench")


def _letter(data: str, rows: int = 1000):
    import pyarrow.parquet as pq

    for d in (data, os.path.join(ROOT, "sample_data")):
        path = os.path.join(d, "letter.train.parquet")
        if os.path.exists(path):
            tr = pq.read_table(path).to_pandas()
            te = pq.read_table(os.path.join(d, "letter.test.parquet")).to_pandas()
            X = tr.drop(columns="label").to_numpy(np.float64)[:rows]
            return X, tr["label"].to_numpy()[:rows], te.drop(columns="label").to_numpy(
                np.float64), te["label"].to_numpy()  # fmt: skip
    raise SystemExit(f"letter.train.parquet not found in {data} or sample_data/")


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _turns(sides: dict, repeats: int) -> dict:
    """Each side's fit ``repeats`` times, the sides in turns; median wall and CPU seconds."""
    runs: dict = {k: {"wall": [], "cpu": []} for k in sides}
    last = {}
    for _ in range(repeats):
        for k, fn in sides.items():
            last[k], w, c = _timed(fn)
            runs[k]["wall"].append(w)
            runs[k]["cpu"].append(c)
    med = {k: {s: float(np.median(v[s])) for s in v} for k, v in runs.items()}
    return {"runs": runs, "median": med, "models": last}


def _sides(rf, sk, X, y) -> dict:
    """rfcli's fit (on its default threads), scikit-learn's search on one core (its
    default) and on as many worker processes as rfcli has threads (``n_jobs``: the same
    cores; its workers started once before the turns, which a user's first call pays)."""
    from rfcli.threads import default_threads

    jobs = default_threads()
    sk(n_jobs=jobs).fit(X, y)
    return {"rfcli": lambda: rf().fit(X, y), "sklearn": lambda: sk().fit(X, y),
            "sklearn_jobs": lambda: sk(n_jobs=jobs).fit(X, y)}  # fmt: skip


def bench_svm(data: str, repeats: int) -> dict:
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    from rfcli.sklearn import RandomFeatureSVC

    X, y, Xt, yt = _letter(data)
    sk = lambda **kw: GridSearchCV(SVC(), {"C": [0.01, 0.1, 1, 10, 100]}, cv=5, **kw)  # noqa: E731
    t = _turns(_sides(lambda: RandomFeatureSVC(n_features=1024), sk, X, y), repeats)
    rf, sk, _ = t.pop("models").values()
    t["rfcli_C"], t["sklearn_C"] = rf.C_, sk.best_params_["C"]
    t["rfcli_solver"] = rf.report_.get("solver", "primal")
    t["rfcli_multiclass"] = rf.model_.multiclass
    t["rfcli_test_accuracy"] = float(rf.score(Xt, yt))
    t["sklearn_test_accuracy"] = float(sk.score(Xt, yt))
    return t


def bench_krr(name: str, repeats: int) -> dict:
    from sklearn import datasets
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

    from rfcli.sklearn import RandomFeatureRidge

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    y = y.astype(np.float64)
    rf = lambda: RandomFeatureRidge(n_features=1024)  # noqa: E731

    def sk(**kw):
        grid = {"alpha": [1e-3, 1e-2, 1e-1, 1, 10]}
        return GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5, **kw)

    t = _turns(_sides(rf, sk, X, y), repeats)
    fitted = t.pop("models")
    t["rfcli_alpha"] = float(fitted["rfcli"].alpha_)
    t["rfcli_solver"] = fitted["rfcli"].report_.get("solver", "primal")
    outer = KFold(5, shuffle=True, random_state=0)
    t["rfcli_r2_5fold"] = float(np.mean(cross_val_score(rf(), X, y, cv=outer)))
    t["sklearn_r2_5fold"] = float(np.mean(cross_val_score(sk(), X, y, cv=outer)))
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="svm,krr,wine")
    a = ap.parse_args()
    out = {"cores": os.cpu_count(), "load_average": os.getloadavg()}
    for what in a.only.split(","):
        r = bench_svm(a.data, a.repeats) if what == "svm" else bench_krr(
            "diabetes" if what == "krr" else what, a.repeats)  # fmt: skip
        m = r["median"]
        r["ratio_wall"] = m["rfcli"]["wall"] / m["sklearn"]["wall"]
        r["ratio_cpu"] = m["rfcli"]["cpu"] / m["sklearn"]["cpu"]
        r["ratio_wall_same_cores"] = m["rfcli"]["wall"] / m["sklearn_jobs"]["wall"]
        out[what] = r
        print(f"{what}: rfcli {m['rfcli']['wall']:.2f} s wall / {m['rfcli']['cpu']:.2f} s CPU, "
              f"scikit-learn {m['sklearn']['wall']:.2f} / {m['sklearn']['cpu']:.2f}: ratio "
              f"{r['ratio_wall']:.2f} wall, {r['ratio_cpu']:.2f} CPU; scikit-learn with "
              f"n_jobs on the same cores {m['sklearn_jobs']['wall']:.2f} s wall: ratio "
              f"{r['ratio_wall_same_cores']:.2f}; "
              + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in r.items() if k.startswith(("rfcli_", "sklearn_"))))  # fmt: skip
    out["load_average_after"] = os.getloadavg()
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "small_data.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
