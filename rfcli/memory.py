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
    """Bytes in binary units up to EiB, beyond that in powers of ten of EiB (a refused rule's
    need can be 1e22 bytes)."""
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        n /= 1024
        if n < 1024 or unit == "EiB":
            break
    return f"{n:.1f} {unit}" if n < 1e5 else f"{n:.2g} {unit}"


def encode_chunk_rows(
    budget: int,
    d: int,
    m: int,
    row_bytes: int,
    threads: int,
    map_bytes: int,
    given: bool = True,
) -> int:
    """Rows per encode chunk so that the chunks in flight fit ``budget``: up to
    ``2 threads + 1`` chunks are alive (read-ahead, encoding, writing), each holding the
    raw and preprocessed rows (float64), the feature block and its temporaries (bounded by
    the 256-row encode blocks) and the packed output.  The map's arrays are drawn in
    float64 (about 4 times their float32 size while they are drawn).

    Refused (with the sizes) when the map and one 256-row chunk per thread cannot fit:
    ``given`` says whether ``budget`` is the caller's (``memory``) or the machine's
    physical memory, which the message then names."""
    threads = max(int(threads), 1)
    blocks = threads * 4 * 256 * m * 4  # a few float32 (256, m) blocks per thread
    per_row = (2 * threads + 1) * (2 * 8 * d + row_bytes + 16)
    rows = (budget - map_bytes - blocks) // per_row
    if rows < 256 or 4 * map_bytes > budget:
        need = max(4 * map_bytes, map_bytes + blocks + 256 * per_row)
        if given:
            raise UsageError(
                f"a memory budget of {human(budget)} cannot hold the map ({human(map_bytes)}) "
                f"and a 256-row chunk per thread (about {human(need)} in all); raise memory or "
                "lower n_features or threads"
            )
        raise UsageError(
            f"{m:,} features need about {human(need)} of memory (the map's arrays "
            f"{human(map_bytes)}, {human(4 * map_bytes)} while they are drawn; "
            f"{human(blocks // threads)} per thread for its 256-row blocks), more than this "
            f"machine's {human(budget)}; lower n_features (or threads), or set memory to "
            "allow more"
        )
    return int(min(rows, 1 << 20))


#: the fewest rows a batch of a streaming pass may have under a memory budget
MIN_BATCH_ROWS = 256


def batch_rows(budget: int, d: int, m: int, threads: int, most: int = 8192) -> int:
    """Rows per batch of a streaming pass (predict, evaluate, decode) under a memory
    ``budget``: up to ``2 threads + 1`` batches are alive (read-ahead, computing, writing),
    each row holding its ``d`` raw inputs (float64, and their preprocessed copy), its ``m``
    float32 features with a temporary of the same size and its codes.  At most ``most``;
    refused when :data:`MIN_BATCH_ROWS` rows per batch do not fit.

    >>> batch_rows(1 << 30, 16, 1024, 2)
    8192
    >>> batch_rows(16 << 20, 16, 1024, 2)
    267
    """
    per_row = (2 * max(int(threads), 1) + 1) * (2 * 8 * d + 3 * 4 * m)
    rows = budget // per_row
    if rows < MIN_BATCH_ROWS:
        raise UsageError(
            f"a memory budget of {human(budget)} cannot hold {MIN_BATCH_ROWS}-row batches of "
            f"{m:,} features on {threads} thread(s) (about {human(MIN_BATCH_ROWS * per_row)}); "
            "raise memory or lower threads"
        )
    return int(min(rows, most))


def check_fits(what: str, need: int, budget: int, hint: str) -> None:
    if need > budget:
        raise UsageError(
            f"{what} needs about {human(need)} of memory, over the budget of {human(budget)}; "
            f"{hint}"
        )


def small_pages() -> None:
    """Ask NumPy (through its documented ``NUMPY_MADVISE_HUGEPAGE``) not to request
    transparent huge pages for its large arrays in this process; a user's own setting of the
    variable is kept.  Call it before NumPy is imported (the CLI does, first thing).

    NumPy marks every array of 4 MiB or more for huge pages (``madvise``).  rfcli's
    learners allocate and free many such arrays (a GP level's feature blocks and factors,
    a pass's decoded chunks), and on Linux kernels whose huge-page setting is ``madvise``
    every first touch of one then waits for a zeroed, often compacted, 2 MiB page.
    Measured on a 2-core VM (docs/gpr.md, "What it costs"): system time of a GP fit
    0.8-3.3 s with huge pages against 0.2-0.5 s without, for the same user time
    (ggplot2::diamonds with ``--ard`` 10.1-11.1 s -> 8.2-9.4 s); the encode and the small
    fits are unchanged."""
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


def steady_malloc() -> None:
    """glibc settings for the many passes of a learner (``rfcli train``): arrays up to 64 MiB
    come from the heap and up to 256 MiB of freed heap stay mapped (as :func:`encode_malloc`),
    so the arrays each pass allocates and frees again (decoded chunks, the SVM's margins of
    every class and fold) reuse pages.  glibc's default raises its mmap threshold to the
    largest block freed so far; an earlier fixed threshold of 1 MiB kept peak RSS flat but
    made every such array a fresh mapping, zero-filled by the kernel each pass (page faults,
    system time and peak RSS measured: docs/learning.md, "Allocations across passes").
    Skipped when MALLOC_MMAP_THRESHOLD_ is set or the libc is not glibc."""
    encode_malloc()


def encode_malloc() -> None:
    """glibc settings for one long streaming pass (``rfcli encode``): arrays up to 64 MiB
    come from the heap and up to 256 MiB of freed heap stay mapped, so the chunk-sized
    arrays that every chunk allocates and frees again reuse pages instead of being mapped,
    zero-filled by the kernel and unmapped each time (measured: docs/cli.md, "What the
    encode's implementation choices cost"; peak RSS is bounded by the chunk size).  Skipped
    when MALLOC_MMAP_THRESHOLD_ is set or the libc is not glibc."""
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
