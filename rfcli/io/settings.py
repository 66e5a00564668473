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


def check_on_nan(on_nan: str, engine: str = "local") -> None:
    """A NaN policy the engine can honour: ``drop`` needs the local engine (a Dask task's
    rows keep their places in the output)."""
    from rfcli.errors import UsageError

    if on_nan not in NAN_POLICIES:
        raise UsageError(f"on_nan must be one of {', '.join(NAN_POLICIES)}, got {on_nan!r}")
    if engine == "dask" and on_nan == "drop":
        raise UsageError(
            "the dask engine keeps every row in its place: use on_nan error or zero (or "
            "the local engine for drop)"
        )


__all__ = ["FORMATS", "NAN_POLICIES", "ReadSettings", "check_on_nan"]
