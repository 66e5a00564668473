"""Rendering: a rich console on stderr for diagnostics and progress, stdout for results.
Progress disappears when stderr is not a terminal or with ``-q``; NO_COLOR is honoured
by rich."""

from __future__ import annotations

import json
import math
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
        return not self.quiet and stderr_is_terminal()

    def info(self, msg: str) -> None:
        """A line on stderr; plain text when stderr is not a terminal (what rich prints
        there too, without its import and console: 15-25 ms at the end of a command)."""
        if self.quiet:
            return
        if stderr_is_terminal():
            self.err.print(msg, markup=False, emoji=False)
        else:
            sys.stderr.write(msg + "\n")

    def result_json(self, obj) -> None:
        """``obj`` as JSON on stdout; a value that is not a finite number (R^2 of constant
        targets, a metric of no rows) is null: NaN and Infinity are not JSON, and strict
        parsers refuse them."""
        sys.stdout.write(json.dumps(_finite(obj), indent=2, default=str, allow_nan=False) + "\n")
        sys.stdout.flush()

    def table(self, title: str | None, rows: list[tuple], headers: tuple | None = None) -> None:
        from rich.table import Table

        t = Table(title=title, show_header=headers is not None, box=None, pad_edge=False)
        for h in headers or ("", ""):
            t.add_column(h)
        for r in rows:
            t.add_row(*(str(x) for x in r))
        self.out.print(t)

    def progress(self):
        """The jobs' :class:`rfcli.progress.Progress`: rich bars on stderr, or nothing with
        ``-q`` or when stderr is not a terminal."""
        if not self.show_progress:
            from rfcli.progress import NullProgress

            return NullProgress()
        return RichProgress(self)


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


#: units shortened on the progress line
SHORT_UNITS = {"iterations": "it"}


def count_text(completed: float, total: float | None, unit: str, rate: float | None) -> str:
    """``1,234/10,000 rows (5,678 rows/s)``, ``12/40 it`` (iterations): a task's count."""
    done = f"{completed:,.0f}"
    unit = SHORT_UNITS.get(unit, unit)
    text = f"{done}/{total:,.0f} {unit}" if total is not None else f"{done} {unit}"
    if unit == "rows" and rate:
        text += f" ({rate:,.0f} rows/s)"
    return text


def values_text(values: dict) -> str:
    """``objective 5.06991e+04, passes 12``: a task's values (6 significant digits)."""

    def fmt(v):
        if isinstance(v, bool) or not isinstance(v, int | float):
            return str(v)
        return f"{v:,}" if isinstance(v, int) else f"{v:.6g}"

    return ", ".join(f"{k.replace('_', ' ')} {fmt(v)}" for k, v in values.items())


def eta_text(seconds: float | None) -> str:
    """``eta 0:01:23``; ``eta -:--:--`` while unknown."""
    if seconds is None:
        return "eta -:--:--"
    s = int(round(seconds))
    return f"eta {s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Rate:
    """The recent rate of a count: over the samples of the last ``period`` seconds.  (rich's
    own speed estimate restarts whenever a total changes, as an optimizer's estimated
    total does at every iteration.)"""

    def __init__(self, period: float = 30.0, clock=None):
        import time
        from collections import deque

        self.period, self.clock = period, clock or time.monotonic
        self.samples: deque = deque([(self.clock(), 0.0)])

    def add(self, completed: float) -> float | None:
        """Record the count now; the rate (per second), None before a second sample."""
        now = self.clock()
        self.samples.append((now, completed))
        while len(self.samples) > 2 and self.samples[0][0] < now - self.period:
            self.samples.popleft()
        (t0, c0), (t1, c1) = self.samples[0], self.samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 and c1 > c0 else None


class _RichTask:
    def __init__(self, prog, tid, total):
        import threading

        self.prog, self.tid, self.total = prog, tid, total
        self.completed = 0
        self.rate = Rate()
        self._lock = threading.Lock()  # a pass's threads advance it together

    def advance(self, n):
        with self._lock:
            self.completed += n
            rate = self.rate.add(self.completed)
            left = None
            if rate and self.total is not None:
                left = max(self.total - self.completed, 0) / rate
            self.prog.update(self.tid, advance=n, rate=rate, eta=eta_text(left))

    def update(self, total=None, **values):
        kw = {}
        if total is not None:
            self.total = kw["total"] = total
        self.prog.update(self.tid, values=values_text(values), **kw)


class RichProgress:
    """Implements rfcli.progress.Progress with rich on stderr: one live display for the
    tasks open at a time (a data pass inside an optimizer's iterations shows below them),
    each with its bar, count (rows and rows/s, iterations, candidates), elapsed time,
    remaining time (from its total, which an optimizer re-estimates, and its recent rate)
    and values (an objective, the best candidate so far)."""

    def __init__(self, ui: UI):
        self.ui = ui
        self._prog = None

    @contextmanager
    def task(self, description, total, unit="rows"):
        prog = self._start()
        tid = prog.add_task(description, total=total, unit=unit, values="", rate=None,
                            eta=eta_text(None))  # fmt: skip
        try:
            yield _RichTask(prog, tid, total)
        finally:
            prog.remove_task(tid)
            if not prog.tasks:  # the last open task: the display ends
                self._prog = None
                prog.stop()

    def _start(self):
        if self._prog is not None:
            return self._prog
        from rich.progress import (
            BarColumn,
            Progress,
            ProgressColumn,
            TextColumn,
        )
        from rich.table import Column
        from rich.text import Text

        class CountColumn(ProgressColumn):
            def render(self, task):
                f = task.fields
                text = count_text(task.completed, task.total, f["unit"], f["rate"])
                return Text(text, no_wrap=True, overflow="ellipsis")

        # about 80 columns for an SVM fit: "svm C=10 (all rows) ━━━━ 26/102 it eta 0:00:04
        # objective 85747, passes 28"; the values are cut first on a narrower terminal (the
        # elapsed time is in the final line)
        cols = [
            TextColumn("{task.description}"),
            BarColumn(bar_width=8),
            CountColumn(),
            TextColumn("{task.fields[eta]}"),
            TextColumn(
                "{task.fields[values]}",
                table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1),
            ),
        ]
        self._prog = Progress(*cols, console=self.ui.err, transient=True)
        self._prog.start()
        return self._prog


def _finite(obj):
    """``obj`` with every float that is not finite replaced by None (in dicts, lists and
    tuples, and NumPy floats)."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if isinstance(obj, int | str) or not hasattr(obj, "__float__"):  # (bool is an int)
        return obj
    return obj if math.isfinite(float(obj)) else None  # floats, NumPy's float32 too


@contextmanager
def warning_lines(ui, *categories):
    """Warnings of ``categories`` (rfcli.errors' ConvergenceWarning, PrecisionWarning)
    raised inside the block, each one line ``warning: ...`` on stderr at its end (the
    result is written, its report says so); others as Python shows them."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        for c in categories:
            warnings.simplefilter("always", c)
        yield
    for w in caught:
        if issubclass(w.category, categories):
            ui.info(f"warning: {w.message}")
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
