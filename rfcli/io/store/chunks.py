"""Store chunks: the codecs an array gets (zstd only where it pays, always crc32c) and the
writing of whole chunks straight to their files on a local disk.

Zarr's own write path costs more than the bytes, and zstd gains nothing on b-bit
Lloyd-Max codes, whose cells are near equiprobable (both measured: docs/store-format.md,
Codecs).  So:

* :func:`zstd_pays` decides per array from a sample of its first rows whether zstd
  shrinks it by at least :data:`MIN_GAIN`; the choice is recorded in the array's
  ``zarr.json`` like any Zarr codec chain (``bytes`` [+ ``zstd``] + ``crc32c``), so
  zarr-python and every other Zarr v3 reader decode it.
* :class:`ChunkFiles` encodes a whole chunk through that chain itself and writes it as
  one file, at the key Zarr's default chunk-key encoding gives it
  (``<array>/c/<i>[/0...]``).  Like zarr (``write_empty_chunks`` off) it writes no
  chunk that is all fill value.  The bytes equal what zarr-python writes (tested), zstd
  frames aside: they decompress to the same bytes (:class:`Zstd`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

#: zstd is kept when it saves at least this fraction of an array's sample
MIN_GAIN = 0.05
#: the sample: an array's first rows (all of them in a smaller store), whatever the engine
SAMPLE_ROWS = 1024
ZSTD_LEVEL = 3


class Zstd:
    """zstd frames of whole chunks, compressed (and decompressed, when read) by the zstd
    library that pyarrow carries (already loaded to read the input: numcodecs' import, 35
    modules and a scan of every installed package's entry points, cost an encode 70 ms of
    its main thread, which the worker threads wait on for the GIL).  Any zstd decoder
    reads the frames; their bytes may differ from numcodecs' for the same level (another
    zstd version), so a store's compressed chunks are rfcli's own, the same whatever the
    chunking, threads or engine."""

    def __init__(self, level: int = ZSTD_LEVEL):
        import pyarrow as pa

        self._codec = pa.Codec("zstd", compression_level=level)

    def encode(self, buf) -> Any:
        return self._codec.compress(buf)

    def decode(self, frame, size: int) -> bytes:
        """The ``size`` bytes of a frame (any zstd writer's: numcodecs' too)."""
        return self._codec.decompress(frame, decompressed_size=size, asbytes=True)


def zstd_pays(sample: np.ndarray | None) -> bool:
    """Whether zstd (level 3) saves at least :data:`MIN_GAIN` of ``sample`` (None, or a
    sample of text: keep it)."""
    if sample is not None and sample.dtype.kind in "iufb" and sample.size:
        raw = np.ascontiguousarray(sample)
        return Zstd().encode(raw).size <= (1 - MIN_GAIN) * raw.nbytes
    return True


def _all_zero(buf: np.ndarray) -> bool:
    """Whether every value of ``buf`` equals the fill value 0 (-0.0 included, as zarr
    compares; such a chunk is not stored).  Its first values decide at once for the
    usual chunk, which is not."""
    flat = buf.reshape(-1)
    return not np.count_nonzero(flat[:1024]) and not np.count_nonzero(flat)


def zarr_compressors(zstd: bool) -> list:
    """zarr-python's codec objects for ``bytes`` [+ ``zstd``] + ``crc32c``."""
    from zarr.codecs import Crc32cCodec, ZstdCodec

    return [ZstdCodec(level=ZSTD_LEVEL), Crc32cCodec()] if zstd else [Crc32cCodec()]


class ChunkFiles:
    """Writes whole chunks of one local Zarr v3 array (regular grid, default chunk keys,
    codecs ``bytes`` [+ ``zstd``] + ``crc32c``) straight to files.  :meth:`open` returns
    None for an array it does not handle (then write through zarr)."""

    def __init__(self, array_dir: str, chunks: tuple[int, ...], dtype: np.dtype, zstd):
        self.dir, self.chunks, self.dtype, self.zstd = array_dir, chunks, dtype, zstd

    @classmethod
    def open(cls, array, array_dir: str) -> ChunkFiles | None:
        from zarr.codecs import BytesCodec, Crc32cCodec, ZstdCodec

        meta = array.metadata
        key = getattr(meta, "chunk_key_encoding", None)
        if getattr(meta, "zarr_format", None) != 3 or getattr(key, "name", None) != "default":
            return None
        if getattr(key, "separator", None) != "/" or array.dtype.kind not in "iufb":
            return None
        codecs = list(meta.codecs)
        if len(codecs) not in (2, 3) or not isinstance(codecs[0], BytesCodec):
            return None
        if not isinstance(codecs[-1], Crc32cCodec):
            return None
        zstd = None
        if len(codecs) == 3:
            if not isinstance(codecs[1], ZstdCodec) or codecs[1].checksum:
                return None
            zstd = Zstd(level=codecs[1].level)
        if array.dtype.itemsize > 1 and array.dtype.byteorder == ">":
            return None
        fill = array.metadata.fill_value
        if fill is None or np.asarray(fill).item() != 0:
            return None
        return cls(array_dir, tuple(array.chunks), array.dtype, zstd)

    def encode(self, data: np.ndarray) -> tuple[Any, bytes] | None:
        """The stored bytes of one chunk as (body, crc32c), ``data`` being no larger than
        the chunk shape (the rest is fill value); None when the chunk is all fill value
        (not stored).  The body is the array itself when uncompressed (no copy)."""
        if data.shape != self.chunks:
            full = np.zeros(self.chunks, dtype=self.dtype)
            full[tuple(slice(0, s) for s in data.shape)] = data
            data = full
        buf = np.ascontiguousarray(data, dtype=self.dtype.newbyteorder("<"))
        if _all_zero(buf):
            return None
        if self.zstd is not None:
            body = self.zstd.encode(buf)
        else:
            body = buf.view()
            body.flags.writeable = False  # the checksum reads a read-only buffer in place
        import google_crc32c

        return body, np.uint32(google_crc32c.value(body)).astype("<u4").tobytes()

    def write(self, index: int, data: np.ndarray) -> None:
        """Store chunk ``(index, 0, ...)`` (``data``: its rows, at most a chunk's)."""
        path = os.path.join(self.dir, "c", str(index), *("0" for _ in self.chunks[1:]))
        body = self.encode(data)
        if body is None:
            if os.path.exists(path):
                os.remove(path)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body[0])
            f.write(body[1])
