"""``evaluate --kernel-error``: how well a store's decoded features approximate the exact
kernel on a sample of its rows (docs/methods.md, Evaluation metrics), plain and normalized
estimators.

The sample is the first ``rows`` rows.  Their raw values are read from the input the
store was encoded from and re-encoded with the store's encoder: if the codes differ, the
raw input is not the one the store came from, and the report is refused.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rfcli.errors import IncompatibleError, InputError
from rfcli.io.readers import iter_chunks, open_source, select_columns
from rfcli.io.store import FeatureStore
from rfcli.metrics import kernel_errors, scaled_spectral_error, spectral_approximation
from rfcli.progress import NullProgress, Progress


def kernel_error_report(
    store_path: str,
    raw_path: str,
    rows: int = 2000,
    lam: float | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    progress = progress or NullProgress()
    t0 = time.perf_counter()
    store = FeatureStore(store_path)
    enc = store.encoder
    n = min(rows, store.n_rows)
    source = open_source(raw_path)
    missing = [c for c in enc.columns if c not in source.names]
    if missing:
        raise InputError(
            f"{raw_path}: column(s) {', '.join(map(repr, missing[:8]))} of the store are missing"
        )
    sel = select_columns(source, enc.columns)
    parts, got = [], 0
    for ch in iter_chunks(source, sel, chunk_rows=min(n, 8192)):
        parts.append(ch.X[: n - got])
        got += len(parts[-1])
        if got >= n:
            break
    source.close()
    X = np.concatenate(parts)
    if len(X) < n:
        raise InputError(
            f"{raw_path}: has {len(X)} rows, the store {store_path} has {store.n_rows}"
        )
    stored = next(store.iter_encoded(chunk_rows=n))
    again = enc.encode_chunk(X, 0)
    mismatch = float(np.mean(np.any(again.packed != stored.packed, axis=1)))
    if mismatch > 0.001:
        raise IncompatibleError(
            f"{raw_path}: {mismatch:.1%} of the first {n} rows encode differently from "
            f"{store_path}: "
            "not the input this store was encoded from"
        )
    Xp = enc.preprocess.transform(X)
    with progress.task("exact kernel", None):
        K = enc.fmap.kernel(Xp, Xp)
    F = enc.decode(stored.packed, stored.norms, stored.row_scale).astype(np.float64)
    N = enc.decode(stored.packed, stored.norms, stored.row_scale, normalized=True).astype(
        np.float64
    )
    lam = 1e-4 * n if lam is None else lam
    out: dict[str, Any] = {
        "rows": n,
        "features": enc.n_features,
        "bits": enc.quantizer.bits_per_feature,
        "quantizer": enc.quantizer.kind,
        "kernel": enc.fmap.kind,
        "map": enc.describe()["map"],
    }
    for name, Fx in (("plain", F), ("normalized", N)):
        with progress.task(f"metrics ({name})", None):
            Kh = Fx @ Fx.T
            e = kernel_errors(K, Kh)
            rel2_scaled, beta2 = scaled_spectral_error(K, Kh)
            sa = spectral_approximation(K, Kh, lam)
        out[name] = {**e, "rel_spectral_scaled": rel2_scaled, "beta_spectral": beta2, **sa}
    out["seconds"] = time.perf_counter() - t0
    return out
