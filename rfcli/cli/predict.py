"""``rfcli predict``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.checks import check_model_and_data, check_overwrite, check_raw_input
from rfcli.cli.options import (
    check_threads,
    dask_settings,
    delimiter_option,
    engine_options,
    json_option,
    nan_option,
    overwrite_option,
    threads_option,
)


@cli.command("predict")
@click.argument("model_path", metavar="MODEL")
@click.argument("input_path", metavar="INPUT")
@click.option(
    "-o",
    "--output",
    default="-",
    show_default=True,
    help="OUT.parquet, OUT.csv, OUT.npy (the predictions alone) or '-' (CSV on stdout). "
    "Predictions have the label's type: integers, numbers or text.",
)
@click.option(
    "--id",
    "ids",
    multiple=True,
    help="Id column to pass through (repeatable): of raw INPUT, or one of a store's id "
    "arrays (a store's are all carried by default).",
)
@nan_option
@delimiter_option
@overwrite_option
@json_option
@threads_option
@engine_options
@click.pass_obj
def predict_cmd(ui, model_path, input_path, output, ids, on_nan, delimiter, overwrite, as_json,
                threads, engine, scheduler, workers):  # fmt: skip
    """Predict with MODEL on INPUT: a store encoded with the model's map, or raw data
    (encoded on the fly with the model's map and quantizer).

    --json prints a summary (rows, output, columns and their types) on stdout.

    \b
    Examples:
      rfcli predict svm.npz test.rff.zarr -o predictions.parquet
      rfcli predict svm.npz new_rows.csv --id name -o - | head
      rfcli predict svm.npz test.rff.zarr -o labels.npy --json
      rfcli predict krr.npz lake/new/ -o pred.parquet --engine dask --scheduler tcp://host:8786
    """
    from rfcli.errors import UsageError

    check_model_and_data(model_path, input_path, "predict MODEL INPUT")
    ctx = click.get_current_context()
    check_overwrite(ctx, output)
    check_raw_input(ctx, input_path, ("on_nan", "delimiter"))
    check_threads(ctx, engine)
    if as_json and output == "-":
        raise UsageError("--json prints its summary on stdout: write the predictions to a "
                         "file with -o")  # fmt: skip
    from rfcli.jobs.predict import predict

    res = predict(
        model_path,
        input_path,
        output,
        ids=list(ids),
        on_nan=on_nan,
        delimiter=delimiter,
        overwrite=overwrite,
        threads=threads,
        engine=engine,
        dask=dask_settings(engine, scheduler, workers),
        progress=ui.progress(),
    )
    if as_json:
        ui.result_json(res.to_dict())
    elif output != "-":
        ui.info(f"wrote {output}: {res.rows:,} rows ({', '.join(res.columns)})")
