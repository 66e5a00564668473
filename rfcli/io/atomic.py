"""Atomic output: a file is written to a temporary sibling, fsynced and renamed into place
(a reader never sees a half-written model or quantizer file, and an interrupted write
leaves nothing); a directory (a store) is moved into place by :func:`replace_tree`, which
completes or leaves what it replaces as it was."""

from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile
import uuid
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
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):  # the file at ``path`` is as it was
            raise OutputError(f"{path}: cannot write ({e.strerror or e})") from None
        raise


def _exchange(a: str, b: str) -> bool:
    """Swap the paths ``a`` and ``b`` in one atomic step (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``); False where the system or its file system has no such call."""
    if sys.platform != "linux":
        return False
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), b)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def replace_tree(src: str, dst: str) -> None:
    """Move the directory ``src`` to ``dst``, replacing whatever ``dst`` is: either the move
    completes, or ``dst`` is left as it was and OSError is raised (``src`` stays).

    An existing ``dst`` is swapped with ``src`` in one atomic step where the system can
    (Linux); elsewhere it is renamed aside, ``src`` renamed into place, and renamed back if
    that fails.  The replaced tree is then deleted."""
    if not os.path.lexists(dst):
        os.replace(src, dst)
        return
    if _exchange(src, dst):
        _remove(src)  # what ``dst`` was
        return
    aside = f"{dst.rstrip('/')}.old-{uuid.uuid4().hex[:12]}"
    os.replace(dst, aside)
    try:
        os.replace(src, dst)
    except BaseException:
        os.replace(aside, dst)
        raise
    _remove(aside)
