"""``rfcli predict``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import dask_settings, engine_options, overwrite_option


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
@engine_options
@click.pass_obj
def predict_cmd(ui, model_path, input_path, output, ids, overwrite, engine, scheduler, workers):
    """Predict with MODEL on INPUT: a store encoded with the model's map, or raw data
    (encoded on the fly with the model's map and quantizer).

    \b
    Examples:
      rfcli predict svm.npz test.rff.zarr -o predictions.parquet
      rfcli predict svm.npz new_rows.csv --id name -o - | head
      rfcli predict krr.npz lake/new/ -o pred.parquet --engine dask --scheduler tcp://host:8786
    """
    from rfcli.jobs.predict import predict

    n = predict(
        model_path,
        input_path,
        output,
        ids=list(ids),
        overwrite=overwrite,
        progress=ui.progress(),
        engine=engine,
        dask=dask_settings(engine, scheduler, workers),
    )
    if output != "-":
        ui.info(f"wrote {output}: {n:,} rows")
