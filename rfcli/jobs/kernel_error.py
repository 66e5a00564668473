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
from rfcli.quantize import unpack_codes


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
    _check_same_input(enc, again.packed, stored.packed, raw_path, store_path)
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


#: re-encoded rows may differ from a store's where a phase lies within float32 rounding of a
#: border (another rfcli version's roundings: docs/store-format.md, Codes from the phase):
#: a few codes in a million, each one level off; a different input changes most codes
CODES_DIFFERING, ROWS_DIFFERING = 1e-4, 1e-3


def _check_same_input(enc, again: np.ndarray, stored: np.ndarray, raw_path: str, store_path: str):
    """Refuse rows that do not encode to the store's: for threshold codes, more than
    CODES_DIFFERING of the codes differ or one differs by more than a level; else (stochastic
    rounding, floats: reproduced exactly) more than ROWS_DIFFERING of the rows differ."""
    q, n = enc.quantizer, len(stored)
    if q.threshold_codes:
        a = unpack_codes(again, q.bits, enc.n_features).astype(np.int16)
        b = unpack_codes(stored, q.bits, enc.n_features).astype(np.int16)
        diff = np.abs(a - b)
        share = float(np.mean(diff > 0))
        if share <= CODES_DIFFERING and (diff.size == 0 or int(diff.max()) <= 1):
            return
        what = f"{share:.2%} of the codes of the first {n} rows"
    else:
        share = float(np.mean(np.any(again != stored, axis=1)))
        if share <= ROWS_DIFFERING:
            return
        what = f"{share:.1%} of the first {n} rows"
    raise IncompatibleError(
        f"{raw_path}: {what} encode differently from {store_path}: "
        "not the input this store was encoded from"
    )
