"""Human output of records (``inspect``, ``evaluate``): values in words and units (``3.1 MB``,
``12,000``, ``yes``/``no``, ``-`` for nothing), rendered with rich on a terminal and as
plain aligned text otherwise (pipes, files, ``NO_COLOR`` or not).

A record is a list of sections, each a title (or None) and rows ``(label, text)``; the
helpers below turn values into the text.  ``--json`` prints the values themselves."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable

Row = tuple[str, str]
Section = tuple[str | None, list[Row]]


def nothing(v) -> bool:
    return v is None or v == "" or (isinstance(v, list | tuple | dict | set) and not v)


def text(v) -> str:
    """A value in words: yes/no, ``-`` for None or empty, thousands separators, 4
    significant digits for floats, lists joined by commas."""
    if nothing(v):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return number(v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {text(x)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        return ", ".join(text(x) for x in v)
    return str(v)


def number(v: float, digits: int = 4) -> str:
    """``0.8739``, ``4.912``, ``1.2e-06``, ``12,345``: significant digits, no exponent for
    ordinary magnitudes, separators for large ones."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, int) or float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    a = abs(v)
    if a >= 1e4:
        return f"{v:,.0f}"
    if a < 1e-3:
        return f"{v:.{digits - 1}e}"
    return f"{v:.{digits}g}"


def size(n: int | None) -> str:
    """Bytes in decimal units: ``812 B``, ``4.2 kB``, ``3.1 MB``, ``1.5 GB``."""
    if n is None:
        return "-"
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"  # pragma: no cover


def seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 120:
        return f"{s:.1f} s"
    return f"{s / 60:.1f} min"


def plain(sections: Iterable[Section]) -> str:
    """Aligned text: one ``label  value`` line per row (rows of titled sections indented
    under their title), the labels of every section padded to one width."""
    sections = list(sections)
    width = max((len(k) for _, rows in sections for k, _ in rows), default=0)
    out: list[str] = []
    for i, (title, rows) in enumerate(sections):
        if title:
            if i:
                out.append("")
            out.append(title)
        pad = "  " if title else ""
        out.extend(f"{pad}{k:<{width}}  {v}".rstrip() for k, v in rows)
    return "\n".join(out) + "\n"


def show(ui, sections: Iterable[Section]) -> None:
    """The record on stdout: rich tables on a terminal, :func:`plain` text otherwise."""
    sections = list(sections)
    if not sys.stdout.isatty():
        sys.stdout.write(plain(sections))
        sys.stdout.flush()
        return
    from rich import box
    from rich.table import Table

    for title, rows in sections:
        t = Table(title=title, title_justify="left", title_style="bold", show_header=False,
                  box=box.SIMPLE, pad_edge=False)  # fmt: skip
        t.add_column(style="cyan", no_wrap=True)
        t.add_column()
        for k, v in rows:
            t.add_row(k, v)
        ui.out.print(t)
