"""Atomic file output: write a temporary sibling, fsync, rename into place.  A reader never
sees a half-written model or quantizer file, and an interrupted write leaves nothing."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import IO

from rfcli.errors import OutputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_parent(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise OutputError(f"{path}: directory {parent} does not exist or is not writable")


def atomic_write(path: str, write: Callable[[IO], None], binary: bool = True) -> None:
    """Call ``write(file)`` on a temporary sibling of ``path``, then rename it to ``path``
    (with the permissions a plain ``open`` would give); the temporary is removed on any
    failure or interruption."""
    check_parent(path)
    parent = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=".tmp-", suffix=os.path.basename(path))
    except OSError as e:
        raise OutputError(f"{path}: cannot write ({e.strerror})") from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
