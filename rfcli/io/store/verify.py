"""``rfcli inspect --verify``: read every chunk of a store and check it against its metadata.

Checks, in order: the metadata parses and names a known format version with its
completion marker; the encoder loads and its fingerprint matches the recorded one; the
layout (row bytes, bits, code layout) matches the encoder's quantizer; every array has
``n_rows`` rows and the right width; every chunk file the shape implies exists (Zarr would
silently read a missing chunk as zeros) and decodes (crc32c: a flipped byte fails
its checksum); stored row norms equal the norms of the decoded codes; labels and trit
bytes are in range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rfcli.errors import RfcliError, first_line
from rfcli.io import location
from rfcli.io.store.read import FeatureStore, encoder_problems


@dataclass
class VerifyReport:
    path: str
    rows: int = 0
    chunks: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _chunk_key(name: str, i: int, ndim: int) -> tuple[str, ...]:
    """The chunk file of row-chunk ``i`` of an array, relative to the store."""
    return (name, "c", str(i), *["0"] * (ndim - 1))


def verify_store(path: str, progress: Callable[[int], None] | None = None) -> VerifyReport:
    """Check every chunk and every piece of metadata of the store at ``path``."""
    path = location.normalize(path)
    rep = VerifyReport(path)
    try:
        store = FeatureStore(path, require_complete=False)
    except RfcliError as e:
        rep.problems.append(str(e))
        return rep
    meta = store.meta
    if not store.complete:
        rep.problems.append("incomplete: the completion marker is missing")
    n = meta.get("n_rows")
    if not isinstance(n, int) or n < 0:
        rep.problems.append(f"metadata: n_rows is {n!r}")
        return rep
    rep.rows = n
    try:
        enc = store.unchecked_encoder()
    except RfcliError as e:
        rep.problems.append(str(e))
        return rep
    layout = store.layout
    rep.problems += [f"metadata: {p}" for p in encoder_problems(enc, meta, layout)]
    chunk_rows = layout.get("chunk_rows")
    if not isinstance(chunk_rows, int) or chunk_rows < 1:
        rep.problems.append(f"metadata: layout.chunk_rows is {chunk_rows!r}")
        return rep
    arrays = {"codes": (enc.row_bytes,), "norms": ()}
    if enc.fmap.uses_row_scale:
        arrays["row_scale"] = ()
    if store.label_info is not None:
        arrays["label"] = ()
    for k in meta.get("ids", []):
        arrays[f"ids/{k}"] = ()
    data: dict[str, object] = {}
    for name, tail in arrays.items():
        try:
            arr = store.group[name]
        except Exception as e:
            rep.problems.append(f"{name}: missing or unreadable ({first_line(e)})")
            continue
        if tuple(arr.shape) != (n, *tail):
            rep.problems.append(f"{name}: shape {tuple(arr.shape)}, expected {(n, *tail)}")
            continue
        if tuple(arr.chunks)[0] != chunk_rows:
            rep.problems.append(f"{name}: chunk rows {arr.chunks[0]}, expected {chunk_rows}")
        data[name] = arr
    store.list_files()  # a URL store: one listing instead of a request per chunk
    labels = store.label_info or {}
    n_classes = len(labels.get("classes", [])) if labels.get("kind") == "category" else None
    for i in range(-(-n // chunk_rows)):
        r0, r1 = i * chunk_rows, min((i + 1) * chunk_rows, n)
        where = f"chunk {i} (rows {r0}..{r1 - 1})"
        parts = {}
        for name, arr in data.items():
            if not store.has_file(*_chunk_key(name, i, 2 if name == "codes" else 1)):
                rep.problems.append(f"{name}: {where}: chunk file is missing")
                continue
            try:
                parts[name] = arr[r0:r1]
            except Exception as e:
                rep.problems.append(f"{name}: {where}: cannot be decoded ({first_line(e)})")
        rep.chunks += 1
        if "codes" in parts and "norms" in parts:
            _check_values(enc, parts, where, n_classes, rep)
        if progress:
            progress(r1 - r0)
    return rep


def _check_values(enc, parts, where, n_classes, rep) -> None:
    codes, norms = parts["codes"], parts["norms"]
    q = enc.quantizer
    if q.code_layout == "trits-base3" and np.any(codes >= 243):
        rep.problems.append(f"codes: {where}: byte values >= 243 in trit-packed codes")
        return
    Q = q.decode_rows(codes, enc.n_features).astype(np.float64)
    if not np.all(np.isfinite(Q)):
        rep.problems.append(f"codes: {where}: decoded values are not finite")
        return
    again = np.sqrt((Q * Q).sum(axis=1))
    if not np.allclose(again, norms, rtol=1e-4, atol=1e-6):
        bad = int(np.argmax(~np.isclose(again, norms, rtol=1e-4, atol=1e-6)))
        rep.problems.append(
            f"norms: {where}: stored row norms differ from the codes' (first at row offset {bad})"
        )
    if "row_scale" in parts and not np.all(np.isfinite(parts["row_scale"])):
        rep.problems.append(f"row_scale: {where}: values are not finite")
    if n_classes is not None and "label" in parts:
        lab = parts["label"]
        if lab.size and (lab.min() < 0 or lab.max() >= n_classes):
            rep.problems.append(f"label: {where}: class codes outside 0..{n_classes - 1}")
