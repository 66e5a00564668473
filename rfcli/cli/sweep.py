"""``rfcli sweep``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.checks import check_bandwidth, check_scope
from rfcli.cli.options import flatten, overwrite_option, threads_option
from rfcli.cli.types import AutoFloat, CommaList
from rfcli.io.settings import ReadSettings
from rfcli.names import KERNELS


@cli.command("sweep")
@click.argument("train_path", metavar="TRAIN")
@click.argument("test_path", metavar="TEST")
@click.option("--model", type=click.Choice(["svm", "krr"]), required=True)
@click.option("--label", required=True, help="Target column.")
@click.option(
    "-b",
    "--bits",
    type=CommaList(),
    metavar="LIST",
    multiple=True,
    default=["1,2,4,none"],
    show_default=True,
    help="The values of encode's -b/--bits to sweep ('none' = float32).",
)
@click.option(
    "-m",
    "--features",
    type=CommaList(),
    metavar="LIST",
    multiple=True,
    default=["256,1024,4096"],
    show_default=True,
    help="The values of encode's -m/--features (the number of features m) to sweep.",
)
@click.option(
    "--quantizer",
    "quantizers",
    type=CommaList(),
    metavar="LIST",
    multiple=True,
    default=["lm,stoc"],
    show_default=True,
    help="The quantizers of bits 1-8 to sweep.",
)
@click.option("--kernel", type=click.Choice(KERNELS), default="gaussian", show_default=True)
@click.option(
    "--gamma",
    type=AutoFloat(),
    default="auto",
    show_default=True,
    help="As encode's (fitted once, on the first store, and shared).",
)
@click.option("--normalize-rows", is_flag=True)
@click.option("--standardize", is_flag=True)
@click.option("--normalized", is_flag=True, help="Train on normalized rows.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "-C", "C", type=AutoFloat(), default="auto", show_default=True, help="svm: as train's."
)
@click.option(
    "--alpha", type=AutoFloat(), default="auto", show_default=True, help="krr: as train's."
)
@click.option("-o", "--output", help="Results table (.parquet, .csv or .npy), checked first.")
@click.option(
    "--plot",
    "plot_path",
    help="PNG of the metric against m and bits per sample (needs matplotlib: checked "
    "before any work).",
)
@click.option("--workdir", help="Where stores and models go (default: a temporary directory).")
@click.option("--keep", is_flag=True, help="Keep stores and models in --workdir.")
@threads_option
@overwrite_option
@click.pass_obj
def sweep_cmd(
    ui,
    train_path,
    test_path,
    model,
    label,
    bits,
    features,
    quantizers,
    kernel,
    gamma,
    normalize_rows,
    standardize,
    normalized,
    seed,
    C,
    alpha,
    output,
    plot_path,
    workdir,
    keep,
    threads,
    overwrite,
):
    """Accuracy (or MSE) against bits per sample: encode, train and evaluate TRAIN/TEST for
    every combination of --features, --quantizer and --bits ('none' = float32, once per m).

    \b
    Examples:
      rfcli sweep train.parquet test.parquet --model svm --label label --normalize-rows
      rfcli sweep tr.parquet te.parquet --model krr --label y --standardize \\
          --bits 1,2,none --features 512,2048 -o results.csv --plot curve.png
    """
    import os

    ctx = click.get_current_context()
    check_scope(ctx, ["C"], model == "svm", f"--model svm, not {model}")
    check_scope(ctx, ["alpha"], model == "krr", f"--model krr, not {model}")
    check_bandwidth(ctx, kernel)
    check_scope(ctx, ["keep"], workdir is not None, "--workdir (the directory that keeps them)")
    check_scope(ctx, ["overwrite"], bool(output or plot_path), "-o or --plot (an output file)")
    from rfcli.io.writers import check_output_path, output_format
    from rfcli.jobs.encode import EncodeSettings
    from rfcli.jobs.sweep import check_plot, parse_bits, plot, sweep
    from rfcli.jobs.train import TrainSettings

    # outputs and the plot's dependency first: not after all the training
    if output:
        output_format(output)
        check_output_path(output, overwrite)
    if plot_path:
        check_plot(plot_path, overwrite)
    if output and plot_path and os.path.abspath(output) == os.path.abspath(plot_path):
        raise click.BadParameter("-o and --plot name the same file")
    try:
        feats = [int(f) for f in flatten(features)]
    except ValueError:
        raise click.BadParameter("--features must be integers") from None
    if not feats or min(feats) < 1:
        raise click.BadParameter("--features must be integers >= 1")
    bit_values = parse_bits(flatten(bits), "--bits")
    check_scope(ctx, ["quantizers"], any(b != "none" for b in bit_values),
                "bits 1-8, not --bits none alone (32-bit floats)")  # fmt: skip
    metric = "accuracy" if model == "svm" else None

    def show(row):
        key = metric or ("accuracy" if "accuracy" in row else "mse")
        ui.info(
            f"m={row['features']:>6} {row['quantizer']:>5} {row['bits']:>2} bit: "
            f"{key} {row[key]:.4f} "
            f"(train {row['train_seconds']:.1f} s)"
        )

    from rfcli.cli.console import warning_lines
    from rfcli.errors import ConvergenceWarning, PrecisionWarning

    with warning_lines(ui, ConvergenceWarning, PrecisionWarning):
        results = sweep(
            train_path,
            test_path,
            bits=bit_values,
            features=feats,
            quantizers=flatten(quantizers),
            encode_settings=EncodeSettings(
                kernel=kernel,
                gamma=gamma,
                seed=seed,
                normalize_rows=normalize_rows,
                standardize=standardize,
            ),
            read=ReadSettings(label=label),
            train_settings=TrainSettings(
                model=model, normalized=normalized, C=C, alpha=alpha, seed=seed
            ),
            workdir=workdir,
            keep=keep,
            on_result=show,
            threads=threads,
            progress=ui.progress(),
        )
    key = "accuracy" if "accuracy" in results[0] else "mse"
    ui.table(
        None,
        [
            (r["quantizer"], r["bits"], r["features"], r["bits_per_sample"], f"{r[key]:.4f}")
            for r in sorted(results, key=lambda r: (r["bits_per_sample"], r["quantizer"]))
        ],
        headers=("quantizer", "bits", "m", "bits/sample", key),
    )
    if output:
        _write_results(results, output, overwrite)
    if plot_path:
        plot(results, plot_path, key)


def _write_results(results: list[dict], output: str, overwrite: bool) -> None:
    """One row per (m, quantizer, b) to .npy/Parquet/CSV."""
    import numpy as np

    from rfcli.io.writers import TableWriter

    cols = {
        k: np.array([r[k] if r[k] is not None else np.nan for r in results])
        for k in results[0]
        if k not in ("quantizer", "model", "bits")
    }
    cols = {
        "model": np.array([r["model"] for r in results], dtype=object),
        "quantizer": np.array([r["quantizer"] for r in results], dtype=object),
        "bits": np.array([r["bits"] for r in results]),
        **cols,
    }
    w = TableWriter(output, len(results), 0, overwrite=overwrite)
    w.write(None, cols)
    w.close()
