"""What every engine offers the jobs, and how a learner's pass is stated.

A learner states each pass over its data as a function ``fn(data, *args)`` that reads
``data.batches()`` and returns an *additive* partial result (numbers, arrays,
:class:`~rfcli.learn.ridge.RidgeStats`, tuples of these).  An engine runs it: the local
engine applies ``fn`` once to the whole data, in row order -- exactly the loop a learner
would write by hand; the Dask engine applies it to row ranges on the workers and sums the
partial results with :func:`add` in a tree, so the answer equals the local one up to the
floating-point order of the sums.

Everything a pass function needs travels in ``args``: it must be a module-level function
(workers import it by name).
"""

from __future__ import annotations

from typing import Any


def add(a: Any, b: Any) -> Any:
    """The sum of two partial results of one pass (tuples and lists element by element)."""
    if isinstance(a, tuple | list):
        return type(a)(add(x, y) for x, y in zip(a, b, strict=True))
    return a + b


def batch_results(data, fn, args) -> list:
    """``fn(batch, *args)`` for every batch of ``data`` (with its id columns), in row order."""
    return [fn(batch, *args) for batch in data.batches(with_ids=True)]


class Engine:
    """Where a job's passes run.  Subclasses: :class:`rfcli.engines.local.LocalEngine`,
    :class:`rfcli.engines.dask.DaskEngine`; :func:`rfcli.engines.open_engine` chooses."""

    name = "?"
    #: threads of one worker that encodes chunks (sizes the chunks for a memory budget)
    threads = 1

    def worker_path(self, path: str) -> str:
        """``path`` as the engine's workers must see it."""
        return path

    def check_source(self, source) -> None:
        """Refuse input the engine cannot read (the Dask engine reads Parquet)."""

    def check_encode(self, read, resume: bool) -> None:
        """Refuse encode settings the engine cannot honour."""

    def fit_encoder(self, source, sel, settings, read, fmap=None):
        """The encoder ``settings`` describe (or of ``fmap``), fitted on ``source``."""
        raise NotImplementedError

    def write_store(self, source, sel, read, encoder, writer) -> str:
        """Encode every row of ``source`` into ``writer``'s store and complete it."""
        raise NotImplementedError

    def passes(self, data, cache: bool = False):
        """Passes over ``data`` (:class:`rfcli.learn.data.StoreData` or ``RawData``);
        ``cache``: keep a store's packed codes in the workers' memory between passes."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
