"""The store format: its name and version, the metadata schema (validated on open), the
row chunking and the partial-store path (the layout is described in
:mod:`rfcli.io.store` and docs/store-format.md)."""

from __future__ import annotations

from rfcli.errors import ConfigError
from rfcli.registry import require

FORMAT = "rfcli-feature-store"
FORMAT_VERSION = 1
ATTR = "rfcli"


def check_meta(meta: dict) -> dict:
    """Validate the store attributes' schema (types and ranges); returns the layout."""
    what = "store metadata"

    def positive_int(d, key, where):
        v = require(d, key, int, where)
        if v < 1:
            raise ConfigError(f"{where}: {key} must be positive, got {v}")
        return v

    layout = require(meta, "layout", dict, what)
    for key in ("n_features", "row_bytes", "chunk_rows"):
        positive_int(layout, key, "layout")
    bits = require(layout, "bits", (int, float), "layout")
    if not 0 < bits <= 32:
        raise ConfigError(f"layout: bits must be in (0, 32], got {bits}")
    require(layout, "codes", str, "layout")
    if meta.get("complete"):
        n = require(meta, "n_rows", int, what)
        if n < 0:
            raise ConfigError(f"n_rows must be >= 0, got {n}")
    require(meta, "complete", bool, what)
    require(meta, "encoder", dict, what)
    require(meta, "fingerprint", str, what)
    arrays = require(meta, "encoder_arrays", list, what)
    if not all(isinstance(a, str) for a in arrays):
        raise ConfigError("encoder_arrays must be a list of names")
    ids = meta.get("ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ConfigError("ids must be a list of column names")
    label = meta.get("label")
    if label is not None:
        if not isinstance(label, dict):
            raise ConfigError("label must be an object or null")
        require(label, "name", str, "label")
        kind = require(label, "kind", str, "label")
        if kind not in ("int", "float", "category"):
            raise ConfigError(f"label: unknown kind {kind!r}")
        if kind == "category" and meta.get("complete"):
            require(label, "classes", list, "label")
    return layout


def layout(encoder, chunk_rows: int) -> dict:
    """The ``layout`` of a store of ``encoder``'s rows in chunks of ``chunk_rows`` rows."""
    q = encoder.quantizer
    return {"n_features": encoder.n_features, "bits": q.bits_per_feature,
            "row_bytes": encoder.row_bytes, "codes": q.code_layout,
            "chunk_rows": int(chunk_rows)}  # fmt: skip


def layout_bits(layout: dict) -> int | float:
    """Bits per feature (an integer, or 1.6 for trit-packed ternary codes)."""
    b = float(layout["bits"])
    return int(b) if b.is_integer() else b


def store_chunk_rows(row_bytes: int) -> int:
    """Rows per store chunk: about 4 MiB of codes, a power of two in [1024, 65536]."""
    rows = max(1, (4 << 20) // max(row_bytes, 1))
    return int(min(65536, max(1024, 1 << (rows.bit_length() - 1))))


def fitted_chunk_rows(chunk_rows: int, n_rows: int) -> int:
    """The chunk rows of a store of ``n_rows`` rows: ``chunk_rows``, or ``n_rows`` when that
    is fewer.  A chunk file holds a whole chunk (Zarr pads the last one with fill value,
    and the codes are not compressed), so a store smaller than one chunk is one chunk of
    exactly its rows, and a larger one pads less than its rows."""
    return int(min(chunk_rows, max(n_rows, 1)))


def partial_path(path: str) -> str:
    """Where a store is written until its completion marker is set."""
    return path.rstrip("/") + ".partial"


def label_kind(values) -> str:
    """A label column's kind as a store records it: ``category`` (text), ``int`` (integers
    and booleans) or ``float``."""
    kind = values.dtype.kind
    if kind in "OUS":
        return "category"
    return "int" if kind in "iub" else "float"
