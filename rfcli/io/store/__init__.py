"""Feature stores: bit-packed random-feature codes in a Zarr v3 group (docs/store-format.md).

Layout of a store ``S``::

    S/zarr.json            group attributes["rfcli"]: format, version, encoder config,
                           layout, label/id info, row count, completion marker
    S/codes                uint8 (n, row_bytes), chunked by rows, crc32c (zstd where it
                           pays: rfcli.io.store.chunks)
    S/norms                float32 (n,)  ||Q(z)|| per row (normalized estimator)
    S/row_scale            float32 (n,)  input row norms (only maps that need them)
    S/label                the target column (int64 / float64 / int32 class codes)
    S/ids/<name>           pass-through id columns
    S/encoder/map/<array>  the map's drawn arrays (W, tau, ...)
    S/encoder/preprocess/  standardization statistics

A store is written into a sibling ``S.partial`` and renamed into place after the
completion marker is set, so a store at ``S`` is complete unless something outside rfcli
interfered; readers refuse stores without the marker.  Store chunk rows depend only on
the row width, so codes are byte-identical whatever the reader's chunk size or threads.
"""

from rfcli.io.store.format import ATTR, FORMAT, FORMAT_VERSION, partial_path, store_chunk_rows
from rfcli.io.store.read import FeatureStore
from rfcli.io.store.write import RegionWriter, StoreWriter, prepare_output

__all__ = [
    "ATTR",
    "FORMAT",
    "FORMAT_VERSION",
    "FeatureStore",
    "RegionWriter",
    "StoreWriter",
    "partial_path",
    "prepare_output",
    "store_chunk_rows",
]
