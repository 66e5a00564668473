"""CPU threads: how many cores rfcli may use, and the BLAS thread limit that keeps worker
threads x BLAS threads within them.

An encode runs its chunks on worker threads, each calling BLAS on small blocks; a BLAS
library left to its default starts one thread per core inside every call, and its idle
threads spin between calls, so the two fight for the cores (measured on 2 cores: 12.4
CPU-seconds in 7.6 s wall for a one-thread encode, against 6.3 in 4.6 with one BLAS
thread).  Every parallel loop of rfcli therefore sets the BLAS limit for its duration
with :func:`blas_threads` (threadpoolctl, which knows OpenBLAS, MKL and BLIS)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


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


_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_NUM_THREADS")
_controller: tuple | None = None  # (the modules it saw, threadpoolctl's controller)


def _user_limit() -> int | None:
    """A BLAS thread count the user set in the environment (it caps rfcli's)."""
    for name in _ENV:
        v = os.environ.get(name, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    return None


@contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Limit BLAS to ``n`` threads (at most the user's OPENBLAS/MKL/OMP_NUM_THREADS) inside
    the block.  The libraries are looked up once per process (threadpoolctl's controller):
    a learner sets the limit on every pass."""
    global _controller
    import sys

    seen = ("numpy" in sys.modules, "scipy.linalg" in sys.modules)  # each loads a BLAS
    if _controller is None or _controller[0] != seen:
        from threadpoolctl import ThreadpoolController

        _controller = (seen, ThreadpoolController())
    user = _user_limit()
    limit = max(1, int(n) if user is None else min(int(n), user))
    with _controller[1].limit(limits=limit, user_api="blas"):
        yield
