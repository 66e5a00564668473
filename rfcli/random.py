"""Seeds to NumPy generators, and a counter-based hash for chunk-independent randomness.

Every random draw in rfcli comes from an explicit integer seed; nothing uses NumPy's
global state.  Independent streams for the parts of one object are spawned with
:class:`numpy.random.SeedSequence` so adding a stream never changes another one.
"""

from __future__ import annotations

import numpy as np


def check_seed(seed: int) -> int:
    bad_type = isinstance(seed, bool) or not isinstance(seed, int | np.integer)
    if bad_type or seed < 0:
        from rfcli.errors import ParameterTypeError, UsageError

        raise (ParameterTypeError if bad_type else UsageError)(
            f"seed must be a non-negative integer, got {seed!r}"
        )
    return int(seed)


def generator(seed: int, *stream: int) -> np.random.Generator:
    """A PCG64 generator for ``seed`` and an optional stream path (``generator(0, 1)``)."""
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(check_seed(seed), spawn_key=stream))
    )


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer (Steele, Lea & Flood 2014), vectorized, wrapping uint64."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def keyed_uniform(seed: int, rows: np.ndarray, n_cols: int) -> np.ndarray:
    """Uniform [0, 1) float64 values for every (row, column) pair, as a (len(rows), n_cols) array.

    A pure function of (seed, global row index, column index): the values for a row do
    not depend on how the input was chunked, on threads or on workers.
    """
    rows = np.asarray(rows, dtype=np.uint64)
    cols = np.arange(n_cols, dtype=np.uint64)
    with np.errstate(over="ignore"):
        key = _mix64(np.uint64(check_seed(seed)) * _GOLD + _GOLD)
        counter = (rows[:, None] << np.uint64(24)) ^ cols[None, :]
        z = _mix64(counter * _GOLD ^ key)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
