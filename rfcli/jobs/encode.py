"""The encode job (``rfcli encode``): choose the engine, fit the encoder (or reuse another
store's), create the store writer (or resume a partial store: rfcli.jobs.encode_resume) and
let the engine write every chunk.  The per-chunk work is
:meth:`rfcli.encoder.Encoder.encode_chunk`; the engines (rfcli.engines) schedule it.  The
job's settings (:class:`EncodeSettings`) live here, as TrainSettings and GPRSettings live
next to theirs; fitting the encoder they describe is :mod:`rfcli.encoder_fit`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rfcli.constraints import (
    Boolean,
    Dict,
    Interval,
    Null,
    Options,
    Rule,
    Validated,
    settings_check,
)
from rfcli.encoder import Encoder
from rfcli.encoder_fit import (
    EncoderFitter,
    bits_kind,
    budget_bits,
    budget_features,
    fit_encoder_on,
)
from rfcli.engines import open_engine
from rfcli.errors import InputError, ParameterTypeError, UsageError, check_int
from rfcli.io import location
from rfcli.io.columns import missing_columns
from rfcli.io.readers import (
    CSV_SUFFIXES,
    ReadSettings,
    Selection,
    attach_label,
    open_source,
    select_columns,
)
from rfcli.io.sources import Source
from rfcli.io.store import FeatureStore, StoreWriter, prepare_output
from rfcli.jobs.encode_resume import ResumeMismatch, resume_key, resumed
from rfcli.names import BANDWIDTH_KERNELS, BIT_CANDIDATES, KERNELS, QUANTIZER_KINDS
from rfcli.progress import NullProgress, Progress

#: kernels whose map needs a data box (the Gauss-Legendre map: its rule covers the box)
BOX_KERNELS = ("glf",)


def _config_says(config, key, value) -> bool:
    """Whether a quantizer file leaves ``value`` (given) to agree with its ``key``."""
    return value is None or config is None or config.get(key) in (None, value)


@dataclass
class EncodeSettings(Validated):
    """What ``rfcli encode`` asks for (ignored when encoding ``like`` another store);
    :meth:`validate` checks the fields and their combinations (rfcli.constraints).  The
    map's own options (``map_options``) are checked by the map, the bits a quantizer kind
    takes by the quantizer.

    Parameters
    ----------
    kernel : str, default="gaussian"
        The feature map (``rfcli.KERNELS``: gaussian, laplacian, matern*, arccos*, ternary,
        positive, glf, ntk, ...).
    n_features : int or None, default=None
        Features m; None: 1024, or ``8 row_bytes / bits`` with ``row_bytes``.
    bits : int, "auto" or None, default=None
        Bits per feature; None: 2 for table quantizers, 1 for sign/binary, 32 for none;
        "auto": chosen for ``row_bytes`` by validation (docs/learning.md).
    row_bytes : int or None, default=None
        A storage budget per row: sets ``n_features`` from the bits.
    quantizer : str or None, default=None
        The quantizer kind (lm, lm2, stoc, uniform, sign, empirical, none, ...); None: the
        map's default.
    quantizer_config : dict or None, default=None
        A quantizer file's contents (``rfcli fit-quantizer``, ``--quantizer-file``).
    quantizer_domain : {"auto", "linear", "log"}, default="auto"
        The empirical quantizer's value domain (auto: by map and bits).
    gamma : float, "auto" or "search", default="auto"
        The bandwidth: a number, the median heuristic ("auto") or validation on a row
        sample ("search", needs a label).
    seed : int, default=0
        Seed of the map's draws, the row sample and stochastic rounding.
    normalize_rows, standardize : bool, default=False
        Scale each row to unit norm / z-score each column (statistics of a fitting pass).
    sample_rows : int, default=1000
        Rows of the sample for the median heuristic.
    map_options : dict, default={}
        The map's own options (e.g. GLF ``lengthscale_bounds``, ``tol``, ``nodes``).
    store_chunk_rows : int or None, default=None
        Rows per store chunk (None: about 4 MiB of codes, never more than the rows).
    """

    kernel: str = "gaussian"
    n_features: int | None = None  # default: 1024, or 8 row_bytes / bits with row_bytes
    # default: 2 for table quantizers, 1 for sign/binary, 32 for none; "auto": chosen for
    # row_bytes by validation (rfcli.learn.bits_choice)
    bits: int | str | None = None
    row_bytes: int | None = None  # a storage budget per row: sets n_features from the bits
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

    _parameter_constraints = {
        "kernel": [Options(*KERNELS)],
        "n_features": [Null(), Interval("int", 1)],
        "bits": [Null(), Interval("int", 1, 32), Options("auto")],
        "row_bytes": [Null(), Interval("int", 1)],
        "quantizer": [Null(), Options(*QUANTIZER_KINDS)],
        "quantizer_config": [Null(), Dict()],
        "quantizer_domain": [Options("auto", "linear", "log")],
        "gamma": [Interval("real", 0, lo_open=True), Options("auto", "search")],
        "seed": [Interval("int", 0)],
        "normalize_rows": [Boolean()],
        "standardize": [Boolean()],
        "sample_rows": [Interval("int", 2)],
        "map_options": [Dict()],
        "store_chunk_rows": [Null(), Interval("int", 1)],
    }
    _rules = (
        Rule(("gamma", "kernel"), lambda g, k: g != "search" or k in BANDWIDTH_KERNELS,
             lambda n, g, k: f"{n('gamma')}='search' is for the kernels with a bandwidth "
             f"({', '.join(BANDWIDTH_KERNELS)}), not {k}"),
        Rule(("normalize_rows", "kernel"), lambda nr, k: not (nr and k in BOX_KERNELS),
             lambda n, nr, k: f"{n('normalize_rows')} does not fit the {k} map (it needs a "
             "data box)"),
        Rule(("bits", "row_bytes"), lambda b, n: b != "auto" or n is not None,
             lambda n, b, r: f"{n('bits')}='auto' chooses the bits for a storage budget: give "
             f"{n('row_bytes')}"),
        Rule(("row_bytes", "kernel"), lambda r, k: r is None or k not in FIXED_FEATURES,
             lambda n, r, k: f"{n('row_bytes')} sets the number of features, which the {k} "
             "map takes from its quadrature"),
        Rule(("bits", "quantizer_config"), lambda b, c: b != "auto" or c is None,
             lambda n, b, c: f"{n('bits')}='auto' chooses a quantizer's bits: the quantizer "
             f"file fixes them ({c.get('bits')} bits)"),
        Rule(("bits", "quantizer", "kernel", "map_options"),
             lambda b, q, k, mo: b != "auto" or bits_kind(q, k, mo) in AUTO_BITS_KINDS,
             lambda n, b, q, k, mo: f"{n('bits')}='auto' chooses among "
             f"{', '.join(map(str, BIT_CANDIDATES))} bits: the {bits_kind(q, k, mo)} "
             f"quantizer{'' if q else ' (the ' + k + ' kernel' + chr(39) + 's)'} has no "
             "bit width to choose"),
        Rule(("n_features", "row_bytes", "bits", "quantizer", "kernel", "map_options"),
             lambda m, r, b, q, k, mo: m is None or r is None
             or (b != "auto" and m == budget_features(r, b, q, k, mo)),
             lambda n, m, r, b, q, k, mo: (
                 f"{n('n_features')} follows the chosen bits with {n('bits')}='auto' and "
                 f"{n('row_bytes')}: drop {n('n_features')}" if b == "auto" else
                 f"{n('n_features')}={m} contradicts {n('row_bytes')}={r}: at "
                 f"{budget_bits(b, q, k, mo):g} bits per feature {r} bytes hold "
                 f"{budget_features(r, b, q, k, mo)} features (give one of the two)")),
        Rule(("row_bytes", "bits", "quantizer", "kernel", "map_options"),
             lambda r, b, q, k, mo: r is None or b == "auto" or budget_features(r, b, q, k, mo),
             lambda n, r, b, q, k, mo: f"{n('row_bytes')}={r} holds no feature at "
             f"{budget_bits(b, q, k, mo):g} bits per feature"),
        Rule(("quantizer", "quantizer_config"), lambda q, c: _config_says(c, "kind", q),
             lambda n, q, c: f"{n('quantizer')} {q} contradicts the quantizer file "
             f"({c.get('kind')})"),
        Rule(("bits", "quantizer_config"), lambda b, c: _config_says(c, "bits", b),
             lambda n, b, c: f"{n('bits')} {b} does not match the quantizer file "
             f"({c.get('bits')} bits)"),
    )  # fmt: skip


#: maps whose number of features is not a setting (row_bytes cannot set it)
FIXED_FEATURES = ("glf",)
#: quantizer kinds with a bit width to choose (bits='auto')
AUTO_BITS_KINDS = ("lm", "lm2", "stoc", "uniform", "empirical")


@dataclass
class EncodeResult:
    """What :func:`encode` returns: the store it wrote and how the encode went.

    Parameters
    ----------
    path : str
        The store written.
    n_rows : int
        Rows in the store.
    seconds : float
        Wall time of the whole job.
    encoder : Encoder
        The encoder the store's codes come from (its fit report in ``fit_report``).
    skipped_columns : list of str
        Text columns left out of the features when no ``columns`` were given.
    fit_seconds : float, default=0.0
        Wall time of the fitting passes (0 with ``like``).
    notes : list of str, default=[]
        What the encode said as it went (what a resume continued, or why it started over).
    resumed_rows : int, default=0
        Rows kept from the partial store of an interrupted encode (``resume``), else 0.

    Attributes
    ----------
    rows_per_s : float
        ``n_rows / seconds``.
    """

    path: str
    n_rows: int
    seconds: float
    encoder: Encoder
    skipped_columns: list[str]
    fit_seconds: float = 0.0
    #: what the encode said as it went (what a resume continued, or why it started over)
    notes: list[str] = field(default_factory=list)
    #: rows kept from the partial store of an interrupted encode (``resume``), else 0
    resumed_rows: int = 0

    @property
    def rows_per_s(self) -> float:
        """Rows encoded per second of the job's wall time."""
        return self.n_rows / self.seconds if self.seconds > 0 else float("inf")


def default_output(path) -> str:
    if not location.is_path(path):
        raise UsageError(f"{location.name(path)}: in-memory input: give the output store (output)")
    if path == "-":
        raise UsageError("reading from stdin ('-'): give the output store (output)")
    base = path.rstrip("/")
    for ext in (".parquet", ".pq", *sorted(CSV_SUFFIXES, key=len, reverse=True), ".zarr"):
        if base.lower().endswith(ext):
            base = base[: -len(ext)]
            break
    return base + ".rff.zarr"


def encode(
    input_path,
    output: str | None = None,
    settings: EncodeSettings | None = None,
    read: ReadSettings | None = None,
    *,
    like: str | Encoder | None = None,
    y=None,
    threads: int | None = None,
    overwrite: bool = False,
    resume: bool = False,
    memory: int | None = None,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
    note: Callable[[str], None] | None = None,
) -> EncodeResult:
    """Encode ``input_path`` into a store: a path (Parquet/CSV/Zarr, ``-`` for stdin CSV)
    or in-memory data (a 2-D NumPy array, whose columns are ``x0..``, a pandas DataFrame,
    a pyarrow Table: :func:`rfcli.io.readers.open_source`), with ``y`` its label column
    if given apart (:func:`rfcli.io.readers.attach_label`).  An array gives the store
    that a file of the same rows and columns gives, byte for byte but for the recorded
    source name.

    With ``like`` (a store's path, or an :class:`~rfcli.encoder.Encoder`), the map,
    preprocessing and quantizer of that store are reused (how a test set is encoded);
    otherwise they are built from ``settings`` and fitted on the input
    (:func:`fit_encoder`).

    An interruption (KeyboardInterrupt) keeps the partial store ``OUTPUT.partial`` up to its
    last checkpoint and raises :class:`~rfcli.errors.Interrupted`; ``resume=True`` continues
    it (after a crash or kill too) when the input and settings are the same, giving a store
    byte-identical to an uninterrupted run; a setting that differs is refused by name
    (:class:`ResumeMismatch`), and without a partial store the encode starts from the first
    row.  What it resumed (or why it started over) is in the result's ``notes``, and
    passed to ``note`` (a function taking a line of text) as it happens.

    ``memory`` (bytes) bounds the working arrays: the chunk size is derived from it (never
    above ``read.chunk_rows``); chunking never changes the output.

    ``engine="dask"`` runs the encode on a Dask cluster (``dask``: a
    :class:`rfcli.engines.dask.DaskSettings`), byte-identical to the local engine.
    Paths may be fsspec URLs (see :mod:`rfcli.io.location`).

    Parameters
    ----------
    input_path : str, numpy.ndarray, pandas.DataFrame or pyarrow.Table
        Parquet/CSV/Zarr path or URL, ``"-"`` for CSV on stdin, or in-memory data.
    output : str or None, default=None
        The store (default: the input's name with ``.rff.zarr``).
    settings : EncodeSettings or None, default=None
        Kernel, features, bits, quantizer, preprocessing (ignored with ``like``).
    read : ReadSettings or None, default=None
        Label, ids, columns, chunk rows, ``on_nan``, delimiter.
    like : str or Encoder or None, default=None
        Reuse this store's (or encoder's) map, preprocessing and quantizer.
    y : array-like or None, default=None
        The label given apart.
    overwrite, resume : bool, default=False
        Replace an existing store; continue an interrupted one.
    threads, memory, engine, dask
        The resources (rfcli.jobs.resources); the store is byte-identical for any.
    progress : Progress or None, default=None
        Progress reporting.
    note : callable or None, default=None
        Receives each line of what the encode says as it happens.

    Returns
    -------
    EncodeResult
        The path, rows, seconds, the fitted encoder, skipped columns and notes.

    Raises
    ------
    UsageError
        A bad setting or resource, a resume that does not match (:class:`ResumeMismatch`).
    InputError
        Unreadable input, missing columns or label, bad values.
    OutputError
        ``output`` exists (without ``overwrite``).
    Interrupted
        On KeyboardInterrupt, after keeping the partial store.
    """
    settings = settings_check(settings, EncodeSettings, "settings")
    read = settings_check(read, ReadSettings, "read")
    progress = progress or NullProgress()
    data, read = attach_label(input_path, y, read)
    _check_args(threads, read, resume, data)
    with open_engine(engine, dask, progress, threads) as eng:
        eng.check_encode(read, resume)
        data = for_engine(eng, data)
        output = eng.worker_path(location.normalize(output or default_output(data)))
        if resume and location.is_url(output):
            raise UsageError(
                "resume needs a local output store (a URL store is written in place, not as "
                "a partial store)"
            )
        prepare_output(output, overwrite)
        ref = _reference(like)  # the store (or encoder) to encode like
        t0 = time.perf_counter()
        # the map (one object, fitted later) and the passes it needs; checks the quantizer early
        planner = EncoderFitter(settings) if like is None else None
        readable = location.is_path(data) and data != "-"
        readable = readable and (location.exists(data) or "*" in data)
        key = resume_key(data, settings, read, ref) if readable else None
        notes = Notes(note)
        writer = resumed(output, key, overwrite, notes) if resume else None
        rows_resumed = writer.n_rows if writer is not None else 0
        needs_pass = planner is not None and planner.n_passes > 0
        source = open_source(data, read.fmt, spool_stdin=needs_pass, delimiter=read.delimiter)
        try:
            if writer is not None:
                of = f" of {source.num_rows:,}" if source.num_rows is not None else ""
                notes(f"resuming {writer.tmp}: {writer.n_rows:,} rows kept, encoding from row "
                      f"{writer.n_rows:,}{of}")  # fmt: skip
            eng.check_source(source)
            # the map and a chunk per thread must fit --memory, or the physical memory
            read = _budget_chunks(read, source, planner, ref, memory, eng.threads)
            if ref is not None:
                encoder, sel = select_like(source, ref, read, source.path)
            elif writer is not None:  # resumed: the partial store's encoder
                encoder, sel = writer.encoder, selection(source, settings, read)
            else:
                encoder, sel = fit_on_source(eng, source, settings, read, planner.fmap,
                                             memory=memory)  # fmt: skip
            t_fit = time.perf_counter() - t0
            if writer is None:
                writer = new_writer(output, encoder, sel, source.path, overwrite, key, settings,
                                    ref)  # fmt: skip
            path = eng.write_store(source, sel, read, encoder, writer)
        finally:
            source.close()
    return EncodeResult(path, writer.n_rows, time.perf_counter() - t0, encoder, sel.skipped, t_fit,
                        notes.lines, rows_resumed)  # fmt: skip


class Notes:
    """The lines a job says as it goes: kept, and passed to ``note`` when given."""

    def __init__(self, note: Callable[[str], None] | None = None):
        self.note, self.lines = note, []

    def __call__(self, text: str) -> None:
        self.lines.append(text)
        if self.note is not None:
            self.note(text)


def fit_encoder(
    input_path,
    settings: EncodeSettings | None = None,
    read: ReadSettings | None = None,
    *,
    y=None,
    threads: int | None = None,
    memory: int | None = None,
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
) -> Encoder:
    """The encoder ``settings`` describe, fitted on the input by the passes :func:`encode`
    makes before it writes: ``encode`` with this encoder as ``like`` writes the store
    ``encode`` would have written.  Nothing is written.

    Parameters
    ----------
    input_path : str, numpy.ndarray, pandas.DataFrame or pyarrow.Table
        The input, as for :func:`encode`.
    settings : EncodeSettings or None, default=None
        The map, quantizer and preprocessing.
    read : ReadSettings or None, default=None
        How the input is read (label, columns, chunk rows).
    y : array-like or None, default=None
        The label given apart (``gamma="search"``, ``bits="auto"``).
    threads, memory, engine, dask
        The resources, as for :func:`encode` (``memory`` bounds the chunks read).
    progress : Progress or None, default=None
        Progress reporting.

    Returns
    -------
    Encoder
        The fitted encoder (preprocessing, map, quantizer), with its fit report.

    Raises
    ------
    UsageError
        A bad setting or resource.
    InputError
        Unreadable input, missing columns or label.
    """
    settings = settings_check(settings, EncodeSettings, "settings")
    read = settings_check(read, ReadSettings, "read")
    data, read = attach_label(input_path, y, read)
    _check_args(threads, read, False, data)
    if memory is not None:
        check_int(memory, "memory", 1)
    with open_engine(engine, dask, progress or NullProgress(), threads) as eng:
        source = open_source(for_engine(eng, data), read.fmt, spool_stdin=True,
                             delimiter=read.delimiter)  # fmt: skip
        try:
            eng.check_source(source)
            if memory is not None:
                read = _budget_chunks(read, source, EncoderFitter(settings), None, memory,
                                      eng.threads)  # fmt: skip
            return fit_on_source(eng, source, settings, read, memory=memory)[0]
        finally:
            source.close()


def for_engine(eng, data):
    """An input as the engine's workers see it: paths normalized (and made absolute for a
    cluster), in-memory data as it is."""
    return eng.worker_path(location.normalize(data)) if location.is_path(data) else data


def _check_args(threads, read, resume, data) -> None:
    if threads is not None:
        check_int(threads, "threads", 1)
    if resume and not location.is_path(data):
        raise UsageError("resume needs a file input (in-memory data has no file to recognize)")
    if resume and data == "-":
        raise UsageError("resume needs a file input (stdin cannot be read again)")


def selection(source: Source, settings: EncodeSettings, read: ReadSettings) -> Selection:
    """The input's columns for fitting an encoder with ``settings`` (features, label, ids
    as ``read`` chooses them), checked against what the settings need."""
    sel = select_columns(source, read.columns, read.label, read.ids)
    for name, value, what in (("gamma", "search", "the bandwidth"),
                              ("bits", "auto", "the bits for row_bytes")):  # fmt: skip
        if getattr(settings, name) != value:
            continue
        if sel.label is None:
            raise UsageError(f"{name}={value!r} chooses {what} by validation: give the label")
        if sel.label in getattr(source, "widths", {}):
            raise UsageError(f"{name}={value!r} needs a label of one column (a 1-D y)")
    return sel


def fit_on_source(
    eng,
    source: Source,
    settings: EncodeSettings,
    read: ReadSettings,
    fmap=None,
    memory: int | None = None,
) -> tuple[Encoder, Selection]:
    """The encoder ``settings`` describe (or of the unfitted map ``fmap``) fitted by the
    engine ``eng`` on an open source, and the source's selected columns: the fitting step
    of :func:`encode`, of :func:`fit_encoder` and of training on raw input.  ``bits='auto'``
    offers only the bits whose features the default ``train`` fits in ``memory`` (None:
    the machine's physical memory; :func:`rfcli.learn.footprint.default_train_fits`)."""
    sel = selection(source, settings, read)
    fits = None
    if settings.bits == "auto":  # (only then: an encode of given bits loads no learner's module)
        from rfcli.learn.footprint import default_train_fits

        fits = default_train_fits(memory, settings.store_chunk_rows)
    return fit_encoder_on(eng, source, sel, settings, read, fmap=fmap, fits=fits), sel


def select_like(
    source: Source, ref: FeatureStore | Encoder, read: ReadSettings, input_path: str
) -> tuple[Encoder, Selection]:
    """The encoder of the store ``ref`` (or the encoder ``ref`` itself) and the input's
    columns for it (a store's label and id columns are carried when the input has them)."""
    store = ref if isinstance(ref, FeatureStore) else None
    encoder = ref.encoder if store is not None else ref
    missing = [c for c in encoder.columns if c not in source.names]
    if missing:
        of = f"of the store {store.path}" if store is not None else "of the encoder"
        raise InputError(missing_columns(missing, of, input_path, source))
    ref_label = ((store.label_info if store else None) or {}).get("name")
    label = read.label or (ref_label if ref_label in source.names else None)
    known = store.meta.get("ids", []) if store is not None else []
    ids = read.ids or [i for i in known if i in source.names]
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
        fit=encoder.fit_report,
    )


def _budget_chunks(read, source, planner, ref, memory, threads) -> ReadSettings:
    from dataclasses import replace

    from rfcli.memory import encode_chunk_rows, physical_memory

    if ref is not None:
        enc = ref if isinstance(ref, Encoder) else ref.encoder
        d, fmap, row_bytes = len(enc.columns), enc.fmap, enc.row_bytes
    else:
        d = len(read.columns) if read.columns else len(source.names)
        fmap = planner.fmap
        q = planner.quantizer  # None: fitted later (empirical, at most 8 bits)
        row_bytes = q.row_bytes(fmap.n_features) if q is not None else fmap.n_features
    budget = physical_memory() if memory is None else memory
    rows = encode_chunk_rows(budget, d, fmap.n_features, row_bytes, threads,
                             fmap.estimate_bytes(d), given=memory is not None)  # fmt: skip
    if memory is None:  # only checked: the chunk size is the caller's
        return read
    return replace(read, chunk_rows=min(read.chunk_rows, rows))


def _reference(like) -> FeatureStore | Encoder | None:
    if like is None or isinstance(like, Encoder):
        return like
    if not location.is_path(like):
        raise ParameterTypeError(
            f"like must be a store's path or an Encoder, got {type(like).__name__}"
        )
    return FeatureStore(location.normalize(like))


__all__ = [
    "EncodeResult",
    "ResumeMismatch",
    "EncodeSettings",
    "ReadSettings",
    "default_output",
    "encode",
    "fit_encoder",
    "fit_on_source",
]
