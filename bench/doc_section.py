"""Sections of docs/benchmarks.md written by scripts outside ``make bench`` (which rewrites
the file without them: run those scripts again with ``--doc``)."""

from __future__ import annotations

import os

DOC = os.path.join(os.path.dirname(__file__), "..", "docs", "benchmarks.md")


def write_section(title: str, body: list[str], before: str | None = "## Against the targets",
                  doc: str = DOC) -> None:  # fmt: skip
    """Replace the section ``title`` (a ``## `` heading) of ``doc`` (docs/benchmarks.md)
    with ``body``, or put it before the heading ``before`` (at the end without one)."""
    with open(doc) as f:
        lines = f.read().split("\n")
    sec = [title, "", *body, ""]
    if title in lines:
        i = lines.index(title)
        j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
        lines[i:j] = sec
    else:
        i = lines.index(before) if before and before in lines else len(lines)
        lines[i:i] = sec
    with open(doc, "w") as f:
        f.write("\n".join(lines))
