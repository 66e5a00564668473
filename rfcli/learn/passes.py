"""Passes over training data as map-reduce.

A learner states each pass over its data as a function ``fn(data, *args)`` that reads
``data.batches()`` and returns an *additive* partial result (numbers, arrays,
:class:`~rfcli.learn.ridge.RidgeStats`, tuples of these).  An engine runs it:

* :class:`LocalPasses` applies ``fn`` once to the whole data, in row order -- exactly the
  loop a learner would write by hand;
* the Dask engine (:class:`rfcli.dask_engine.DaskPasses`) applies it to row ranges of the
  store on the workers and sums the partial results with :func:`add` in a tree, so the
  answer equals the local one up to the floating-point order of the sums.

Everything a pass function needs travels in ``args``: it must be a module-level function
(workers import it by name).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rfcli.errors import UsageError
from rfcli.progress import NullProgress, Progress


def add(a: Any, b: Any) -> Any:
    """The sum of two partial results of one pass (tuples and lists element by element)."""
    if isinstance(a, tuple | list):
        return type(a)(add(x, y) for x, y in zip(a, b, strict=True))
    return a + b


class _Tracked:
    """``data`` whose batches advance a progress task."""

    def __init__(self, data, task):
        self._data, self._task = data, task

    def batches(self, *args, **kw):
        for batch in self._data.batches(*args, **kw):
            yield batch
            self._task.advance(len(batch))

    def __getattr__(self, name):
        return getattr(self._data, name)


class LocalPasses:
    """The local engine: every pass is one sequential loop over all rows."""

    def __init__(self, data, progress: Progress | None = None):
        self.data = data
        self.progress = progress or NullProgress()

    @property
    def n_rows(self) -> int:
        return self.data.n_rows

    def reduce(self, fn: Callable[..., Any], *args: Any, title: str | None = None) -> Any:
        if title is None:
            return fn(self.data, *args)
        with self.progress.task(title, self.data.n_rows) as task:
            return fn(_Tracked(self.data, task), *args)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def passes_for(data, engine: str = "local", dask=None, progress: Progress | None = None,
               cache: bool = False):  # fmt: skip
    """The passes of ``engine`` (local or dask) over ``data``; ``cache``: keep a store's
    packed codes in the Dask workers' memory between passes (the SVM)."""
    if engine == "local":
        return LocalPasses(data, progress)
    if engine != "dask":
        raise UsageError(f"--engine must be local or dask, got {engine!r}")
    from rfcli.dask_engine import DaskPasses, DaskSettings

    passes = DaskPasses(dask or DaskSettings(), progress)
    try:
        return passes.over(data, cache)
    except BaseException:
        passes.close()
        raise
