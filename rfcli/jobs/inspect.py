"""Summaries of stores for ``inspect`` (plain dicts with snake_case keys)."""

from __future__ import annotations

from typing import Any

from rfcli.io.store import FeatureStore


def store_summary(store: FeatureStore) -> dict[str, Any]:
    enc = store.encoder
    n, m, b = store.n_rows, store.n_features, store.bits
    on_disk = store.nbytes_on_disk()
    float32_bytes = n * m * 4
    label = store.label_info
    return {
        "path": store.path,
        "complete": store.complete,
        "rows": n,
        "features": m,
        "bits": b,
        "bits_per_sample": m * b,
        "kernel": enc.fmap.describe(),
        "quantizer": enc.quantizer.kind,
        "preprocess": enc.preprocess.describe(),
        "inputs": len(enc.columns),
        "label": None if label is None else label.get("name"),
        "label_kind": None if label is None else label.get("kind"),
        "ids": store.meta.get("ids", []),
        "bytes_on_disk": on_disk,
        "codes_bytes_on_disk": store.codes_nbytes_on_disk(),
        "float32_bytes": float32_bytes,
        "compression_ratio": round(float32_bytes / on_disk, 3) if on_disk else None,
        "fingerprint": store.meta.get("fingerprint"),
        "format_version": store.meta.get("format_version"),
        "rfcli_version": store.meta.get("rfcli_version"),
    }
