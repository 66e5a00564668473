"""Helpers shared by the tests (plain functions and constants; the fixtures are in
tests/conftest.py).  Import them as ``from tests.helpers import ...``: the repository root is
on ``sys.path`` (pyproject.toml sets pytest's ``pythonpath``, and ``python -m pytest`` from
the root adds it too), so this works for the whole suite and for a single test file."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rfcli import EncodeSettings, ReadSettings, encode

#: the repository root and its sample data
ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"
LETTER = SAMPLE / "letter.train.parquet"
LETTER_TEST = SAMPLE / "letter.test.parquet"


def letter_matrix(n: int = 600) -> np.ndarray:
    """The feature columns of the first ``n`` rows of letter.train, float64."""
    t = pq.read_table(LETTER).slice(0, n)
    return np.column_stack([t[c].to_numpy() for c in t.column_names if c != "label"]).astype(
        np.float64
    )


def write_parquet(path, **cols) -> str:
    pq.write_table(pa.table(cols), path)
    return os.fspath(path)


def tree_digest(path) -> dict[str, str]:
    """SHA-256 of every file under ``path`` by relative name (whole-store comparisons)."""
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def edit_meta(store, fn) -> None:
    """Apply ``fn`` to a store's rfcli metadata (the dict) and write it back in place."""
    f = os.path.join(store, "zarr.json")
    with open(f) as fh:
        doc = json.load(fh)
    fn(doc["attributes"]["rfcli"])
    with open(f, "w") as fh:
        json.dump(doc, fh)


def chunk_files_digest(store: pathlib.Path) -> str:
    """One SHA-256 over the names and bytes of a store's code chunk files."""
    h = hashlib.sha256()
    for p in sorted((store / "codes").rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(store)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def run(src, out, chunk_rows=8192, threads=1, **kw):
    """Encode ``src`` into the store ``out`` (overwriting it): the read settings
    (columns, label, ids, on_nan) and ``like`` from ``kw``, the rest encode settings."""
    read_kw = {k: kw.pop(k) for k in ("columns", "label", "ids", "on_nan") if k in kw}
    like = kw.pop("like", None)
    res = encode(
        os.fspath(src),
        os.fspath(out),
        EncodeSettings(**kw) if kw else EncodeSettings(),
        ReadSettings(chunk_rows=chunk_rows, **read_kw),
        like=like,
        threads=threads,
        overwrite=True,
    )
    return res


def ridge_engines_tolerance(store: str, W: np.ndarray, alpha: float) -> float:
    """How far two KRR solutions from the same store may differ when their float32 block
    products of Phi'Phi group and shift the rows differently (other engines, slices): each
    Gram entry carries a rounding of about sqrt(n) eps32 sum_i F_ij^2, which moves W by at
    most ||dG|| ||W|| / alpha per side (the Frobenius distance between the solutions)."""
    from rfcli.io.store import FeatureStore

    F = np.concatenate([f for _, f in FeatureStore(store).iter_features()]).astype(np.float64)
    dG = np.sqrt(len(F)) * np.finfo(np.float32).eps * (F**2).sum(0).max()
    return 2 * dG * float(np.linalg.norm(W)) / alpha


def decoded(store) -> tuple[np.ndarray, np.ndarray | None]:
    """A store's decoded features (float64, all rows) and its label codes."""
    from rfcli.io.store import FeatureStore

    st = FeatureStore(store)
    F = np.concatenate([f for _, f in st.iter_features()]).astype(np.float64)
    return F, st.labels()


def ridge_solution(F, Y, alpha):
    """The primal ridge solution in float64 (intercept unpenalized): W, b and the system
    matrix Fc'Fc + alpha I."""
    mF, mY = F.mean(0), Y.mean(0)
    Fc = F - mF
    H = Fc.T @ Fc + alpha * np.eye(F.shape[1])
    W = np.linalg.solve(H, Fc.T @ (Y - mY))
    return W, mY - mF @ W, H
