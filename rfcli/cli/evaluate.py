"""``rfcli evaluate``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import dask_settings, engine_options, json_option


@cli.command("evaluate")
@click.argument("first", metavar="MODEL|STORE")
@click.argument("test_path", metavar="[TEST]", required=False)
@click.option(
    "--kernel-error", is_flag=True, help="Kernel-approximation metrics of STORE against --data."
)
@click.option("--data", "raw", help="With --kernel-error: the raw input STORE was encoded from.")
@click.option(
    "--rows",
    type=click.IntRange(min=2),
    default=2000,
    show_default=True,
    help="With --kernel-error: row sample size.",
)
@json_option
@engine_options
@click.pass_obj
def evaluate_cmd(
    ui, first, test_path, kernel_error, raw, rows, as_json, engine, scheduler, workers
):
    """Metrics of MODEL on TEST (a store or raw data with the training label column), or
    with --kernel-error the kernel-approximation errors of STORE (docs/methods.md,
    evaluation metrics).

    Classification: accuracy, macro_f1; regression: mse, rmse, r2; plus rows, bits per
    sample and time.  --json prints one JSON object (snake_case keys) for jq.

    \b
    Examples:
      rfcli evaluate svm.npz test.rff.zarr
      rfcli evaluate krr.npz test.parquet --json | jq .rmse
      rfcli evaluate svm.npz s3://lake/test/ --engine dask --scheduler tcp://host:8786
      rfcli evaluate --kernel-error train.rff.zarr --data train.parquet --rows 1000
    """
    from rfcli.errors import UsageError

    if kernel_error:
        from rfcli.jobs.kernel_error import kernel_error_report

        if raw is None or test_path is not None:
            raise UsageError("--kernel-error takes one STORE and --data RAW_INPUT")
        if engine == "dask":
            raise UsageError("--kernel-error runs locally (on a row sample); drop --engine dask")
        out = kernel_error_report(first, raw, rows=rows, progress=ui.progress())
    else:
        from rfcli.jobs.evaluate import evaluate

        if test_path is None:
            raise UsageError("evaluate needs MODEL and TEST (or --kernel-error STORE --data RAW)")
        out = evaluate(
            first,
            test_path,
            progress=ui.progress(),
            engine=engine,
            dask=dask_settings(engine, scheduler, workers),
        )
    if as_json:
        ui.result_json(out)
    else:
        ui.table(None, [(k.replace("_", " "), _fmt(v)) for k, v in out.items()])


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items())
    return v
