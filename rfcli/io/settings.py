"""How input is read (:class:`ReadSettings`) and the names the options take: a module
without numpy or pyarrow, so that the command line can build its options at once."""

from __future__ import annotations

from dataclasses import dataclass, field

from rfcli.constraints import Constraint, Interval, ListOf, Null, Options, Text, Validated

FORMATS = ("parquet", "csv", "zarr")
NAN_POLICIES = ("error", "drop", "zero")
#: spellings of the tab delimiter (``--delimiter tab`` on the command line)
TAB_WORDS = ("tab", "\\t")


class Delimiter(Constraint):
    """A CSV field delimiter (:func:`check_delimiter`)."""

    text = "one character (not a quote or line break) or 'tab'"

    def takes_type(self, v) -> bool:
        return isinstance(v, str)

    def takes(self, v) -> bool:
        return isinstance(v, str) and (v in TAB_WORDS or (len(v) == 1 and v not in '"\r\n'))


@dataclass
class ReadSettings(Validated):
    """How input is read: columns, label, id columns, format, chunk size, NaN policy, CSV's
    field delimiter; :meth:`validate` checks the fields (rfcli.constraints).

    Parameters
    ----------
    columns : list of str or None, default=None
        The feature columns (None: every numeric column but the label and ids).
    label : str or None, default=None
        The label column.
    ids : list of str, default=[]
        Columns carried through to the output (a store's or a prediction file's ids).
    fmt : {"parquet", "csv", "zarr"} or None, default=None
        The input's format (None: from its name).
    chunk_rows : int, default=8192
        Rows read per chunk.
    on_nan : {"error", "drop", "zero"}, default="error"
        What a row with a missing value does: refused (naming its line), dropped, or read
        as zeros.
    delimiter : str or None, default=None
        CSV's field delimiter: one character (``"tab"`` for a tab), or None: a tab for
        ``.tsv``/``.tab`` names, else a comma.

    Examples
    --------
    >>> ReadSettings(label="y", on_nan="drop").validate().on_nan
    'drop'
    """

    columns: list[str] | None = None
    label: str | None = None
    ids: list[str] = field(default_factory=list)
    fmt: str | None = None
    chunk_rows: int = 8192
    on_nan: str = "error"
    delimiter: str | None = None

    _parameter_constraints = {
        "columns": [Null(), ListOf(Text())],
        "label": [Null(), Text()],
        "ids": [ListOf(Text(), empty=True)],
        "fmt": [Null(), Options(*FORMATS)],
        "chunk_rows": [Interval("int", 1)],
        "on_nan": [Options(*NAN_POLICIES)],
        "delimiter": [Null(), Delimiter()],
    }


def check_on_nan(on_nan: str, engine: str = "local") -> None:
    """A NaN policy the engine can honour: ``drop`` needs the local engine (a Dask task's
    rows keep their places in the output)."""
    from rfcli.constraints import check_field
    from rfcli.errors import UsageError

    check_field("on_nan", on_nan, ReadSettings._parameter_constraints["on_nan"])
    if engine == "dask" and on_nan == "drop":
        raise UsageError(
            "the dask engine keeps every row in its place: use on_nan error or zero (or "
            "the local engine for drop)"
        )


def check_delimiter(delimiter) -> str | None:
    """A CSV field delimiter: None (from the file name) or one character that is not a
    quote or a line break; ``"tab"`` and ``"\\t"`` (as typed in a shell) mean a tab."""
    from rfcli.errors import ParameterTypeError, UsageError

    if delimiter is None:
        return None
    if not isinstance(delimiter, str):
        raise ParameterTypeError(
            f"delimiter must be one character or None, got {type(delimiter).__name__}"
        )
    if delimiter in TAB_WORDS:
        return "\t"
    if len(delimiter) != 1 or delimiter in '"\r\n':
        raise UsageError(
            f"delimiter must be one character (not a quote or line break), or 'tab', got "
            f"{delimiter!r}"
        )
    return delimiter


__all__ = ["FORMATS", "NAN_POLICIES", "ReadSettings", "check_delimiter", "check_on_nan"]
