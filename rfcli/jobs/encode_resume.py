"""Resuming an interrupted encode (``rfcli encode --resume``, rfcli.jobs.encode): the key an
encode records in its partial store (its input and every setting that changes the output),
the check that a new encode shares it, naming each setting that differs
(:class:`ResumeMismatch`), and the writer that continues the partial store."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from rfcli.encoder import Encoder
from rfcli.errors import UsageError
from rfcli.io import location
from rfcli.io.readers import ReadSettings
from rfcli.io.store import FeatureStore, StoreWriter, partial_path


class ResumeMismatch(UsageError):
    """``resume`` refused: the partial store was started with another input or other
    settings; ``differences`` lists them as (setting, value then, value now), settings
    named by their parameter (``n_features``, ``read.label``, ``map_options.tol``; ``input``
    for the input file)."""

    def __init__(self, partial: str, differences: list[tuple[str, Any, Any]]):
        self.partial, self.differences = partial, differences
        super().__init__(self.text())

    def text(self, names: Callable[[str], str] = lambda name: name, again: str = "resume") -> str:
        """The message, each setting named by ``names`` (the command line: its flags)."""
        said = []
        for name, then, now in self.differences:
            if name == "input files":
                said.append("the input changed since (its size or modification time)")
            else:
                said.append(f"{names(name)} was {_value(then)}, now {_value(now)}")
        what = "; ".join(said) or "another input or other settings"
        return (
            f"{self.partial} was started with other settings: {what}; run the same encode as "
            f"the interrupted one to continue it, or without {again} to start over"
        )


def _value(v) -> str:
    if v is None:
        return "not given"
    return repr(v) if isinstance(v, str) else str(v)


def resumed(output: str, key: dict | None, overwrite: bool,
            notes: Callable[[str], None]) -> StoreWriter | None:  # fmt: skip
    """The writer that continues the partial store of an interrupted encode of ``output``
    (``resume``); None, with a note (``notes``) saying why, when the encode starts from the
    first row: no partial store, or one with no rows kept yet.  A partial store started
    with other settings is refused by name (:class:`ResumeMismatch`)."""
    partial = partial_path(output)
    if not os.path.isdir(partial):
        notes(f"resume: no partial store {partial} to continue (no interrupted encode left "
              "one): encoding from the first row")  # fmt: skip
        return None
    _check_resume_key(partial, key)
    writer = StoreWriter.resume(output, key, overwrite=overwrite)
    if writer is None:
        notes(f"resume: {partial} kept no rows (interrupted before its first checkpoint): "
              "encoding from the first row")  # fmt: skip
    return writer


def _check_resume_key(partial: str, key: dict | None) -> None:
    """Refuse a partial store whose recorded resume key differs from ``key``, naming the
    settings that differ (a store that cannot be read is left to the writer to refuse)."""
    from rfcli.io.store.format import ATTR
    from rfcli.io.store.nodes import open_nodes

    try:
        then = open_nodes(partial, remote=False, create=False).attrs()[ATTR].get("resume_key")
    except Exception:  # unreadable: StoreWriter.resume says why
        return
    if then == key:
        return
    if not isinstance(then, dict) or not isinstance(key, dict):
        raise ResumeMismatch(partial, [])
    diffs: list[tuple[str, Any, Any]] = []
    if then.get("input") != key.get("input"):
        diffs.append(("input", then.get("input"), key.get("input")))
    elif then.get("files") != key.get("files"):
        diffs.append(("input files", None, None))
    for group, prefix in (("settings", ""), ("read", "read."), ("like", "like")):
        a, b = then.get(group), key.get(group)
        if not isinstance(a, dict) or not isinstance(b, dict):
            if a != b:
                diffs.append((prefix or group, a, b))
            continue
        for name in sorted(set(a) | set(b)):
            x, y = a.get(name), b.get(name)
            if x == y:
                continue
            if isinstance(x, dict) and isinstance(y, dict):  # map_options: by option
                diffs += [(f"{prefix}{name}.{k}", x.get(k), y.get(k))
                          for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]  # fmt: skip
            else:
                diffs.append((f"{prefix}{name}", x, y))
    raise ResumeMismatch(partial, diffs)


def resume_key(
    input_path: str,
    settings: Any,
    read: ReadSettings,
    ref: FeatureStore | Encoder | None,
) -> dict:
    """What an encode with ``settings`` (:class:`rfcli.jobs.encode.EncodeSettings`) must
    share with an interrupted one to continue its partial store:
    the input file (name, size, modification time) and every setting that changes the
    output (not chunk size or threads, which never do).  A JSON object (recorded in the
    partial store until it completes): a digest of it all, the input, a digest of its
    files, and the settings themselves (so that a refusal names the setting that
    differs)."""
    import hashlib
    import json
    from dataclasses import asdict

    from rfcli.io.readers import detect_format
    from rfcli.io.sources import parquet_files

    if detect_format(input_path, read.fmt) == "parquet":
        files = parquet_files(input_path)
    elif os.path.isdir(input_path):  # a Zarr input: every file of it
        files = sorted(os.path.join(r, f) for r, _, fs in os.walk(input_path) for f in fs)
    else:
        files = [input_path]
    ident = {
        "input": input_path if location.is_url(input_path) else os.path.abspath(input_path),
        "files": [location.file_ident(f) for f in files],
        "settings": asdict(settings),
        "read": {k: v for k, v in asdict(read).items() if k != "chunk_rows"},
        "like": None if ref is None else _fingerprint(ref),
    }
    blob = json.dumps(ident, sort_keys=True, default=str)
    plain = json.loads(blob)  # as the store's JSON gives it back (tuples as lists, ...)
    files = json.dumps(plain["files"]).encode()
    return {"key": hashlib.sha256(blob.encode()).hexdigest()[:32], "input": plain["input"],
            "files": hashlib.sha256(files).hexdigest()[:16], "settings": plain["settings"],
            "read": plain["read"], "like": plain["like"]}  # fmt: skip


def _fingerprint(ref: FeatureStore | Encoder) -> str:
    return ref.fingerprint() if isinstance(ref, Encoder) else ref.meta["fingerprint"]
