"""The progress protocol the library reports to (the CLI renders it with rich)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Protocol


class ProgressTask(Protocol):
    def advance(self, n: int) -> None: ...


class Progress(Protocol):
    def task(self, description: str, total: int | None) -> AbstractContextManager[ProgressTask]: ...


class _NullTask:
    def advance(self, n: int) -> None:
        pass


class NullProgress:
    """Reports nothing (library default)."""

    def task(self, description, total):
        return nullcontext(_NullTask())
