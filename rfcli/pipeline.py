"""Orchestration of the encode job: fit pass (when needed), then the chunk loop with a
thread pool (NumPy releases the GIL in GEMM, cos and packing), ordered writes and progress.

The per-chunk work is :meth:`rfcli.encoder.Encoder.encode_chunk`; this module only
schedules it.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rfcli.encoder import Encoder, map_fingerprint
from rfcli.errors import InputError, Interrupted, UsageError
from rfcli.fitting import EMPIRICAL_SAMPLE, BottomK, EncoderFitter, fit_empirical
from rfcli.io import location
from rfcli.io.readers import (
    Chunk,
    Selection,
    Source,
    iter_chunks,
    open_source,
    select_columns,
)
from rfcli.io.store import FeatureStore, StoreWriter, partial_path
from rfcli.maps import FeatureMap
from rfcli.progress import NullProgress, Progress
from rfcli.quantize import Quantizer
from rfcli.quantize.base import check_bits


@dataclass
class EncodeSettings:
    """What ``rfcli encode`` asks for (ignored when encoding ``like`` another store)."""

    kernel: str = "gaussian"
    n_features: int = 1024
    bits: int | None = None  # default: 2 for table quantizers, 1 for sign/binary, 32 for none
    quantizer: str | None = None  # default: the map's
    quantizer_config: dict[str, Any] | None = None  # from --quantizer-file
    quantizer_domain: str = "auto"  # empirical quantizer: linear, log, or auto (by map and b)
    gamma: float | str = "auto"
    seed: int = 0
    normalize_rows: bool = False
    standardize: bool = False
    sample_rows: int = 1000  # rows for the median heuristic
    map_options: dict[str, Any] = field(default_factory=dict)  # e.g. GLF bounds, tol, nodes
    store_chunk_rows: int | None = None  # rows per store chunk (default: ~4 MiB of codes)


@dataclass
class ReadSettings:
    columns: list[str] | None = None
    label: str | None = None
    ids: list[str] = field(default_factory=list)
    fmt: str | None = None
    chunk_rows: int = 8192
    on_nan: str = "error"


@dataclass
class EncodeResult:
    path: str
    n_rows: int
    seconds: float
    encoder: Encoder
    skipped_columns: list[str]
    fit_seconds: float = 0.0

    @property
    def rows_per_s(self) -> float:
        return self.n_rows / self.seconds if self.seconds > 0 else float("inf")


def fit_encoder(
    source: Source,
    sel: Selection,
    settings: EncodeSettings,
    read: ReadSettings,
    progress: Progress,
    fmap: FeatureMap | None = None,
) -> Encoder:
    """Build the encoder (for ``fmap`` if given, else the map ``settings`` describe), making
    the passes over the input that :class:`rfcli.fitting.EncoderFitter` asks for."""
    fitter = EncoderFitter(settings, fmap)
    d = len(sel.features)
    total = fitter.n_passes + 1
    if fitter.needs_pass1:
        p1 = fitter.new_pass1(d)
        with progress.task(f"fitting (pass 1/{total})", source.num_rows) as t:
            for ch in iter_chunks(source, sel, read.chunk_rows, read.on_nan):
                p1.update(ch.row0, ch.X)
                t.advance(len(ch))
        fitter.finish_pass1(p1, d, source.path)
    else:
        fitter.finish_pass1(None, d, source.path)
    if fitter.needs_map_pass:
        reducer = fitter.new_map_pass()
        with progress.task(f"fitting (pass {fitter.n_passes}/{total})", source.num_rows) as t:
            for ch in iter_chunks(source, sel, read.chunk_rows, read.on_nan):
                reducer.update(ch.row0, fitter.map_values(ch.X))
                t.advance(len(ch))
        fitter.finish_map_pass(reducer, source.path)
    return fitter.encoder(sel.features)


def default_output(path: str) -> str:
    if path == "-":
        raise UsageError("reading from stdin: give the output store with -o")
    base = path.rstrip("/")
    for ext in (".parquet", ".pq", ".csv.gz", ".csv", ".tsv", ".txt", ".zarr"):
        if base.lower().endswith(ext):
            base = base[: -len(ext)]
            break
    return base + ".rff.zarr"


def encode(
    input_path: str,
    output: str | None = None,
    settings: EncodeSettings | None = None,
    read: ReadSettings | None = None,
    *,
    like: str | None = None,
    threads: int | None = None,
    overwrite: bool = False,
    resume: bool = False,
    memory: int | None = None,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> EncodeResult:
    """Encode ``input_path`` (Parquet/CSV/Zarr, ``-`` for stdin CSV) into a store.

    With ``like``, the map, preprocessing and quantizer of that store are reused (how a
    test set is encoded); otherwise they are built from ``settings`` and fitted on the input.

    An interruption (KeyboardInterrupt) keeps the partial store ``OUTPUT.partial`` up to its
    last checkpoint and raises :class:`Interrupted`; ``resume=True`` continues it (after a
    crash or kill too) when the input and settings are the same, giving a store
    byte-identical to an uninterrupted run.

    ``memory`` (bytes) bounds the working arrays: the chunk size is derived from it (never
    above ``read.chunk_rows``); chunking never changes the output.

    ``engine="dask"`` runs the encode on a Dask cluster (``dask``: a
    :class:`rfcli.dask_engine.DaskSettings`), byte-identical to the local engine.
    Paths may be fsspec URLs (see :mod:`rfcli.io.location`).
    """
    input_path = location.normalize(input_path)
    output = location.normalize(output or default_output(input_path))
    if engine == "dask":
        if resume:
            raise UsageError("--resume is for the local engine (a Dask encode is retried by Dask)")
        from rfcli.dask_engine import encode_dask

        return encode_dask(
            input_path,
            output,
            settings or EncodeSettings(),
            read or ReadSettings(),
            like=like,
            overwrite=overwrite,
            dask=dask,
            progress=progress,
        )
    if engine != "local":
        raise UsageError(f"--engine must be local or dask, got {engine!r}")
    settings = settings or EncodeSettings()
    read = read or ReadSettings()
    progress = progress or NullProgress()
    threads = threads or min(4, os.cpu_count() or 1)
    if threads < 1:
        raise UsageError(f"--threads must be >= 1, got {threads}")
    if read.chunk_rows < 1:
        raise UsageError(f"--chunk-rows must be >= 1, got {read.chunk_rows}")
    from rfcli.io.store import prepare_output

    prepare_output(output, overwrite)
    t0 = time.perf_counter()
    # the map (one object, fitted later) and the passes it needs; checks the quantizer early
    planner = EncoderFitter(settings) if like is None else None
    needs_pass = planner is not None and planner.n_passes > 0
    writer = None
    if resume and input_path == "-":
        raise UsageError("--resume needs a file input (stdin cannot be read again)")
    if resume and location.is_url(output):
        raise UsageError(
            "--resume needs a local output store (a URL store is written in place, not as a "
            "partial store)"
        )
    readable = input_path != "-" and (location.exists(input_path) or "*" in input_path)
    key = resume_key(input_path, settings, read, like) if readable else None
    if resume and os.path.isdir(partial_path(output)):
        writer = StoreWriter.resume(output, key, overwrite=overwrite)
    source = open_source(input_path, read.fmt, spool_stdin=needs_pass)
    if memory is not None:
        read = _budget_chunks(read, source, planner, like, memory, threads)
    try:
        if writer is not None:
            encoder = writer.encoder
            if like is None:
                sel = select_columns(source, read.columns, read.label, read.ids)
        if like is not None:
            encoder, sel = select_like(source, like, read, input_path)
        elif writer is None:
            sel = select_columns(source, read.columns, read.label, read.ids)
            encoder = fit_encoder(source, sel, settings, read, progress, fmap=planner.fmap)
        t_fit = time.perf_counter() - t0
        if writer is None:
            writer = new_writer(output, encoder, sel, input_path, overwrite, key, settings, like)
        try:
            _encode_loop(source, sel, read, encoder, writer, threads, progress)
            if writer.rows_written == 0:
                raise InputError(f"{input_path}: no rows to encode (empty input)")
            path = writer.close()
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted; {writer.n_rows:,} encoded rows are kept in {writer.tmp} "
                "(run the same command with --resume to continue)"
            ) from None
        except BaseException:
            writer.abort()
            raise
    finally:
        source.close()
    return EncodeResult(path, writer.n_rows, time.perf_counter() - t0, encoder, sel.skipped, t_fit)


def select_like(source: Source, like: str, read: ReadSettings, input_path: str):
    """The encoder of the store ``like`` and the input's columns for it (its label and id
    columns are carried when the input has them)."""
    ref = FeatureStore(like)
    encoder = ref.encoder
    missing = [c for c in encoder.columns if c not in source.names]
    if missing:
        raise InputError(
            f"{input_path}: column(s) {', '.join(missing[:8])} of the store {like} "
            "are missing from the input"
        )
    ref_label = (ref.label_info or {}).get("name")
    label = read.label or (ref_label if ref_label in source.names else None)
    ids = read.ids or [i for i in ref.meta.get("ids", []) if i in source.names]
    return encoder, select_columns(source, encoder.columns, label, ids)


def new_writer(output, encoder, sel, input_path, overwrite, key, settings, like):
    """The store writer of an encode (both engines)."""
    return StoreWriter(
        output,
        encoder,
        label=sel.label,
        ids=sel.ids,
        source={"path": os.path.basename(input_path.rstrip("/")), "columns": sel.features},
        overwrite=overwrite,
        resume_key=key,
        chunk_rows=settings.store_chunk_rows if like is None else None,
    )


def _budget_chunks(read, source, planner, like, memory, threads) -> ReadSettings:
    from dataclasses import replace

    from rfcli.memory import encode_chunk_rows

    if like is not None:
        enc = FeatureStore(like).encoder
        d, fmap, row_bytes = len(enc.columns), enc.fmap, enc.row_bytes
    else:
        d = len(read.columns) if read.columns else len(source.names)
        fmap = planner.fmap
        row_bytes = 4 * fmap.n_features  # at most float32 features
    rows = encode_chunk_rows(memory, d, fmap.n_features, row_bytes, threads, fmap.estimate_bytes(d))
    return replace(read, chunk_rows=min(read.chunk_rows, rows))


def resume_key(input_path: str, settings: EncodeSettings, read: ReadSettings, like) -> str:
    """What an encode must share with an interrupted one to continue its partial store:
    the input file (name, size, modification time) and every setting that changes the
    output (not chunk size or threads, which never do)."""
    import hashlib
    import json
    from dataclasses import asdict

    from rfcli.io.readers import detect_format
    from rfcli.io.sources import parquet_files

    if detect_format(input_path, read.fmt) == "parquet":
        files = parquet_files(input_path)
    elif os.path.isdir(input_path):  # a Zarr input: every file of it
        files = sorted(os.path.join(r, f) for r, _, fs in os.walk(input_path) for f in fs)
    else:
        files = [input_path]
    ident = {
        "input": input_path if location.is_url(input_path) else os.path.abspath(input_path),
        "files": [location.file_ident(f) for f in files],
        "settings": asdict(settings),
        "read": {k: v for k, v in asdict(read).items() if k != "chunk_rows"},
        "like": FeatureStore(like).meta["fingerprint"] if like else None,
    }
    blob = json.dumps(ident, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def _encode_loop(source, sel, read, encoder, writer, threads, progress) -> None:
    start = writer.rows_written  # > 0 when resuming
    with progress.task("encoding", source.num_rows) as task, ThreadPoolExecutor(threads) as pool:
        pending: deque = deque()
        if start:
            task.advance(start)

        def drain(limit: int) -> None:
            while len(pending) > limit:
                fut, ch = pending.popleft()
                writer.write(fut.result(), ch.label, ch.ids)
                task.advance(len(ch))

        for ch in iter_chunks(source, sel, read.chunk_rows, read.on_nan):
            if ch.row0 + len(ch) <= start:
                continue
            if ch.row0 < start:
                ch = _tail(ch, start - ch.row0)
            pending.append((pool.submit(encoder.encode_chunk, ch.X, ch.row0), ch))
            drain(2 * threads)
        drain(0)


def _tail(ch: Chunk, k: int) -> Chunk:
    return Chunk(
        ch.row0 + k,
        ch.X[k:],
        None if ch.label is None else ch.label[k:],
        {n: v[k:] for n, v in ch.ids.items()},
    )


def decode(
    store_path: str,
    output: str,
    *,
    normalized: bool = False,
    chunk_rows: int | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> int:
    """Write a store's decoded features (plain or normalized) to .npy/Parquet/CSV; returns rows."""
    from rfcli.io.writers import TableWriter

    store = FeatureStore(store_path)
    progress = progress or NullProgress()
    writer = TableWriter(output, store.n_rows, store.n_features, overwrite=overwrite)
    label = (store.label_info or {}).get("name")
    try:
        with progress.task("decoding", store.n_rows) as task:
            for row0, F in store.iter_features(normalized=normalized, chunk_rows=chunk_rows):
                r1 = row0 + len(F)
                cols = dict(store.ids(row0, r1))
                if label:
                    cols[label] = store.label_values(row0, r1)
                writer.write(F, cols)
                task.advance(len(F))
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return store.n_rows


def load_encoder(path: str) -> Encoder:
    """The encoder of a store (directory) or of a model file (.npz)."""
    if location.isdir(path):
        return FeatureStore(path).encoder
    if not location.exists(path):
        raise InputError(f"{path}: no such store or model file")
    from rfcli.io.models_io import load_model

    return load_model(path)[1]


def fit_quantizer_on_input(
    map_path: str,
    input_path: str,
    bits: int,
    *,
    n_values: int = EMPIRICAL_SAMPLE,
    seed: int = 0,
    domain: str = "linear",
    read: ReadSettings | None = None,
    progress: Progress | None = None,
) -> Quantizer:
    """``rfcli fit-quantizer --kind empirical``: the empirical quantizer of the map of
    ``map_path`` (store or model), on a hash sample of ``input_path``'s rows large enough
    for ``n_values`` feature values."""
    check_bits(bits)
    if n_values < 2**bits:
        raise UsageError(f"--sample must be at least {2**bits} values for {bits} bits")
    read = read or ReadSettings()
    progress = progress or NullProgress()
    encoder = load_encoder(map_path)
    source = open_source(input_path, read.fmt)
    try:
        missing = [c for c in encoder.columns if c not in source.names]
        if missing:
            raise InputError(
                f"{input_path}: column(s) {', '.join(missing[:8])} of the map are missing"
            )
        sel = select_columns(source, encoder.columns, None, [])
        n_rows = max(1, min(-(-n_values // encoder.n_features) * 2, 1_000_000))
        sample = BottomK(n_rows, seed)
        with progress.task("sampling rows", source.num_rows) as t:
            for ch in iter_chunks(source, sel, read.chunk_rows, read.on_nan):
                sample.update(ch.row0, ch.X)
                t.advance(len(ch))
    finally:
        source.close()
    if sample.rows is None or len(sample.rows) == 0:
        raise InputError(f"{input_path}: no rows")
    fp = map_fingerprint(encoder.columns, encoder.preprocess, encoder.fmap)
    return fit_empirical(
        encoder.fmap,
        encoder.preprocess.transform(sample.rows),
        bits,
        seed,
        n_values=n_values,
        domain=domain,
        info={"map_fingerprint": fp, "map_kind": encoder.fmap.kind},
    )
