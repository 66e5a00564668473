"""``rfcli inspect``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import json_option


@cli.command("inspect")
@click.argument("store_path", metavar="STORE")
@click.option(
    "--verify",
    is_flag=True,
    help="Read every chunk: checksums, missing chunks, shapes, row counts, metadata and "
    "encoder consistency, stored norms against the codes.",
)
@json_option
@click.pass_obj
def inspect_cmd(ui, store_path, verify, as_json):
    """Show a store's shape, map, quantizer, size on disk and completeness.

    Exit status 2 when the store is incomplete, or with --verify when any check fails
    (each problem is listed on stderr).

    \b
    Examples:
      rfcli inspect train.rff.zarr
      rfcli inspect train.rff.zarr --json | jq .bits_per_sample
      rfcli inspect train.rff.zarr --verify
    """
    from rfcli.errors import StoreError

    if verify:
        from rfcli.io.store.verify import verify_store

        with ui.progress().task("verifying", None) as task:
            rep = verify_store(store_path, progress=task.advance)
        if as_json:
            ui.result_json(
                {
                    "path": store_path,
                    "ok": rep.ok,
                    "rows": rep.rows,
                    "chunks": rep.chunks,
                    "problems": rep.problems,
                }  # fmt: skip
            )
        for p in rep.problems:
            ui.info(f"problem: {p}")
        if not rep.ok:
            raise StoreError(f"{store_path}: verification failed ({len(rep.problems)} problem(s))")
        ui.info(f"{store_path}: ok ({rep.rows:,} rows, {rep.chunks} chunk(s) verified)")
        return
    from rfcli.io.store import FeatureStore
    from rfcli.jobs.inspect import store_summary

    store = FeatureStore(store_path, require_complete=False)
    info = store_summary(store)
    if as_json:
        ui.result_json(info)
    else:
        rows = [(k.replace("_", " "), v) for k, v in info.items()]
        ui.table(None, rows)
    if not store.complete:
        ui.info(f"rfcli: error: {store_path}: incomplete store (its encode did not finish)")
        raise click.exceptions.Exit(2)
