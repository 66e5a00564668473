"""Counting a job's data passes (for its report and its progress titles)."""

from __future__ import annotations


class PassCount:
    """The data passes made so far: :meth:`add` counts passes (and returns the new total,
    the number of the pass just started when adding one), :attr:`n` reads them.

    >>> count = PassCount(1)        # the Gram matrix's pass
    >>> count.add(), count.add(24), count.n
    (2, 26, 26)
    """

    __slots__ = ("n",)

    def __init__(self, n: int = 0):
        self.n = int(n)

    def add(self, k: int = 1) -> int:
        self.n += int(k)
        return self.n

    def __repr__(self) -> str:
        return f"PassCount({self.n})"
