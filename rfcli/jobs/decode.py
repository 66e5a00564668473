"""The decode job (``rfcli decode``): a store's decoded features written to a table."""

from __future__ import annotations

from rfcli.io.store import FeatureStore
from rfcli.io.writers import TableWriter
from rfcli.progress import NullProgress, Progress


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
