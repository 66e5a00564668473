"""Summaries of stores and model files for ``inspect`` (plain dicts with snake_case keys and
JSON values: numbers are numbers, e.g. ``gamma``, not text)."""

from __future__ import annotations

import os
from typing import Any

from rfcli.encoder import Encoder
from rfcli.io import location
from rfcli.io.store import FeatureStore


def encoder_fields(enc: Encoder) -> dict[str, Any]:
    """The encoder's part of a summary: kernel, its parameters, quantizer, preprocessing."""
    d = enc.describe()
    return {
        "kernel": d["kernel"],
        "gamma": d["map"].get("gamma") if isinstance(d["map"].get("gamma"), float) else None,
        "map": d["map"],
        "map_summary": d["summary"],
        "features": d["features"],
        "bits": d["bits"],
        "bits_per_sample": d["features"] * d["bits"],
        "quantizer": d["quantizer"],
        "preprocess": d["preprocess"],
        "inputs": d["inputs"],
        "columns": d["columns"],
    }


def store_summary(store: FeatureStore) -> dict[str, Any]:
    """A store's fields; ``rows`` of an incomplete store (the partial store of an
    interrupted encode) are the rows it keeps (``rows_committed``: what a resume
    continues from, and the interruption's message said), whatever shape its arrays have
    until the encode completes."""
    enc = store.encoder
    n, m = store.n_rows, store.n_features
    if not store.complete and "rows_committed" in store.meta:
        n = int(store.meta["rows_committed"] or 0)
    on_disk = store.nbytes_on_disk()
    float32_bytes = n * m * 4
    label = store.label_info
    fields = encoder_fields(enc)
    fields["bits"] = store.bits
    fields["bits_per_sample"] = round(m * store.bits, 6)
    return {
        "path": store.path,
        "kind": "store",
        "complete": store.complete,
        "rows": n,
        **fields,
        "label": None if label is None else label.get("name"),
        "label_kind": None if label is None else label.get("kind"),
        "ids": list(store.meta.get("ids", [])),
        "bytes_on_disk": on_disk,
        "codes_bytes_on_disk": store.codes_nbytes_on_disk(),
        # what takes the bytes: the parts' files (codes: chunk files, the last chunk padded
        # to chunk_rows rows), and the codes themselves
        "bytes_by_part": store.nbytes_by_part(),
        "codes_bytes": n * int(store.layout["row_bytes"]),
        "chunk_rows": store.chunk_rows,
        "float32_bytes": float32_bytes,
        "compression_ratio": round(float32_bytes / on_disk, 3) if on_disk else None,
        "fit": store.meta.get("fit") or None,
        "fingerprint": store.meta.get("fingerprint"),
        "format_version": store.meta.get("format_version"),
        "rfcli_version": store.meta.get("rfcli_version"),
    }


def model_summary(path: str) -> dict[str, Any]:
    """A model file: its kind and task, classes (or the regression target), the encoder it
    embeds, what it was trained on, and the training report stored in it (chosen C or
    alpha, validation scores, iterations, time)."""
    from rfcli.learn.model_file import load_model

    model, enc, meta = load_model(path)
    targets = model.targets
    trained_on = meta.get("trained_on") or {}
    classes = targets.classes if targets.task == "classification" else None
    size = None
    if not location.is_url(path):
        size = os.path.getsize(location.normalize(path))
    return {
        "path": location.normalize(path),
        "kind": "model",
        "model": model.kind,
        "task": targets.task,
        "classes": classes,
        "n_classes": None if classes is None else len(classes),
        "label": trained_on.get("label"),
        "label_type": targets.value_kind,
        "normalized": model.normalized,
        **encoder_fields(enc),
        "trained_on": trained_on or None,
        "report": model.info or None,
        "fingerprint": meta.get("fingerprint"),
        "bytes": size,
        "format_version": meta.get("format_version"),
        "rfcli_version": meta.get("rfcli_version"),
    }
