"""``rfcli evaluate``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.checks import check_model_and_data, check_raw_input, check_scope
from rfcli.cli.options import (
    check_threads,
    dask_settings,
    delimiter_option,
    engine_options,
    json_option,
    nan_option,
    threads_option,
)

#: the options of --kernel-error (the others are those of evaluating a model)
KERNEL_ERROR_OPTIONS = ("raw", "rows")


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
@nan_option
@delimiter_option
@json_option
@threads_option
@engine_options
@click.pass_obj
def evaluate_cmd(ui, first, test_path, kernel_error, raw, rows, on_nan, delimiter, as_json,
                 threads, engine, scheduler, workers):  # fmt: skip
    """Metrics of MODEL on TEST (a store or raw data with the training label column), or
    with --kernel-error the kernel-approximation errors of STORE (docs/methods.md,
    evaluation metrics).

    Classification: accuracy, macro_f1; regression: mse, rmse, r2; plus rows, bits per
    sample and time.  TEST's labels are compared as the model's label type (text that
    spells the model's integer classes is read as integers; other kinds are refused).
    --json prints one JSON object (snake_case keys) for jq.

    \b
    Examples:
      rfcli evaluate svm.npz test.rff.zarr
      rfcli evaluate krr.npz test.parquet --json | jq .rmse
      rfcli evaluate svm.npz s3://lake/test/ --engine dask --scheduler tcp://host:8786
      rfcli evaluate --kernel-error train.rff.zarr --data train.parquet --rows 1000
    """
    from rfcli.errors import UsageError

    ctx = click.get_current_context()
    check_scope(ctx, KERNEL_ERROR_OPTIONS, kernel_error, "--kernel-error")
    check_scope(ctx, ("on_nan", "delimiter", "threads", "engine"), not kernel_error,
                "evaluating a model, not --kernel-error (a row sample, read locally)")  # fmt: skip
    check_threads(ctx, engine)
    dask = dask_settings(engine, scheduler, workers)
    if kernel_error:
        from rfcli.jobs.kernel_error import kernel_error_report

        if raw is None or test_path is not None:
            raise UsageError("--kernel-error takes one STORE and --data RAW_INPUT")
        out = kernel_error_report(first, raw, rows=rows, progress=ui.progress())
    else:
        from rfcli.jobs.evaluate import evaluate

        if test_path is None:
            raise UsageError("evaluate needs MODEL and TEST (or --kernel-error STORE --data RAW)")
        check_model_and_data(first, test_path, "evaluate MODEL TEST")
        check_raw_input(ctx, test_path, ("on_nan", "delimiter"))
        out = evaluate(
            first,
            test_path,
            on_nan=on_nan,
            delimiter=delimiter,
            threads=threads,
            engine=engine,
            dask=dask,
            progress=ui.progress(),
        )
    if as_json:
        ui.result_json(out)
        return
    from rfcli.cli.render import show

    if kernel_error:
        show(ui, kernel_error_sections(first, raw, out))
    else:
        show(ui, metric_sections(first, test_path, out))


#: metric labels, in the order shown
_METRICS = {"accuracy": "accuracy", "macro_f1": "macro F1", "mse": "MSE", "rmse": "RMSE",
            "r2": "R²", "nlpd": "NLPD (mean)"}  # fmt: skip


def metric_sections(model: str, test: str, out: dict) -> list:
    """``evaluate`` in words: the metrics, then what was evaluated."""
    from rfcli.cli.render import number, seconds, text

    rows = [("rows", text(out["rows"]))]
    for k, label in _METRICS.items():
        if k in out:
            v = out[k]
            pct = f" ({v:.2%})" if k == "accuracy" and v == v else ""
            rows.append((label, number(v) + pct))
    bits = out["bits"]
    rows += [
        ("model", f"{out['model']} ({out['task']})"),
        ("features (m)", text(out["features"])),
        (
            "quantizer",
            f"{out['quantizer']}, {number(bits)} bit{'' if bits == 1 else 's'} per "
            f"feature, {number(out['bits_per_sample'])} per row",
        ),  # fmt: skip
        ("normalized rows", text(out["normalized"])),
        ("time", seconds(out["seconds"])),
    ]
    return [(f"{model} on {test}", rows)]


def kernel_error_sections(store: str, raw: str, out: dict) -> list:
    """``evaluate --kernel-error`` in words: the sample, then each estimator's errors."""
    from rfcli.cli.render import number, seconds, text

    bits = out["bits"]
    head = [
        ("rows (sample)", text(out["rows"])),
        ("kernel", out["kernel"]),
        ("features (m)", text(out["features"])),
        ("quantizer", f"{out['quantizer']}, {number(bits)} bit{'' if bits == 1 else 's'}"),
        ("time", seconds(out["seconds"])),
    ]
    sections = [(f"{store} against {raw}", head)]
    for name in ("plain", "normalized"):
        if isinstance(out.get(name), dict):
            rows = [(k.replace("_", " "), number(v) if isinstance(v, float) else text(v))
                    for k, v in out[name].items()]  # fmt: skip
            sections.append((f"{name} estimator", rows))
    return sections
