"""``rfcli predict``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import overwrite_option
from rfcli.training import predict


@cli.command("predict")
@click.argument("model_path", metavar="MODEL")
@click.argument("input_path", metavar="INPUT")
@click.option(
    "-o",
    "--output",
    default="-",
    show_default=True,
    help="OUT.parquet, OUT.csv or '-' (CSV on stdout).",
)
@click.option(
    "--id",
    "ids",
    multiple=True,
    help="Id column of raw INPUT to pass through (stores carry theirs).",
)
@overwrite_option
@click.pass_obj
def predict_cmd(ui, model_path, input_path, output, ids, overwrite):
    """Predict with MODEL on INPUT: a store encoded with the model's map, or raw data
    (encoded on the fly with the model's map and quantizer).

    \b
    Examples:
      rfcli predict svm.npz test.rff.zarr -o predictions.parquet
      rfcli predict svm.npz new_rows.csv --id name -o - | head
    """
    n = predict(
        model_path, input_path, output, ids=list(ids), overwrite=overwrite, progress=ui.progress()
    )
    if output != "-":
        ui.info(f"wrote {output}: {n:,} rows")
