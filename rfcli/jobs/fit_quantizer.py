"""The empirical half of ``rfcli fit-quantizer``: a quantizer fitted on a map's values over a
row sample of an input (the designed quantizers need no data: rfcli.quantize).

The job reads the input once for a hash sample of its rows (sequential, as encode's first
fitting pass), maps the sampled rows through the map on ``threads`` worker threads, one BLAS
thread each, in fixed blocks of :data:`~rfcli.encoder_fit.FIT_BLOCK` rows joined in row
order, and runs the exact 1-D Lloyd-Max on the values: the quantizer is the same bit for
bit for any number of threads (a row's values do not depend on the rows mapped with it, and
the blocks do not depend on the threads)."""

from __future__ import annotations

from rfcli.constraints import settings_check
from rfcli.encoder import Encoder, map_fingerprint
from rfcli.encoder_fit import EMPIRICAL_SAMPLE, BottomK, fit_empirical
from rfcli.engines.local import LocalEngine
from rfcli.errors import InputError, UsageError, check_int
from rfcli.io import location
from rfcli.io.columns import missing_columns
from rfcli.io.readers import ReadSettings, iter_chunks, open_source, select_columns
from rfcli.io.store import FeatureStore
from rfcli.jobs.resources import Resources
from rfcli.learn.model_file import load_model
from rfcli.progress import NullProgress, Progress
from rfcli.quantize import Quantizer
from rfcli.quantize.base import check_bits
from rfcli.threads import default_threads


def load_encoder(path: str) -> Encoder:
    """The encoder of a store (directory) or of a model file (.npz).

    Parameters
    ----------
    path : str
        A feature store or an rfcli model file.

    Returns
    -------
    Encoder
        Its encoder (columns, preprocessing, map, quantizer).

    Raises
    ------
    InputError
        Neither exists at ``path``.
    """
    if location.isdir(path):
        return FeatureStore(path).encoder
    if not location.exists(path):
        raise InputError(f"{path}: no such store or model file")
    return load_model(path)[1]


def fit_quantizer_on_input(
    map_path: str,
    input_path,
    bits: int,
    *,
    n_values: int = EMPIRICAL_SAMPLE,
    seed: int = 0,
    domain: str = "linear",
    read: ReadSettings | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
) -> Quantizer:
    """``rfcli fit-quantizer --kind empirical``: the empirical quantizer of the map of
    ``map_path`` (store or model), on a hash sample of ``input_path``'s rows large enough
    for ``n_values`` feature values.

    The quantizer is Lloyd-Max on the map's own raw values (docs/methods.md, Quantizers:
    empirical); its config records the sample and the map's fingerprint, so that encode
    refuses it for another map.

    Parameters
    ----------
    map_path : str
        A feature store or model file whose map (and preprocessing) to fit for.
    input_path : str, numpy.ndarray, pandas.DataFrame or pyarrow.Table
        The rows (with the map's columns) whose feature values are sampled.
    bits : int
        Bits per feature, 1 to 8.
    n_values : int, default=EMPIRICAL_SAMPLE
        Feature values to fit on (at least ``2**bits``).
    seed : int, default=0
        Seed of the row and value hash samples.
    domain : {"linear", "log"}, default="linear"
        Fit on the values or on their logarithm (positive features).
    read : ReadSettings or None, default=None
        How the input is read (format, chunk rows, NaN handling, delimiter).
    threads : int or None, default=None
        Worker threads mapping the sampled rows, one BLAS thread each (default: the
        available cores, at most 8); the quantizer does not depend on it.
    progress : Progress or None, default=None
        Progress reporting.

    Returns
    -------
    Quantizer
        The fitted :class:`rfcli.quantize.empirical.EmpiricalQuantizer`.

    Raises
    ------
    UsageError
        Bad ``bits``, ``n_values`` or ``threads``.
    InputError
        No such store or model, unreadable input, missing columns or no rows.
    """
    check_bits(bits)
    if check_int(n_values, "n_values") < 2**bits:
        raise UsageError(f"n_values must be at least {2**bits} for {bits} bits, got {n_values}")
    read = settings_check(read, ReadSettings, "read")
    n_threads = Resources(threads=threads).threads or default_threads()
    progress = progress or NullProgress()
    encoder = load_encoder(map_path)
    source = open_source(input_path, read.fmt, delimiter=read.delimiter)
    try:
        missing = [c for c in encoder.columns if c not in source.names]
        if missing:
            raise InputError(missing_columns(missing, "of the map", source.path, source))
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
        raise InputError(f"{source.path}: no rows")
    fp = map_fingerprint(encoder.columns, encoder.preprocess, encoder.fmap)
    with LocalEngine(threads=n_threads) as engine:  # its pass threads (none with one)
        return fit_empirical(
            encoder.fmap,
            encoder.preprocess.transform(sample.rows),
            bits,
            seed,
            n_values=n_values,
            domain=domain,
            info={"map_fingerprint": fp, "map_kind": encoder.fmap.kind},
            pool=engine.pool,
        )
