"""CPU threads: how many cores rfcli may use, and the BLAS thread limit that keeps worker
threads x BLAS threads within them.

An encode runs its chunks on worker threads, each calling BLAS on small blocks; a BLAS
library left to its default starts one thread per core inside every call, and its idle
threads spin between calls, so the two fight for the cores (measured: docs/cli.md, "What
the encode's implementation choices cost").  rfcli therefore computes with one BLAS thread
throughout (:func:`one_blas_thread`, through threadpoolctl, which knows OpenBLAS, MKL and
BLIS; an engine sets it once per job) and gets its parallelism from its own threads over
fixed row ranges, which also makes its sums independent of the thread count."""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any


def sleeping_blas_pool() -> None:
    """Let OpenBLAS's idle pool threads sleep at once instead of spinning (its documented
    ``OPENBLAS_THREAD_TIMEOUT``, the spin's length as a power of two of CPU cycles, at its
    least, 4); a user's own setting is kept.  Call it before NumPy or SciPy is imported
    (OpenBLAS reads it when it loads; the CLI does, first thing).

    rfcli computes with one BLAS thread throughout (:func:`one_blas_thread`), so the pool
    OpenBLAS starts when it loads never works for rfcli; by default its threads spin for
    2^28 cycles (about 0.1 s) before they sleep, on cores the job's threads need.  Measured
    on the 2-core VM with AVX-512 off, ``rfcli encode`` of 200,000 x 64 rows (m = 2048,
    b = 2), six runs each in turns: a pool thread took 7% of the run's CPU samples (perf);
    user time 1.05-1.17 -> 0.96-1.07 s, wall median 0.78 -> 0.67 s; a GP fit's user time
    fell by about 0.1 s (docs/cli.md, "What the encode's implementation choices cost")."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. a container's or taskset's
    limit, where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """Worker threads when none are asked for: every available core, at most 8."""
    return min(8, available_cores())


#: the variables a BLAS library reads its thread count from when it loads
_LOAD_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


class _OneThread:
    """The process-wide state of :func:`one_blas_thread`: how many blocks are inside it
    (jobs, their passes, nested helpers, in any thread) and the BLAS libraries it limited,
    with the thread counts to give them back.

    The limit is set through threadpoolctl's controllers for each library, but without its
    guard for OpenBLAS's process-wide pool (threadpoolctl >= 3.6 lets only the first thread
    that set a limit change it, and silently ignores the others: a job run in another
    thread would keep the default threads); the counted blocks here are that guard.

    While a block is open the environment asks for one BLAS thread, so that a library first
    loaded inside it (SciPy's own OpenBLAS, at SciPy's first import) starts with one; the
    next block entered, or the last one's exit, finds it and gives it the default threads
    back at the end."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0
        self.seen: tuple | None = None
        self.limited: dict[str, tuple] = {}  # library path: (controller, its thread count)
        self.env: dict[str, str | None] = {}
        self.default: int | None = None  # threads of a library loaded inside a block

    @staticmethod
    def _loaded() -> tuple:
        return ("numpy" in sys.modules, "scipy.linalg" in sys.modules)  # each loads a BLAS

    def enter(self) -> None:
        seen = self._loaded()
        with self.lock:
            self.depth += 1
            if self.depth == 1:
                self.env = {k: os.environ.get(k) for k in _LOAD_ENV}
                os.environ.update(dict.fromkeys(_LOAD_ENV, "1"))
            if seen != self.seen:  # first entry, or a BLAS loaded since (SciPy's own)
                self.seen = seen
                self._limit(first=self.depth == 1 and not self.limited)

    def _limit(self, first: bool) -> None:
        from threadpoolctl import ThreadpoolController

        for lib in ThreadpoolController().lib_controllers:
            if lib.user_api != "blas" or lib.filepath in self.limited:
                continue
            # loaded before the block: its own count; inside it: the count the first
            # libraries had (it started with the one the environment asked for)
            n = lib.get_num_threads() if first else self.default
            if first and self.default is None:
                self.default = n
            _set(lib, 1)
            self.limited[lib.filepath] = (lib, n)

    def exit(self) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                if self._loaded() != self.seen:  # loaded inside and not limited yet
                    self._limit(first=False)
                for lib, n in self.limited.values():
                    if n is not None:
                        _set(lib, n)
                for k, v in self.env.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
                self.limited, self.seen, self.default = {}, None, None


def _set(lib, n: int) -> None:
    """Set a BLAS library's threads (whichever Python thread asks: see :class:`_OneThread`)."""
    getattr(lib, "_real_set_num_threads", lib.set_num_threads)(n)


_STATE = _OneThread()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread inside the block: every product of rfcli runs there, so that
    its floating-point sums (and models) do not depend on the BLAS library's threads, and
    worker threads do not compete with BLAS threads for the cores.

    The limit is process-wide (BLAS libraries have one thread setting) and counted: the first
    block to enter sets it, nested blocks and blocks of other threads (two jobs in threads
    of one process, a notebook, joblib's threading backend) share it, and the last to leave
    restores the libraries' own limits.  A BLAS library first loaded inside a block (SciPy's,
    at its first import) starts with one thread too.  Code of other libraries that runs in
    the process meanwhile also gets one BLAS thread."""
    _STATE.enter()
    try:
        yield
    finally:
        _STATE.exit()


def blas_depth() -> int:
    """How many :func:`one_blas_thread` blocks are open (0: BLAS at its own limits)."""
    return _STATE.depth


def _one_thread_call(job):
    with one_blas_thread():
        return job()


def ordered_results(pool, jobs: Iterable[Callable[[], Any]], threads: int) -> Iterator[Any]:
    """The results of ``jobs`` (callables) run on ``pool``, each on one BLAS thread, at most
    ``threads + 1`` queued or running at a time, in their order.  A caller that stops
    early has the jobs not started cancelled and the running ones finished first."""
    pending: deque = deque()
    try:
        for job in jobs:
            pending.append(pool.submit(_one_thread_call, job))
            if len(pending) > threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()
        for f in pending:  # abandoned: running jobs end before their inputs are reused
            if not f.cancelled():
                f.exception()


#: the pool of the enclosing :func:`tile_threads` block (None: tiles run in the caller)
_TILE_PREFIX = "rfcli-tile"
_TILE_POOL: ContextVar[tuple | None] = ContextVar("rfcli_tile_pool", default=None)


@contextmanager
def tile_threads(threads: int) -> Iterator[None]:
    """Run the tiles of :func:`tiled` inside the block on ``threads`` threads (each on one
    BLAS thread).  A tiled computation splits its work into tiles fixed by the problem's
    shape alone and combines their results in tile order, so its numbers are the same bit
    for bit on any number of threads: the threads change the time only.  Tiles started
    from a tile's own thread run there (no nested pools)."""
    threads = max(int(threads), 1)
    if threads == 1:
        token = _TILE_POOL.set(None)
        try:
            yield
        finally:
            _TILE_POOL.reset(token)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads, thread_name_prefix=_TILE_PREFIX) as pool:
        token = _TILE_POOL.set((pool, threads))
        try:
            yield
        finally:
            _TILE_POOL.reset(token)


def run_tiles(fn: Callable[[Any], Any], tiles: Iterable[Any]) -> None:
    """``fn(tile)`` for each tile, for its effect (tiles write disjoint parts of an output),
    as :func:`tiled` runs them."""
    for _ in tiled(fn, tiles):
        pass


def tiled(fn: Callable[[Any], Any], tiles: Iterable[Any]) -> Iterator[Any]:
    """``fn(tile)`` for each tile, in tile order, each on one BLAS thread: on the threads of
    the enclosing :func:`tile_threads` block (at most threads + 1 results pending), else in
    the caller."""
    held = _TILE_POOL.get()
    if threading.current_thread().name.startswith(_TILE_PREFIX):
        held = None  # a tile's own tiles (whatever context its thread inherited)
    if held is not None:
        tiles = list(tiles)
        if len(tiles) <= 1:
            # one tile: in the caller, as the pool would run it (a hand-off costs more
            # than a small problem's whole product: a GP fit on 10 rows made 2,000 of them)
            held = None
    if held is None:
        limited = blas_depth() > 0  # else each tile opens (and closes) the limit itself
        for t in tiles:
            yield fn(t) if limited else _one_thread_call(lambda t=t: fn(t))
        return
    pool, threads = held
    yield from ordered_results(pool, (lambda t=t: fn(t) for t in tiles), threads)
