"""How input is read (:class:`ReadSettings`) and the names the options take: a module
without numpy or pyarrow, so that the command line can build its options at once."""

from __future__ import annotations

from dataclasses import dataclass, field

from rfcli.constraints import Interval, ListOf, Null, Options, Text, Validated

FORMATS = ("parquet", "csv", "zarr")
NAN_POLICIES = ("error", "drop", "zero")


@dataclass
class ReadSettings(Validated):
    """How input is read: columns, label, id columns, format, chunk size, NaN policy;
    :meth:`validate` checks the fields (rfcli.constraints)."""

    columns: list[str] | None = None
    label: str | None = None
    ids: list[str] = field(default_factory=list)
    fmt: str | None = None
    chunk_rows: int = 8192
    on_nan: str = "error"

    _parameter_constraints = {
        "columns": [Null(), ListOf(Text())],
        "label": [Null(), Text()],
        "ids": [ListOf(Text(), empty=True)],
        "fmt": [Null(), Options(*FORMATS)],
        "chunk_rows": [Interval("int", 1)],
        "on_nan": [Options(*NAN_POLICIES)],
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


__all__ = ["FORMATS", "NAN_POLICIES", "ReadSettings", "check_on_nan"]
