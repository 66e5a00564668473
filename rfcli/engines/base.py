"""What every engine offers the jobs, and how a learner's pass is stated.

A learner states each pass over its data as a function ``fn(data, *args)`` that reads
``data.batches()`` and returns an *additive* partial result (numbers, arrays,
:class:`~rfcli.learn.ridge.RidgeStats`, tuples of these).  An engine runs it as a
map/reduce over row ranges: the local engine applies ``fn`` to each of the fixed *groups*
of :func:`pass_groups` (at most :data:`PASS_GROUPS` ranges of whole batches, on as many
threads as it has, each computing with one BLAS thread) and adds the partial results in
row order (:func:`sum_in_order`); the groups depend only on the rows and the batch size,
never on the threads or on what is cached, so the result is the same bit for bit on any
number of cores.  The Dask engine applies ``fn`` to its slices on the workers and sums the
partial results with :func:`add` in a tree, so the answer equals the local one up to the
floating-point order of the sums.

Everything a pass function needs travels in ``args``: it must be a module-level function
(workers import it by name).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def add(a: Any, b: Any) -> Any:
    """The sum of two partial results of one pass (tuples and lists element by element)."""
    if isinstance(a, tuple | list):
        return type(a)(add(x, y) for x, y in zip(a, b, strict=True))
    return a + b


#: the most row groups a local pass is split into (a pass's parallelism: 8 = the most
#: threads :func:`rfcli.threads.default_threads` gives)
PASS_GROUPS = 8


def pass_groups(n_rows: int | None, step: int) -> list[tuple[int, int]]:
    """The row ranges ``[a, b)`` (relative to the data's first row) a local pass is reduced
    over: ``min(PASS_GROUPS, batches)`` ranges of whole batches of ``step`` rows, their batch
    counts differing by at most one.  One range when the row count is unknown (a stream).

    >>> pass_groups(25, 10)
    [(0, 10), (10, 20), (20, 25)]
    >>> pass_groups(100, 10)
    [(0, 10), (10, 20), (20, 30), (30, 50), (50, 60), (60, 70), (70, 80), (80, 100)]
    """
    if n_rows is None:
        return [(0, -1)]
    n_batches = max(1, -(-int(n_rows) // step))
    g = min(PASS_GROUPS, n_batches)
    edges = [min(n_rows, (i * n_batches // g) * step) for i in range(g)] + [n_rows]
    return list(zip(edges[:-1], edges[1:], strict=True))


def sum_in_order(parts: Iterable) -> Any:
    """The partial results of a pass added in row order, left to right (a fixed order: the
    same sums whatever ran them); ``parts`` may be a generator, each part then added as it
    comes (two alive at a time)."""
    it = iter(parts)
    out = next(it)
    for p in it:
        out = add(out, p)
    return out


def batch_results(data, fn, args) -> list:
    """``fn(batch, *args)`` for every batch of ``data`` (with its id columns), in row order."""
    return [fn(batch, *args) for batch in data.batches(with_ids=True)]


class Engine:
    """Where a job's passes run.  Subclasses: :class:`rfcli.engines.local.LocalEngine`,
    :class:`rfcli.engines.dask.DaskEngine`; :func:`rfcli.engines.open_engine` chooses."""

    name = "?"
    #: threads of one worker that encodes chunks (sizes the chunks for a memory budget)
    threads = 1
    #: a chunk pass is one range over every row (one partial result)
    whole_pass = False
    #: the job's memory budget in bytes (its ``memory``; None: physical memory), set by
    #: :meth:`rfcli.jobs.resources.Resources.open`
    memory: int | None = None

    def worker_path(self, path: str) -> str:
        """``path`` as the engine's workers must see it."""
        return path

    def check_source(self, source) -> None:
        """Refuse input the engine cannot read (the Dask engine reads Parquet)."""

    def check_encode(self, read, resume: bool) -> None:
        """Refuse encode settings the engine cannot honour."""

    def chunk_pass(self, source, sel, read, fn, args: tuple, *, title: str) -> list:
        """A pass over the raw input ``source`` (columns ``sel``, chunks as ``read`` says):
        ``fn(chunks, start, *args)`` on row ranges ``[start, stop)`` that start on
        :data:`rfcli.encoder_fit.FIT_BLOCK` boundaries, each computing with one BLAS thread;
        the partial results in row order (the encoder's fitting passes,
        :func:`rfcli.encoder_fit.fit_encoder_on`)."""
        raise NotImplementedError

    def write_store(self, source, sel, read, encoder, writer) -> str:
        """Encode every row of ``source`` into ``writer``'s store and complete it."""
        raise NotImplementedError

    def passes(self, data, cache: bool = False, threads: int | None = None):
        """Passes over ``data`` (:class:`rfcli.learn.data.StoreData` or ``RawData``);
        ``cache``: keep a store's packed codes in the workers' memory between passes;
        ``threads``: at most this many of the engine's threads at once (a pass whose partial
        results are large, within a memory budget; the result is the same for any number)."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        # one BLAS thread for the whole job, its client-side solves included, set once here
        # (a process-wide limit, counted: jobs in threads of one process share it)
        from rfcli.threads import one_blas_thread

        if getattr(self, "_blas", None) is None:
            self._blas = one_blas_thread()
            self._blas.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            self.close()
        finally:
            blas, self._blas = getattr(self, "_blas", None), None
            if blas is not None:
                blas.__exit__(None, None, None)
