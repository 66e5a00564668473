"""The Zarr v3 nodes of a store, written two ways with the same values (and bytes, but for
the zstd frames: :class:`~rfcli.io.store.chunks.Zstd`).

* :class:`LocalNodes` writes a store on a local disk without zarr-python: each node's
  ``zarr.json`` is the document zarr-python 3 writes (:func:`array_doc`, :func:`group_doc`;
  tested byte for byte), and whole chunks go through :class:`~rfcli.io.store.chunks.ChunkFiles`.
  An encode then never imports zarr, whose import costs about 0.15 s of a command's start.
* :class:`ZarrNodes` writes through zarr-python (object storage, and whatever the local
  writer does not handle).

Both give a store the same layout: arrays with a regular chunk grid, default chunk keys
(``c/<i>/0...``), fill value 0 (``""`` for text) and the codecs ``bytes`` [+ ``zstd``] +
``crc32c``; the encoder's small arrays are one chunk each, zstd-compressed.  A node's
``zarr.json`` is rewritten atomically (a temporary file renamed into place, with the name
zarr uses for its own, which resume cleans up after a kill).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import numpy as np

from rfcli.io.store.chunks import ZSTD_LEVEL, ChunkFiles, Zstd

JSON_INDENT = 2  # zarr-python's default ``json_indent``


# -- documents ----------------------------------------------------------------------------
def codec_docs(dtype: np.dtype, zstd: bool) -> list[dict[str, Any]]:
    """The codec chain ``bytes`` [+ ``zstd``] + ``crc32c`` as zarr.json lists it."""
    dtype = np.dtype(dtype)
    out: list[dict[str, Any]] = [
        {"name": "bytes"}
        if dtype.itemsize == 1
        else {"name": "bytes", "configuration": {"endian": "little"}}
    ]
    if zstd:
        out.append({"name": "zstd", "configuration": {"level": ZSTD_LEVEL, "checksum": False}})
    out.append({"name": "crc32c"})
    return out


def _fill(dtype: np.dtype):
    if dtype.kind == "b":
        return False
    return 0.0 if dtype.kind == "f" else 0


def array_doc(shape, chunks, dtype, zstd: bool) -> dict[str, Any]:
    """An array's zarr.json document, key for key as zarr-python writes it."""
    dtype = np.dtype(dtype)
    return {
        "shape": [int(s) for s in shape],
        "data_type": dtype.name,
        "chunk_grid": {
            "name": "regular",
            "configuration": {"chunk_shape": [int(c) for c in chunks]},
        },
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": _fill(dtype),
        "codecs": codec_docs(dtype, zstd),
        "attributes": {},
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": [],
    }


def group_doc(attributes: dict | None = None) -> dict[str, Any]:
    return {"attributes": attributes or {}, "zarr_format": 3, "node_type": "group"}


def dump(doc: dict, final: bool = True) -> str:
    """A document's text: zarr's (indented) when ``final``, compact for a checkpoint
    (the standard library's C encoder; an indented dump runs in pure Python)."""
    if final:
        return json.dumps(doc, allow_nan=True, indent=JSON_INDENT)
    return json.dumps(doc, allow_nan=True, default=_plain)


def _plain(v):
    """NumPy scalars and arrays as JSON values."""
    if isinstance(v, np.generic | np.ndarray):
        return v.tolist()
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


def write_doc(node_dir: str, doc: dict, final: bool = True) -> None:
    os.makedirs(node_dir, exist_ok=True)
    path = os.path.join(node_dir, "zarr.json")
    tmp = f"{path}.{uuid.uuid4().hex}.partial"
    with open(tmp, "w") as f:
        f.write(dump(doc, final))
    os.replace(tmp, path)


def read_doc(node_dir: str) -> dict:
    with open(os.path.join(node_dir, "zarr.json")) as f:
        return json.load(f)


def zstd_of(doc: dict) -> bool | None:
    """Whether an array document's codecs are ``bytes`` + ``zstd`` + ``crc32c`` (True),
    ``bytes`` + ``crc32c`` (False), or anything else (None)."""
    names = [c.get("name") for c in doc.get("codecs", [])]
    if names == ["bytes", "crc32c"]:
        return False
    if names == ["bytes", "zstd", "crc32c"]:
        conf = doc["codecs"][1].get("configuration", {})
        if conf.get("level") == ZSTD_LEVEL and not conf.get("checksum"):
            return True
    return None


# -- arrays -------------------------------------------------------------------------------
class LocalArray:
    """One array of a local store written without zarr: its metadata document and the
    writer of its chunks (:attr:`files`); rows are written whole chunks at a time."""

    def __init__(self, node_dir: str, doc: dict):
        self.dir, self.doc = node_dir, doc
        self.dtype = np.dtype(doc["data_type"])
        chunks = tuple(doc["chunk_grid"]["configuration"]["chunk_shape"])
        zstd = zstd_of(doc)
        if zstd is None:
            raise ValueError(f"{node_dir}: codecs rfcli does not write")
        codec = Zstd(ZSTD_LEVEL) if zstd else None
        self.files: ChunkFiles | None = ChunkFiles(node_dir, chunks, self.dtype, codec)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.doc["shape"])

    def resize(self, rows: int, final: bool = True) -> None:
        """``rows`` long; ``final``: zarr's own text, else a compact checkpoint."""
        self.doc["shape"] = [int(rows), *self.doc["shape"][1:]]
        write_doc(self.dir, self.doc, final)

    def write_rows(self, start: int, data: np.ndarray) -> None:
        raise RuntimeError(f"{self.dir}: rows must start a chunk")

    def write_all(self, data: np.ndarray) -> None:
        """The whole array, one chunk (:func:`write_small`)."""
        if data.size:
            self.files.write(0, data)


class ZarrArray:
    """A zarr-python array with the interface of :class:`LocalArray`; whole chunks of a
    local one are still written straight to their files where ChunkFiles can."""

    def __init__(self, arr, node_dir: str | None):
        self.arr = arr
        self.dtype = arr.dtype
        self.files = ChunkFiles.open(arr, node_dir) if node_dir else None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.arr.shape)

    def resize(self, rows: int, final: bool = True) -> None:
        self.arr.resize((int(rows), *self.arr.shape[1:]))

    def write_rows(self, start: int, data: np.ndarray) -> None:
        if self.arr.shape[0] < start + len(data):
            self.arr.resize((start + len(data), *self.arr.shape[1:]))
        self.arr[start : start + len(data)] = data

    def write_all(self, data: np.ndarray) -> None:
        self.arr[...] = data


class ZarrNodes:
    """The nodes of a store written through zarr-python (object storage; text arrays)."""

    def __init__(self, root: str, create: bool = True, local: bool = False):
        import zarr

        self.root, self.local = root, local
        self.group = zarr.open_group(root, mode="w" if create else "r+")

    def _dir(self, name: str) -> str | None:
        return os.path.join(self.root, name) if self.local else None

    def create(self, name: str, shape, chunks, dtype, zstd: bool) -> ZarrArray:
        from rfcli.io.store.chunks import zarr_compressors

        text = dtype is str or np.dtype(dtype).kind in "USO"
        arr = self.group.create_array(
            name,
            shape=tuple(shape),
            chunks=tuple(chunks),
            dtype=str if text else dtype,
            compressors=zarr_compressors(True if text else zstd),
            fill_value="" if text else 0,
        )
        return ZarrArray(arr, self._dir(name))

    def open(self, name: str) -> ZarrArray | None:
        return ZarrArray(self.group[name], self._dir(name)) if name in self.group else None

    def attrs(self) -> dict:
        return dict(self.group.attrs)

    def set_attrs(self, key: str, value: dict, final: bool = True) -> None:
        self.group.attrs[key] = value


class LocalNodes:
    """The nodes of a store at a local path, written without zarr-python (which is
    imported only for what it alone writes here: text arrays, 0-d arrays)."""

    def __init__(self, root: str, create: bool = True):
        self.root = root
        self._zarr_nodes: ZarrNodes | None = None
        if create:
            write_doc(root, group_doc())
            self._attrs: dict = {}
        else:
            self._attrs = read_doc(root).get("attributes", {})

    def _zarr(self) -> ZarrNodes:
        if self._zarr_nodes is None:
            self._zarr_nodes = ZarrNodes(self.root, create=False, local=True)
        return self._zarr_nodes

    def _parents(self, name: str) -> None:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = os.path.join(self.root, *parts[:i])
            if not os.path.isfile(os.path.join(d, "zarr.json")):
                write_doc(d, group_doc())

    def create(self, name: str, shape, chunks, dtype, zstd: bool):
        self._parents(name)
        if dtype is str or np.dtype(dtype).kind not in "iufb" or not len(shape):
            return self._zarr().create(name, shape, chunks, dtype, zstd)
        arr = LocalArray(os.path.join(self.root, name), array_doc(shape, chunks, dtype, zstd))
        write_doc(arr.dir, arr.doc)
        return arr

    def open(self, name: str):
        d = os.path.join(self.root, name)
        if not os.path.isfile(os.path.join(d, "zarr.json")):
            return None
        doc = read_doc(d)
        if zstd_of(doc) is None or _numeric(doc) is None:
            return self._zarr().open(name)
        return LocalArray(d, doc)

    def attrs(self) -> dict:
        return dict(self._attrs)

    def set_attrs(self, key: str, value: dict, final: bool = True) -> None:
        """The group's attribute ``key``; ``final``: zarr's own text, else compact."""
        self._attrs[key] = value
        write_doc(self.root, group_doc(self._attrs), final)


def write_small(nodes: LocalNodes | ZarrNodes, name: str, data: np.ndarray) -> None:
    """A small array (the encoder's) written whole, as one zstd-compressed chunk."""
    data = np.ascontiguousarray(data)
    nodes.create(name, data.shape, _one_chunk(data.shape), data.dtype, True).write_all(data)


def open_nodes(root: str, remote: bool, create: bool = True) -> LocalNodes | ZarrNodes:
    return ZarrNodes(root, create) if remote else LocalNodes(root, create)


def _numeric(doc: dict) -> np.dtype | None:
    """The NumPy dtype of a numeric array document (None for text and the rest)."""
    try:
        dtype = np.dtype(doc["data_type"])
    except TypeError:
        return None
    return dtype if dtype.kind in "iufb" and len(doc["shape"]) else None


def _one_chunk(shape) -> tuple[int, ...]:
    return tuple(max(int(s), 1) for s in shape)
