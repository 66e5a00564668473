"""Reading a local store without zarr-python, where its arrays have the layout rfcli writes
(:mod:`rfcli.io.store.nodes`): Zarr v3, a regular chunk grid whose chunks span every axis
but the first, default ``/`` chunk keys, fill value 0, little-endian numbers, and the codecs
``bytes`` [+ ``zstd``] + ``crc32c``.  Any other array (text ids, another writer's chunking
or codecs) is read through zarr-python, imported then.

zarr's import (about 0.2 s with numcodecs and asyncio) was most of the start of a
``predict`` or ``evaluate`` on a store, and its read path copies each chunk through an
event loop; here a chunk is one file read, its crc32c checked, zstd frames decompressed by
pyarrow's zstd (any writer's frames: the chunk's size is known).  Missing chunk files read
as the fill value, as zarr reads them (the store's readers refuse missing codes first).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rfcli.io.store.chunks import Zstd
from rfcli.io.store.nodes import read_doc


class ChecksumError(ValueError):
    """A chunk's bytes do not match their crc32c."""


class LocalGroup:
    """The nodes of a local store: ``attrs``, ``name in group``, ``group[name]`` (an array,
    as zarr-python's group gives it)."""

    def __init__(self, root: str):
        self.root = root
        doc = read_doc(root)
        if doc.get("zarr_format") != 3 or doc.get("node_type") != "group":
            raise ValueError("zarr.json is not a Zarr v3 group")
        self.attrs: dict = doc.get("attributes", {})
        self._zarr = None
        self._arrays: dict[str, Any] = {}  # read once: a learner asks for labels per batch

    def _dir(self, name: str) -> str:
        return os.path.join(self.root, *name.split("/"))

    def __contains__(self, name: str) -> bool:
        return os.path.isfile(os.path.join(self._dir(name), "zarr.json"))

    def __getitem__(self, name: str):
        if name not in self._arrays:
            self._arrays[name] = self._open(name)
        return self._arrays[name]

    def _open(self, name: str):
        d = self._dir(name)
        try:
            doc = read_doc(d)
        except FileNotFoundError:
            raise KeyError(name) from None
        arr = LocalArrayReader.open(d, doc)
        if arr is not None:
            return arr
        if self._zarr is None:
            import zarr

            self._zarr = zarr.open_group(self.root, mode="r")
        return self._zarr[name]


class LocalArrayReader:
    """One array read chunk file by chunk file; indexed like a zarr array by a slice of
    rows (``a[r0:r1]``) or whole (``a[...]``)."""

    def __init__(self, node_dir: str, shape, chunks, dtype: np.dtype, zstd: bool):
        self.dir, self.shape, self.chunks, self.dtype = node_dir, shape, chunks, dtype
        self.zstd = zstd
        self.ndim = len(shape)

    @classmethod
    def open(cls, node_dir: str, doc: dict[str, Any]) -> LocalArrayReader | None:
        """The reader of an array with rfcli's layout, else None."""
        try:
            dtype = np.dtype(doc["data_type"])
            shape = tuple(int(s) for s in doc["shape"])
            grid, key = doc["chunk_grid"], doc["chunk_key_encoding"]
            chunks = tuple(int(c) for c in grid["configuration"]["chunk_shape"])
            codecs = [c.get("name") for c in doc["codecs"]]
            fill = doc["fill_value"]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        simple = (
            doc.get("zarr_format") == 3
            and doc.get("node_type") == "array"
            and not doc.get("storage_transformers")
            and dtype.kind in "iufb"
            and grid.get("name") == "regular"
            and key.get("name") == "default"
            and key.get("configuration", {}).get("separator") == "/"
            and fill in (0, False)
            and len(shape) >= 1
            and len(chunks) == len(shape)
            and chunks[0] > 0
            and chunks[1:] == shape[1:]
            and codecs in (["bytes", "crc32c"], ["bytes", "zstd", "crc32c"])
        )
        if not simple:
            return None
        endian = (doc["codecs"][0].get("configuration") or {}).get("endian", "little")
        if dtype.itemsize > 1 and endian != "little":
            return None
        return cls(node_dir, shape, chunks, dtype.newbyteorder("<"), len(codecs) == 3)

    def __getitem__(self, key) -> np.ndarray:
        if key is Ellipsis or key == ():
            return self._rows(0, self.shape[0])
        if isinstance(key, slice) and key.step in (None, 1):
            r0, r1, _ = key.indices(self.shape[0])
            return self._rows(r0, max(r0, r1))
        raise TypeError(f"{self.dir}: only row slices are read, got {key!r}")

    def _rows(self, r0: int, r1: int) -> np.ndarray:
        cr = self.chunks[0]
        out = np.empty((r1 - r0, *self.shape[1:]), dtype=self.dtype)
        for i in range(r0 // cr, -(-r1 // cr)):
            a, b = max(r0, i * cr), min(r1, (i + 1) * cr)
            out[a - r0 : b - r0] = self._chunk(i)[a - i * cr : b - i * cr]
        return out

    def _chunk(self, i: int) -> np.ndarray:
        path = os.path.join(self.dir, "c", str(i), *("0" for _ in self.shape[1:]))
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return np.zeros(self.chunks, dtype=self.dtype)
        import google_crc32c

        body = np.frombuffer(raw, dtype=np.uint8)[:-4]  # read-only, no copy
        if len(raw) < 4 or google_crc32c.value(body) != int.from_bytes(raw[-4:], "little"):
            raise ChecksumError(f"{path}: crc32c checksum mismatch")
        size = int(np.prod(self.chunks)) * self.dtype.itemsize
        if self.zstd:
            body = _zstd().decode(body, size)
        if len(body) != size:
            raise ValueError(f"{path}: {len(body)} bytes, a chunk holds {size}")
        return np.frombuffer(body, dtype=self.dtype).reshape(self.chunks)


_codec: Zstd | None = None


def _zstd() -> Zstd:
    """One codec for every array (decompressing needs no level), made on first use."""
    global _codec
    if _codec is None:
        _codec = Zstd()
    return _codec
