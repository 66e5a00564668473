"""Column names in messages: lists cut to a few names with a count of the rest, the columns
an input lacks, and a column (label, id) that is not found, with the names the user most
likely meant.  No NumPy here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: column names that usually hold a label (what a missing --label is compared with)
LABEL_LIKE = ("label", "labels", "y", "target", "class", "classes", "outcome", "response")
#: a list of names longer than this is cut (the first ones, a count of the rest)
SHOWN = 20
#: the names kept when a list is cut
HEAD = 8
#: a name longer than this is cut in a list
LONG = 48


def name_list(names: Iterable, keep: Sequence[str] = (), quote: bool = False) -> str:
    """``a, b, c``; a list longer than :data:`SHOWN`: the first :data:`HEAD` names and a
    count of the others, ``pixel_0_0, ..., pixel_0_7, ... (56 more)``, then the names of
    ``keep`` the cut left out (the candidates a message points at): ``..., ... (55 more),
    target``."""
    names = [str(n) for n in names]

    def fmt(name: str) -> str:  # a long name (a header split at another delimiter): cut
        text = name if len(name) <= LONG else name[: LONG - 3] + "..."
        return repr(text) if quote or not text.isprintable() else text

    if len(names) <= SHOWN:
        return ", ".join(map(fmt, names))
    shown = names[:HEAD]
    tail = [k for k in dict.fromkeys(keep) if k in names and k not in shown]
    rest = len(names) - len(shown) - len(tail)
    text = ", ".join(map(fmt, shown)) + f", ... ({rest} more)"
    return text + "".join(f", {fmt(k)}" for k in tail)


def count(n: int, what: str = "column") -> str:
    """``1 column``, ``64 columns``."""
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def candidates(name: str, names: Sequence[str], label: bool = False,
               numeric: dict | None = None) -> list[str]:  # fmt: skip
    """The columns a missing column ``name`` most likely meant: close spellings (difflib, a
    case slip); for a label (``label``) also columns named like one (:data:`LABEL_LIKE`),
    and text columns (class names) when ``numeric`` says there are a few; at most three,
    in the input's order."""
    import difflib

    names = [str(n) for n in names]
    close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.6)
    close += [n for n in names if n.lower() == str(name).lower() and n not in close]
    if not label:
        return sorted(close[:3], key=names.index)
    ends = ("_label", "_target", "_class")
    like = [n for n in names if n.lower() in LABEL_LIKE or n.lower().endswith(ends)]
    text = []
    if numeric is not None:
        text = [n for n in names if not numeric.get(n, True)]
        if len(text) > 3:  # many text columns: not telling
            text = []
    out = list(dict.fromkeys([*close, *like, *text]))[:3]
    return sorted(out, key=names.index)


def not_found(where: str, what: str, name: str, names: Sequence[str], numeric: dict | None = None,
              hint: str = "") -> str:  # fmt: skip
    """``{where}: {what} column 'x' not found (did you mean 'y'?); its 65 columns: ...``: the
    list keeps the candidates (:func:`candidates`) when it is cut."""
    cands = candidates(name, names, label=what == "label", numeric=numeric)
    mean = ""
    if cands:
        mean = " (did you mean " + " or ".join(map(repr, cands)) + "?)"
    return (
        f"{where}: {what} column {name!r} not found{mean}; its {count(len(names))}: "
        f"{name_list(names, keep=cands)}{hint}"
    )


def missing_columns(missing: Sequence[str], of: str, where: str, source=None) -> str:
    """``64 columns of the store s.zarr are missing from other.parquet: pixel_0_0, ...
    (56 more); it has 3 columns: a, b, c`` (``of``: whose columns they are; ``source``: the
    input, whose own columns are listed, with the hints of a NumPy array without names and
    of a CSV header split at another delimiter)."""
    if len(missing) == 1:
        text = f"column {missing[0]!r} {of} is missing from {where}"
    else:
        text = f"{count(len(missing))} {of} are missing from {where}: {name_list(missing)}"
    if source is None:
        return text
    from rfcli.io.arrays import unnamed_hint

    hint = unnamed_hint(source)
    delim = getattr(source, "delimiter_hint", None)
    hint += delim() if delim is not None else ""
    have = source.names
    return f"{text}; it has {count(len(have))}: {name_list(have)}{hint}"
