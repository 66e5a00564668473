"""What a path holds, for the messages of commands given the wrong kind of file: a model
where a store is needed (``rfcli evaluate STORE MODEL``), raw Parquet data where a store is
needed (encode it first), a store where a model file is needed.  Only local paths are
looked into (a URL is described as missing or a directory at most)."""

from __future__ import annotations

import json
import os

from rfcli.io import location

#: the first bytes of the binary file types rfcli meets: (magic, kind, how messages name it)
MAGIC = (
    (b"PAR1", "parquet", "a Parquet file"),
    (b"PK\x03\x04", "zip", "a zip archive (an rfcli model file is one)"),
    (b"\x93NUMPY", "npy", "a NumPy .npy file"),
    (b"\x1f\x8b", "gzip", "a gzip file"),
)


def sniff(path: str, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a local file (``b""`` when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def _zip_is_model(path: str) -> bool:
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            return "__meta__.npy" in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def kind_of(path: str) -> str:
    """One of ``missing``, ``store``, ``partial-store``, ``zarr`` (Zarr data that is not a
    store), ``parquet``, ``parquet-dir``, ``model``, ``zip``, ``npy``, ``json``, ``text``,
    ``directory``, ``file``."""
    path = location.normalize(path)
    if location.is_url(path):
        try:
            if location.is_store(path):
                return "store"
            return "directory" if location.isdir(path) else "file"
        except Exception:  # credentials, network: the opener's own error says more
            return "file"
    if not os.path.exists(path):
        return "missing"
    if os.path.isdir(path):
        meta = os.path.join(path, "zarr.json")
        if os.path.isfile(meta):
            try:
                with open(meta) as f:
                    attrs = json.load(f).get("attributes") or {}
            except (OSError, ValueError, AttributeError):
                return "zarr"
            return "store" if "rfcli" in attrs else "zarr"
        if path.rstrip("/").endswith(".partial"):
            return "partial-store"
        for _, _, names in os.walk(path):
            if any(n.lower().endswith((".parquet", ".pq")) for n in names):
                return "parquet-dir"
        return "directory"
    head = sniff(path, 8)
    for magic, kind, _ in MAGIC:
        if head.startswith(magic):
            return "model" if kind == "zip" and _zip_is_model(path) else kind
    if path.lower().endswith(".json"):
        return "json"
    if head and b"\x00" not in head:
        return "text"
    return "file"


#: how each kind is named in messages
DESCRIPTION = {
    "store": "a feature store",
    "partial-store": "the partial store of an interrupted encode",
    "zarr": "a Zarr group or array of raw data",
    "parquet": "a Parquet file of raw data",
    "parquet-dir": "a directory of Parquet files (raw data)",
    "model": "an rfcli model file",
    "zip": "a zip archive",
    "npy": "a NumPy .npy file",
    "gzip": "a gzip file",
    "json": "a JSON file",
    "text": "a text (CSV) file",
    "directory": "a directory",
    "file": "a file",
}

RAW_DATA = ("zarr", "parquet", "parquet-dir", "text")


def not_a_store(path: str) -> str | None:
    """Why ``path`` is not a feature store, when it is something else that exists (None
    when it does not exist)."""
    kind = kind_of(path)
    if kind in ("missing", "store"):
        return None
    what = DESCRIPTION[kind]
    if kind in RAW_DATA:
        return f"{path}: is {what}, not a feature store: run `rfcli encode {path}` first"
    if kind == "model":
        return (
            f"{path}: is {what}, not a feature store (stores are the directories that "
            "`rfcli encode` writes)"
        )
    return f"{path}: is {what}, not a feature store (stores are made by `rfcli encode`)"


def not_a_model(path: str) -> str | None:
    """Why ``path`` is not a model file, when it is something else that exists."""
    kind = kind_of(path)
    if kind in ("missing", "model"):
        return None
    if kind == "store":
        return (
            f"{path}: is a feature store, not a model file (model files are made by "
            "`rfcli train`; the model comes first: MODEL then the data)"
        )
    return f"{path}: is {DESCRIPTION[kind]}, not an rfcli model file (made by `rfcli train`)"
