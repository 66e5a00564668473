"""Where a path points: the local file system, or an fsspec URL (``s3://``, ``gs://``,
``az://``, ``memory://``, ...) for stores, model files and Parquet inputs.

``file://`` URLs are local paths (every local guarantee holds: atomic renames, resume).
Other URLs go through fsspec and the protocol's package (s3fs for ``s3://``, gcsfs for
``gs://``, adlfs for ``az://``), imported only when such a URL is given; fsspec's own
options come from its configuration and the usual environment variables (AWS_*, ...).

Where the Python jobs take a path they also take in-memory data (a NumPy array, a pandas
DataFrame, a pyarrow Table: :mod:`rfcli.io.arrays`): it is nowhere, so the questions here
answer no for it (not a URL, not a store, does not exist as a file), ``normalize`` returns
it unchanged and :func:`name` describes it for messages (``<DataFrame 1000 x 17>``).
"""

from __future__ import annotations

import os

from rfcli.errors import InputError, UsageError, first_line

_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs",
             "abfs": "adlfs", "abfss": "adlfs", "http": "aiohttp", "https": "aiohttp"}  # fmt: skip


def is_path(obj) -> bool:
    """Whether ``obj`` names a place (a path or URL, ``str`` or ``os.PathLike``), rather
    than being in-memory data."""
    return isinstance(obj, str | os.PathLike)


def normalize(path):
    """``file://`` URLs become local paths and ``os.PathLike`` paths text; everything else
    (other paths, in-memory data) is returned as given."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        return path
    return path[len("file://") :] if path.startswith("file://") else path


def is_url(path) -> bool:
    """True for a (non-file) fsspec URL."""
    path = normalize(path)
    return isinstance(path, str) and "://" in path


def name(obj) -> str:
    """What messages and model files call an input: its path as given, the ``path`` of an
    opened source, or for in-memory data its kind and shape (:func:`describe`)."""
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, str):
        return obj
    path = getattr(obj, "path", None)  # a Source (an in-memory one names itself)
    return path if isinstance(path, str) else describe(obj)


def describe(data) -> str:
    """In-memory data in words: ``<DataFrame 1000 x 17>`` (rows x columns), ``<ndarray
    1000 x 16>``, ``<Table 1000 x 17>``; other shapes as such (``<ndarray shape (5,)>``)."""
    kind = type(data).__name__
    shape = getattr(data, "shape", None)
    if shape is None and hasattr(data, "num_rows"):  # pyarrow Table / RecordBatch
        shape = (data.num_rows, data.num_columns)
    if shape is None and isinstance(data, dict):
        shape = (len(next(iter(data.values()), ())), len(data))
    try:
        shape = tuple(int(v) for v in shape)
    except (TypeError, ValueError):
        return f"<{kind}>"
    if len(shape) == 2:
        return f"<{kind} {shape[0]} x {shape[1]}>"
    return f"<{kind} shape {shape}>"


def filesystem(url: str):
    """(fsspec filesystem, path within it) of a URL; a one-line error when the protocol's
    package is missing."""
    protocol = url.split("://", 1)[0]
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise UsageError(f"{url}: URLs need fsspec (pip install fsspec)") from None
    try:
        return url_to_fs(url)
    except ImportError:
        pkg = _PACKAGES.get(protocol, f"the fsspec package for {protocol}://")
        raise UsageError(f"{url}: {protocol}:// URLs need {pkg} (pip install {pkg})") from None
    except ValueError as e:
        raise UsageError(f"{url}: unknown URL protocol ({first_line(e)})") from None


def absolute(path: str) -> str:
    """A path every worker of a cluster can use as given: local paths made absolute
    (workers may run in another directory), URLs (and in-memory data) unchanged."""
    path = normalize(path)
    if not isinstance(path, str) or is_url(path) or path == "-":
        return path
    return os.path.abspath(path)


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts]) if is_url(base) else os.path.join(base, *parts)


def _ask(path: str, local, method: str) -> bool:
    """``local(path)`` for a local path, else the fsspec filesystem's ``method`` (False for
    in-memory data)."""
    path = normalize(path)
    if not isinstance(path, str):
        return False
    if not is_url(path):
        return local(path)
    fs, p = filesystem(path)
    return getattr(fs, method)(p)


def exists(path: str) -> bool:
    return _ask(path, os.path.exists, "exists")


def isdir(path: str) -> bool:
    return _ask(path, os.path.isdir, "isdir")


def isfile(path: str) -> bool:
    return _ask(path, os.path.isfile, "isfile")


def is_store(path: str) -> bool:
    """A Zarr group at ``path`` (an rfcli store if its attributes say so)."""
    return isdir(path) and isfile(join(normalize(path), "zarr.json"))


def remove_tree(path: str) -> None:
    """Delete a directory (prefix) and everything under it; missing is fine."""
    path = normalize(path)
    if not is_url(path):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return
    fs, p = filesystem(path)
    if fs.exists(p):
        fs.rm(p, recursive=True)


def read_bytes(path: str) -> bytes:
    fs, p = filesystem(path)
    try:
        with fs.open(p, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None


def write_bytes(path: str, data: bytes) -> None:
    """One object written whole (object stores make a single PUT atomic)."""
    fs, p = filesystem(path)
    with fs.open(p, "wb") as f:
        f.write(data)


def list_files(url: str) -> list[str]:
    """Every file under a URL prefix, or a glob's matches, as URLs (sorted)."""
    fs, p = filesystem(url)
    paths = fs.glob(p) if any(c in p for c in "*?[") else fs.find(p)
    return sorted(fs.unstrip_protocol(q) for q in paths if fs.isfile(q))


def file_ident(path: str) -> tuple:
    """(path, size, modification time or version tag): what identifies a file's content
    cheaply (the resume key of an encode)."""
    path = normalize(path)
    if not is_url(path):
        st = os.stat(path)
        return (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    fs, p = filesystem(path)
    info = fs.info(p)
    stamp = next((str(info[k]) for k in ("mtime", "LastModified", "updated", "ETag", "etag",
                                         "created") if k in info), "")  # fmt: skip
    return (path, info.get("size"), stamp)
