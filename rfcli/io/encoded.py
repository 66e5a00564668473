"""Raw input seen as a feature store: :class:`EncodedInput` offers what a learner reads
from a :class:`~rfcli.io.store.FeatureStore` (packed codes and norms by row range, the
label, the layout), computed from the input's rows by an encoder when asked for, so that
training on raw input (in-memory data above all) runs the very passes of training on the
store ``rfcli encode`` would write from it, with nothing written.

The codes of a row depend only on the row and its global index (the ``stoc`` quantizer's
hash), never on the chunking, and the store's chunk size is the one that store would have
(:func:`~rfcli.io.store.format.store_chunk_rows`, at most its rows): a learner reading the
same row ranges gets the same arrays as from the store, so it computes the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from rfcli.encoder import EncodedChunk, Encoder
from rfcli.errors import UsageError
from rfcli.io.readers import Selection, check_label, read_range
from rfcli.io.sources import ParquetSource, Source
from rfcli.io.store.format import (
    fitted_chunk_rows,
    label_kind,
    layout,
    layout_bits,
    store_chunk_rows,
)


class EncodedInput:
    """The rows of ``source`` (columns ``sel``: features and label) encoded by ``encoder``
    on demand, with the interface of a :class:`~rfcli.io.store.FeatureStore` that
    :class:`rfcli.learn.data.StoreData` reads.  ``chunk_rows``: the store chunk size it
    stands for (default: that of a store ``rfcli encode`` writes with this encoder).

    The source must read row ranges (``read_rows``: in-memory data and Parquet); NaN
    features follow ``on_nan`` (``error`` or ``zero``: every row keeps its index)."""

    def __init__(self, source: Source, sel: Selection, encoder: Encoder, *,
                 chunk_rows: int | None = None, on_nan: str = "error"):  # fmt: skip
        if not hasattr(source, "read_rows"):
            raise UsageError(
                f"{source.path}: training on raw input reads it by row ranges: give Parquet or "
                "in-memory data, or encode a store first (rfcli.encode)"
            )
        if on_nan == "drop":
            raise UsageError(
                "on_nan='drop' changes the rows' indices: training on raw input takes on_nan "
                "'error' or 'zero' (or encode a store with drop first)"
            )
        self.source, self.sel, self.encoder = source, sel, encoder
        self.path = source.path
        self.n_rows = int(source.num_rows)
        chunk_rows = int(chunk_rows or store_chunk_rows(encoder.row_bytes))
        self.chunk_rows = fitted_chunk_rows(chunk_rows, self.n_rows)
        self._features = Selection(sel.features)
        self.on_nan = on_nan
        self.layout = layout(encoder, self.chunk_rows)
        self.label_info = None
        if sel.label is not None:
            first = source.read_rows([sel.label], 0, 1)[sel.label]
            self.label_info = {"name": sel.label, "kind": label_kind(first)}
            width = getattr(source, "widths", {}).get(sel.label)
            if width is not None:  # a 2-D label: ``width`` regression outputs
                self.label_info["outputs"] = int(width)
        self.meta = {"fingerprint": encoder.fingerprint(), "ids": []}
        #: whether threads may read row ranges at once (in-memory rows: slicing; a Parquet
        #: file's handle is shared)
        self.thread_safe_reads = not isinstance(source, ParquetSource)

    @property
    def n_features(self) -> int:
        return self.encoder.n_features

    @property
    def bits(self) -> float:
        return layout_bits(self.layout)

    def iter_encoded(
        self, chunk_rows: int | None = None, start: int = 0, stop: int | None = None
    ) -> Iterator[EncodedChunk]:
        """The encoded rows ``start .. stop-1`` in chunks of ``chunk_rows``."""
        stop = self.n_rows if stop is None else min(stop, self.n_rows)
        enc = self.encoder
        for ch in read_range(self.source, self._features, start, stop,
                             chunk_rows or self.chunk_rows, self.on_nan,
                             enc.input_dtype):  # fmt: skip
            yield enc.encode_chunk(ch.X, ch.row0)

    def label_values(self, start: int = 0, stop: int | None = None) -> np.ndarray | None:
        """The label values of rows ``start .. stop-1`` as in the input (NaN refused)."""
        name = self.sel.label
        if name is None:
            return None
        stop = self.n_rows if stop is None else min(stop, self.n_rows)
        y = self.source.read_rows([name], start, stop)[name]
        check_label(y, name, start, self.path)
        return y

    def ids(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        return {}


__all__ = ["EncodedInput", "label_kind"]
