"""Engines run the jobs' heavy work: the local engine (threads in this process) and the
Dask engine (a cluster, optional extra).  :func:`open_engine` is the one place that
chooses between them; Dask is imported only when it is chosen."""

from __future__ import annotations

from rfcli.engines.base import Engine, add
from rfcli.errors import UsageError
from rfcli.progress import Progress

ENGINES = ("local", "dask")


def open_engine(
    engine: str = "local",
    dask=None,
    progress: Progress | None = None,
    threads: int | None = None,
) -> Engine:
    """The engine named ``engine`` (``"local"`` or ``"dask"``).  ``dask``: a
    :class:`rfcli.engines.dask.DaskSettings` (default: a local cluster); ``threads``: the
    local engine's encode threads.  Use it as a context manager (it closes the cluster)."""
    if engine == "local":
        from rfcli.engines.local import LocalEngine

        return LocalEngine(progress, threads)
    if engine == "dask":
        from rfcli.engines.dask import DaskEngine

        return DaskEngine(dask, progress)
    raise UsageError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")


__all__ = ["ENGINES", "Engine", "add", "open_engine"]
