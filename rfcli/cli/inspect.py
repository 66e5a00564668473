"""``rfcli inspect``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import json_option
from rfcli.io.store import FeatureStore
from rfcli.report import store_summary


@cli.command("inspect")
@click.argument("store_path", metavar="STORE")
@json_option
@click.pass_obj
def inspect_cmd(ui, store_path, as_json):
    """Show a store's shape, map, quantizer, size on disk and completeness.

    Exit status 2 when the store is incomplete.

    \b
    Examples:
      rfcli inspect train.rff.zarr
      rfcli inspect train.rff.zarr --json | jq .bits_per_sample
    """
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
