"""``rfcli decode``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.checks import check_overwrite
from rfcli.cli.options import overwrite_option, threads_option
from rfcli.cli.types import MemorySize


@cli.command("decode")
@click.argument("store_path", metavar="STORE")
@click.option(
    "-o", "--output", required=True, help="OUT.npy, OUT.parquet, OUT.csv, or '-' for CSV on stdout."
)
@click.option(
    "--normalized", is_flag=True, help="Unit rows Q(z)/||Q(z)|| (the normalized estimator)."
)
@threads_option
@click.option(
    "--memory",
    type=MemorySize(),
    help="Memory for the chunks in flight, e.g. 512M (default: the store's chunks).",
)
@click.option("--chunk-rows", "old_chunk_rows", type=click.IntRange(min=1), hidden=True)
@overwrite_option
@click.pass_obj
def decode_cmd(ui, store_path, output, normalized, threads, memory, old_chunk_rows, overwrite):
    """Write a store's decoded features for other tools.

    Features are scaled so that F(x).F(y) estimates the kernel (sqrt(2/m) Q(z)); with
    --normalized each row has unit norm.  Parquet/CSV also carry the label and id columns.

    \b
    Examples:
      rfcli decode train.rff.zarr -o features.npy
      rfcli decode train.rff.zarr -o - --normalized | head
    """
    check_overwrite(click.get_current_context(), output)
    if old_chunk_rows is not None:
        from rfcli.errors import UsageError

        raise UsageError("--chunk-rows is gone: decode's chunks follow --memory (default: the "
                         "store's chunks), which bounds what is in flight")  # fmt: skip
    from rfcli.jobs.decode import decode

    n = decode(
        store_path,
        output,
        normalized=normalized,
        overwrite=overwrite,
        threads=threads,
        memory=memory,
        progress=ui.progress(),
    )
    if output != "-":
        ui.info(f"wrote {output}: {n:,} rows")
