"""The empirical half of ``rfcli fit-quantizer``: a quantizer fitted on a map's values over a
row sample of an input (the designed quantizers need no data: rfcli.quantize)."""

from __future__ import annotations

from rfcli.constraints import settings_check
from rfcli.encoder import Encoder, map_fingerprint
from rfcli.encoder_fit import EMPIRICAL_SAMPLE, BottomK, fit_empirical
from rfcli.errors import InputError, UsageError, check_int
from rfcli.io import location
from rfcli.io.readers import ReadSettings, iter_chunks, open_source, select_columns
from rfcli.io.store import FeatureStore
from rfcli.learn.model_file import load_model
from rfcli.progress import NullProgress, Progress
from rfcli.quantize import Quantizer
from rfcli.quantize.base import check_bits


def load_encoder(path: str) -> Encoder:
    """The encoder of a store (directory) or of a model file (.npz)."""
    if location.isdir(path):
        return FeatureStore(path).encoder
    if not location.exists(path):
        raise InputError(f"{path}: no such store or model file")
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
    if check_int(n_values, "n_values") < 2**bits:
        raise UsageError(f"n_values must be at least {2**bits} for {bits} bits, got {n_values}")
    read = settings_check(read, ReadSettings, "read")
    progress = progress or NullProgress()
    encoder = load_encoder(map_path)
    source = open_source(input_path, read.fmt, delimiter=read.delimiter)
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
