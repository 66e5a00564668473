"""Rendering: a rich console on stderr for diagnostics and progress, stdout for results.
Progress disappears when stderr is not a terminal or with ``-q``; NO_COLOR is honoured
by rich."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property


@dataclass
class UI:
    quiet: bool = False
    debug: bool = False

    # rich is imported when something is printed (start-up of --help, --version)
    @cached_property
    def err(self):
        from rich.console import Console

        return Console(stderr=True, highlight=False, soft_wrap=True)

    @cached_property
    def out(self):
        from rich.console import Console

        return Console(highlight=False, soft_wrap=True)

    @property
    def show_progress(self) -> bool:
        return not self.quiet and sys.stderr.isatty()

    def info(self, msg: str) -> None:
        if not self.quiet:
            self.err.print(msg, markup=False)

    def result_json(self, obj) -> None:
        sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
        sys.stdout.flush()

    def table(self, title: str | None, rows: list[tuple], headers: tuple | None = None) -> None:
        from rich.table import Table

        t = Table(title=title, show_header=headers is not None, box=None, pad_edge=False)
        for h in headers or ("", ""):
            t.add_column(h)
        for r in rows:
            t.add_row(*(str(x) for x in r))
        self.out.print(t)

    def progress(self) -> RichProgress:
        return RichProgress(self)


class _Task:
    def __init__(self, prog, tid):
        self.prog, self.tid = prog, tid

    def advance(self, n):
        self.prog.advance(self.tid, n)


class _NullTask:
    def advance(self, n):
        pass


class RichProgress:
    """Implements rfcli.progress.Progress with rich bars (rows, rows/s, ETA) on stderr."""

    def __init__(self, ui: UI):
        self.ui = ui

    @contextmanager
    def task(self, description, total):
        if not self.ui.show_progress:
            yield _NullTask()
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        cols = [
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn() if total else TextColumn("{task.completed:,.0f} rows"),
            TextColumn("{task.fields[rate]}"),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        ]
        with Progress(*cols, console=self.ui.err, transient=True) as prog:
            tid = prog.add_task(description, total=total, rate="")
            task = _RateTask(prog, tid)
            yield task


class _RateTask(_Task):
    def advance(self, n):
        super().advance(n)
        t = self.prog.tasks[self.tid]
        if t.elapsed:
            self.prog.update(self.tid, rate=f"{t.completed / t.elapsed:,.0f} rows/s")
