"""How input is read (:class:`ReadSettings`) and the names the options take: a module
without numpy or pyarrow, so that the command line can build its options at once."""

from __future__ import annotations

from dataclasses import dataclass, field

FORMATS = ("parquet", "csv", "zarr")
NAN_POLICIES = ("error", "drop", "zero")


@dataclass
class ReadSettings:
    """How input is read: columns, label, id columns, format, chunk size, NaN policy."""

    columns: list[str] | None = None
    label: str | None = None
    ids: list[str] = field(default_factory=list)
    fmt: str | None = None
    chunk_rows: int = 8192
    on_nan: str = "error"


__all__ = ["FORMATS", "NAN_POLICIES", "ReadSettings"]
