"""rfcli.sklearn on the shared real data sets, as arrays: accuracy and MSE against tuned exact
kernel methods, GP regression against ``rfcli train --model gpr`` on the files, and the peak
memory of a large ridge fit.  Needs the bench extra (scikit-learn, pandas).

    python bench/sklearn_report.py [--data ../shared/data] [--sections exact,svm,ridge,gpr,memory]

Each section prints its numbers and adds them to build/bench/sklearn/results.json.

* exact: tuned exact SVC (scikit-learn, RBF) after StandardScaler: gamma in
  gamma_0 * 2^{-2..3} (gamma_0 = 1 / median squared distance of 1000 standardized rows), C in
  {1, 10, 100}, chosen on an 80/20 split of train (seed 0), refitted on all of train.
* svm: make_pipeline(StandardScaler(), RandomFeatureSVC(n_features=2048, bits=2)) with
  GridSearchCV(cv=3) over gamma in gamma_0 * 2^{-2..3} and C in {10, 100}.
* ridge: RandomFeatureRidge on diamonds (z-scored inputs, alpha by 5-fold CV, gamma by the
  search; m x b in 2048x2, 2048x4, 4096x2), test MSE in y units against the README's tuned
  exact KRR (0.01213).
* gpr: GLFRegressor on co2 and quakes arrays against ``rfcli train --model gpr --label y``
  run as a command on the files (likelihood, hyperparameters, test MSE, predictions).
* memory: RandomFeatureRidge(n_features=2048).fit on a 1M x 32 float32 array in a fresh
  process: VmHWM before and after the fit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq
from cli_peak import compile_rfcli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
OUT = os.path.join(ROOT, "build", "bench", "sklearn")
RFCLI = [sys.executable, "-m", "rfcli"]


def load(data: str, name: str, label: str):
    tr = pq.read_table(os.path.join(data, f"{name}.train.parquet")).to_pandas()
    te = pq.read_table(os.path.join(data, f"{name}.test.parquet")).to_pandas()
    return tr.drop(columns=label), tr[label], te.drop(columns=label), te[label]


def median_gamma(X) -> float:
    """1 / median squared distance of 1000 standardized rows (seed 0)."""
    from sklearn.preprocessing import StandardScaler

    Z = StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))
    idx = np.random.default_rng(0).choice(len(Z), size=min(1000, len(Z)), replace=False)
    S = Z[idx]
    sq = (S**2).sum(1)
    D = sq[:, None] + sq[None, :] - 2 * S @ S.T
    return float(1.0 / np.median(D[np.triu_indices(len(S), 1)]))


def exact_svc(data: str, name: str) -> dict:
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y, Xt, yt = load(data, name, "label")
    g0 = median_gamma(X)
    Xa, Xv, ya, yv = train_test_split(X, y, test_size=0.2, random_state=0)
    best, scores = None, {}
    t0 = time.perf_counter()
    for k in range(-2, 4):
        for C in (1.0, 10.0, 100.0):
            g = g0 * 2.0**k
            acc = make_pipeline(StandardScaler(), SVC(gamma=g, C=C)).fit(Xa, ya).score(Xv, yv)
            scores[f"gamma={g:.4g},C={C:g}"] = acc
            if best is None or acc > best[0]:
                best = (acc, g, C)
    _, g, C = best
    model = make_pipeline(StandardScaler(), SVC(gamma=g, C=C)).fit(X, y)
    return {"set": name, "model": "exact SVC (StandardScaler)", "gamma": g, "C": C,
            "gamma_0": g0, "validation": scores, "test_accuracy": model.score(Xt, yt),
            "seconds": time.perf_counter() - t0}  # fmt: skip


def rf_svc(data: str, name: str) -> dict:
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from rfcli.sklearn import RandomFeatureSVC

    X, y, Xt, yt = load(data, name, "label")
    g0 = median_gamma(X)
    pipe = make_pipeline(StandardScaler(), RandomFeatureSVC(n_features=2048, bits=2))
    grid = {"randomfeaturesvc__gamma": [g0 * 2.0**k for k in range(-2, 4)],
            "randomfeaturesvc__C": [10.0, 100.0]}  # fmt: skip
    t0 = time.perf_counter()
    search = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    secs = time.perf_counter() - t0
    best = search.best_estimator_
    return {"set": name, "model": "StandardScaler + RandomFeatureSVC(2048, 2 bits)",
            "best_params": {k.split("__")[1]: v for k, v in search.best_params_.items()},
            "gamma_0": g0, "cv_accuracy": float(search.best_score_),
            "test_accuracy": float(best.score(Xt, yt)), "seconds": secs,
            "refit_report": {k: best[-1].report_[k] for k in ("passes", "iterations",
                                                               "converged")}}  # fmt: skip


def rf_ridge(data: str, n_features: int, bits: int) -> dict:
    from rfcli.sklearn import RandomFeatureRidge

    X, y, Xt, yt = load(data, "diamonds", "y")
    t0 = time.perf_counter()
    reg = RandomFeatureRidge(n_features=n_features, bits=bits, standardize=True,
                             gamma="search").fit(X, y)  # fmt: skip
    secs = time.perf_counter() - t0
    mse = float(np.mean((reg.predict(Xt) - yt.to_numpy()) ** 2))
    return {"set": "diamonds", "model": f"RandomFeatureRidge({n_features}, {bits} bits, "
            "standardize, gamma search)", "gamma": reg.gamma_, "alpha": reg.alpha_,
            "test_mse": mse, "exact_krr_mse": 0.01213, "ratio": mse / 0.01213,
            "seconds": secs}  # fmt: skip


def gpr_vs_cli(data: str, name: str) -> dict:
    from rfcli.learn.model_file import load_model
    from rfcli.sklearn import GLFRegressor

    X, y, Xt, yt = load(data, name, "y")
    tmp = tempfile.mkdtemp()
    model_path, pred_path = os.path.join(tmp, "cli.npz"), os.path.join(tmp, "p.npy")
    train = os.path.join(data, f"{name}.train.parquet")
    test = os.path.join(data, f"{name}.test.parquet")
    compile_rfcli()  # rfcli's bytecode, as an installed package has it
    t0 = time.perf_counter()
    subprocess.run([*RFCLI, "train", train, "--model", "gpr", "--label", "y", "-o", model_path],
                   check=True, capture_output=True)  # fmt: skip
    cli_secs = time.perf_counter() - t0
    ev = json.loads(subprocess.run([*RFCLI, "evaluate", model_path, test, "--json"], check=True,
                                   capture_output=True, text=True).stdout)  # fmt: skip
    subprocess.run([*RFCLI, "predict", model_path, test, "-o", pred_path], check=True,
                   capture_output=True)  # fmt: skip
    cli = load_model(model_path)[0].info
    t0 = time.perf_counter()
    gp = GLFRegressor().fit(X, y)
    py_secs = time.perf_counter() - t0
    mean, std = gp.predict(Xt, return_std=True)
    p = np.load(pred_path)
    same = {
        "log_marginal_likelihood": gp.log_marginal_likelihood_ == cli["log_marginal_likelihood"],
        "lengthscale": gp.lengthscale_.tolist() == cli["lengthscale"],
        "noise_variance": gp.noise_variance_ == cli["noise_variance"],
        "signal_variance": gp.signal_variance_ == cli["signal_variance"],
    }
    return {"set": name, "features": gp.features_, "n_features": gp.encoder_.n_features,
            "cli": {k: cli[k] for k in ("log_marginal_likelihood", "lengthscale",
                                        "noise_variance", "signal_variance")},
            "python": {"log_marginal_likelihood": gp.log_marginal_likelihood_,
                       "lengthscale": gp.lengthscale_.tolist(),
                       "noise_variance": gp.noise_variance_,
                       "signal_variance": gp.signal_variance_},
            "identical": same, "cli_test_mse": ev["mse"],
            "python_test_mse": float(np.mean((mean - yt.to_numpy()) ** 2)),
            "max_abs_mean_diff_vs_cli_predict": float(np.abs(p[:, 0] - mean).max()),
            "max_rel_std_diff_vs_cli_predict": float(np.abs(p[:, 1] / std - 1).max()),
            "cli_seconds": cli_secs, "python_seconds": py_secs}  # fmt: skip


MEMORY_CHILD = r"""
import json, sys, time
import numpy as np
def hwm():
    return int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]) * 1024
def rss():
    return int([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1]) * 1024
from rfcli.sklearn import RandomFeatureRidge
n, d, m = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
X = np.empty((n, d), dtype=np.float32)
for i in range(0, n, 1 << 16):  # in blocks: no float64 temporary of the whole array
    X[i : i + (1 << 16)] = rng.standard_normal((min(1 << 16, n - i), d), dtype=np.float32)
y = np.sin(X[:, 0]).astype(np.float64) + 0.5 * X[:, 1] * X[:, 2]
before, rss0 = hwm(), rss()
t = time.perf_counter()
reg = RandomFeatureRidge(n_features=m).fit(X, y)
secs = time.perf_counter() - t
print(json.dumps({"rows": n, "inputs": d, "n_features": m, "input_bytes": X.nbytes + y.nbytes,
                  "rss_before_fit": rss0, "hwm_before_fit": before, "hwm_after_fit": hwm(),
                  "alpha": reg.alpha_, "train_r2_first_100k": reg.score(X[:100000], y[:100000]),
                  "fit_seconds": secs}))
"""


def memory(n: int = 1_000_000, d: int = 32, m: int = 2048) -> dict:
    r = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(n), str(d), str(m)], check=True,
                       capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["fit_peak_over_before"] = out["hwm_after_fit"] - out["rss_before_fit"]
    out["n_x_m_float32_bytes"] = n * m * 4
    out["m2_float64_bytes"] = (m + 2) ** 2 * 8
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--sections", default="exact,svm,ridge,gpr,memory")
    ap.add_argument("--sets", default="letter,optdigits")
    ap.add_argument("--ridge-configs", default="2048x2,2048x4,4096x2",
                    help="n_features x bits of the ridge section's fits")  # fmt: skip
    ap.add_argument(
        "--memory-rows",
        default="1000000,250000",
        help="rows of the memory section's arrays (the peak must not grow with them)",
    )
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "results.json")
    results = json.load(open(path)) if os.path.exists(path) else {}
    sections = a.sections.split(",")
    sets = a.sets.split(",")

    def record(key, value):
        results[key] = value
        print(json.dumps({key: value}, indent=1, default=float), flush=True)
        with open(path, "w") as f:
            json.dump(results, f, indent=1, default=float)

    for name in sets:
        if "exact" in sections:
            record(f"exact/{name}", exact_svc(a.data, name))
        if "svm" in sections:
            record(f"svm/{name}", rf_svc(a.data, name))
    if "ridge" in sections:
        for cfg in a.ridge_configs.split(","):
            m, b = map(int, cfg.split("x"))
            record(f"ridge/diamonds/{m}x{b}", rf_ridge(a.data, m, b))
    if "gpr" in sections:
        for name in ("co2", "quakes"):
            record(f"gpr/{name}", gpr_vs_cli(a.data, name))
    if "memory" in sections:
        for n in map(int, a.memory_rows.split(",")):
            record(f"memory/{n}", memory(n))


if __name__ == "__main__":
    main()
