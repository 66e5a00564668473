"""Memory budgets (``--memory``): chunk sizes derived from a budget, and refusal of
configurations whose fixed-size arrays cannot fit (e.g. KRR's m x m matrices).

The budget covers rfcli's working arrays, not the interpreter and libraries (about
150 MiB).  Without ``--memory`` the budget is the machine's physical memory, so hopeless
configurations still fail up front with a clear message instead of swapping or being
killed.
"""

from __future__ import annotations

import os
import re

from rfcli.errors import UsageError

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str | int | None) -> int | None:
    """``"512M"``, ``"2G"``, ``"1.5GiB"``, ``"1000000"`` -> bytes (binary units)."""
    if text is None or isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?B)?\s*", str(text), re.IGNORECASE)
    if not m:
        raise UsageError(f"{text!r} is not a size such as 512M or 4G")
    value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if value < 1:
        raise UsageError(f"a memory size must be positive, got {text!r}")
    return int(value)


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 40


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def encode_chunk_rows(
    budget: int, d: int, m: int, row_bytes: int, threads: int, map_bytes: int
) -> int:
    """Rows per encode chunk so that the chunks in flight fit ``budget``: up to
    ``2 threads + 1`` chunks are alive (read-ahead, encoding, writing), each holding the
    raw and preprocessed rows (float64), the feature block and its temporaries (bounded by
    the 256-row encode blocks) and the packed output."""
    fixed = map_bytes + 4 * 256 * m * 4  # map arrays + a few float32 blocks per thread
    per_row = (2 * threads + 1) * (2 * 8 * d + row_bytes + 16)
    rows = (budget - fixed * max(threads, 1)) // per_row
    if rows < 256:
        raise UsageError(
            f"a memory budget of {human(budget)} cannot hold the map ({human(map_bytes)}) and "
            "a 256-row chunk per thread; raise memory or lower n_features or threads"
        )
    return int(min(rows, 1 << 20))


def check_fits(what: str, need: int, budget: int, hint: str) -> None:
    if need > budget:
        raise UsageError(
            f"{what} needs about {human(need)} of memory, over the budget of {human(budget)}; "
            f"{hint}"
        )


def learner_need(model: str, m: int, k: int) -> int:
    """Fixed memory of a learner with m features and k outputs (float64 matrices):
    KRR keeps Phi'Phi for the fit and validation rows plus a Cholesky copy and solves
    (about 4 m^2); the SVM keeps the Gram preconditioner and its factor (2 m^2) and
    k weight vectors with L-BFGS history; GPR the statistics, eigenbasis and posterior
    (about 4 m^2)."""
    mm = 8 * m * m
    if model == "svm":
        return 2 * mm + 8 * m * k * 24
    return 4 * mm + 8 * m * k * 4


def steady_malloc() -> None:
    """Fix glibc's mmap threshold at 1 MiB, for the many passes of a learner (``rfcli
    train``).  glibc raises the threshold to the largest block freed so far, after which
    chunk-sized arrays (MiBs each) come from the heap and fragment it: peak RSS then creeps
    up with every pass over a store.  With a fixed threshold each large array is its own
    mapping, returned to the system when freed (measured: SVM peak RSS 180 -> 189 MiB from
    5 to 20 iterations before, 156 -> 157 after).  Not for encode: one pass does not creep
    (peak 219 -> 226 MiB from 100k to 10M rows) and fresh mappings cost it a third of its
    time (10M rows: 25.8 s without, 38.8 s with).  Skipped when MALLOC_MMAP_THRESHOLD_ is
    set or the libc is not glibc."""
    import os
    import sys

    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 20)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def encode_malloc() -> None:
    """glibc settings for one long streaming pass (``rfcli encode``): arrays up to 64 MiB
    come from the heap and up to 256 MiB of freed heap stay mapped, so the chunk-sized
    arrays that every chunk allocates and frees again reuse pages instead of being mapped,
    zero-filled by the kernel and unmapped each time (measured on 200k rows, m = 2048:
    system time 0.78 -> 0.27 s, page faults 94k -> 28k; peak RSS unchanged, it is bounded
    by the chunk size).  Skipped when MALLOC_MMAP_THRESHOLD_ is set or the libc is not
    glibc."""
    import os
    import sys

    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass
