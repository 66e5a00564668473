"""``rfcli train``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import (
    AutoFloat,
    MemorySize,
    Pair,
    dask_settings,
    engine_options,
    glf_quadrature_options,
    overwrite_option,
    settings_from,
)


@cli.command("train")
@click.argument("input_path", metavar="STORE|INPUT")
@click.option(
    "--model",
    type=click.Choice(["svm", "krr", "gpr"]),
    required=True,
    help="svm (classification), krr, or gpr (GP regression; also from raw INPUT).",
)
@click.option(
    "-o", "--output", required=True, help="Model file to write (.npz: JSON metadata + arrays)."
)
@click.option("--normalized", is_flag=True, help="svm/krr: train on unit rows Q(z)/||Q(z)||.")
@click.option(
    "-C",
    "C",
    type=AutoFloat(),
    default="auto",
    show_default=True,
    help="SVM cost; auto = grid 0.01..100 by validation accuracy.",
)
@click.option(
    "--alpha",
    type=AutoFloat(),
    default="auto",
    show_default=True,
    help="Ridge penalty; auto = grid by validation.",
)
@click.option(
    "--loss",
    type=click.Choice(["squared_hinge", "hinge"]),
    default="squared_hinge",
    show_default=True,
)
@click.option(
    "--task",
    type=click.Choice(["classification", "regression"]),
    help="krr target (default: from the label type).",
)
@click.option(
    "--val-fraction",
    type=click.FloatRange(0, 1, max_open=True),
    default=0.2,
    show_default=True,
    help="Validation split for auto.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed (validation split, RFF draws).",
)
@click.option(
    "--max-iter",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="SVM L-BFGS iterations.",
)
@click.option(
    "--tol",
    type=click.FloatRange(min=0),
    default=None,
    help="svm: relative objective reduction to stop (1e-7); gpr/glf: kernel error "
    "tolerance of the quadrature (1e-3).",
)
@click.option(
    "--cache-mb",
    type=click.IntRange(min=0),
    default=256,
    show_default=True,
    help="SVM: keep packed codes in memory between passes if they fit.",
)
@click.option("--label", help="gpr from raw INPUT: the target column.")
@click.option(
    "--features",
    "gp_features",
    type=click.Choice(["glf", "rff"]),
    default="glf",
    show_default=True,
    help="gpr: Gauss-Legendre or random Fourier features.",
)
@click.option(
    "--kernel",
    type=click.Choice(["gaussian", "matern12", "matern32", "matern52"]),
    default="gaussian",
    show_default=True,
    help="gpr kernel.",
)
@click.option(
    "--learn/--no-learn",
    default=True,
    show_default=True,
    help="gpr: learn the hyperparameters (rff: the lengthscale too, a data pass per step).",
)
@click.option("--ard", is_flag=True, help="gpr/glf: one lengthscale per input dimension.")
@click.option(
    "--noise-bounds",
    type=Pair(),
    default="1e-6,10",
    show_default=True,
    help="gpr: noise variance range (standardized targets).",
)
@click.option(
    "--lengthscale",
    type=click.FloatRange(0, min_open=True),
    help="gpr --no-learn: the fixed lengthscale.",
)
@click.option(
    "-m",
    "n_features",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="gpr rff: features.",
)
@click.option(
    "--standardize/--no-standardize",
    default=True,
    show_default=True,
    help="gpr from raw INPUT: z-score inputs.",
)
@click.option(
    "--memory",
    type=MemorySize(),
    help="svm/krr: memory budget for the working arrays, e.g. 2G (default: physical "
    "memory); refuses models whose m x m matrices cannot fit, sizes chunks and the SVM cache.",
)
@glf_quadrature_options
@engine_options
@overwrite_option
@click.pass_obj
def train_cmd(ui, input_path, model, output, engine, scheduler, workers, overwrite, **opts):
    """Train a linear SVM or kernel ridge regression on a feature store, out of core, or a
    Gaussian-process regression on a store or on raw data.

    svm/krr decode the store chunk by chunk in every pass; the float feature matrix is
    never held whole.  gpr makes one pass for V'V and V'y, then learns its
    hyperparameters from those statistics alone (Gauss-Legendre features), and stores
    the weight posterior: `predict` gives mean and std.  Model files embed the encoder,
    so `predict` and `evaluate` also take raw data.

    \b
    Examples:
      rfcli train train.rff.zarr --model svm -o svm.npz
      rfcli train train.rff.zarr --model krr --alpha auto -o krr.npz
      rfcli train co2.train.parquet --model gpr --label y --features glf -o gp.npz
      rfcli train s3://lake/events.rff.zarr --model svm -o s3://lake/svm.npz \\
          --engine dask --scheduler tcp://host:8786
    """
    from rfcli.memory import steady_malloc

    steady_malloc()  # many passes: keep peak memory flat (see its docstring)
    run = dict(overwrite=overwrite, engine=engine, dask=dask_settings(engine, scheduler, workers),
               progress=ui.progress())  # fmt: skip
    if model == "gpr":
        if opts["ard"] and opts["gp_features"] == "rff":
            from rfcli.errors import UsageError

            raise UsageError("--ard needs --features glf (RFF-GPR learns one lengthscale)")
        _train_gpr(ui, input_path, output, opts, run)
    else:
        _train_linear(ui, input_path, model, output, opts, run)


def _train_linear(ui, input_path, model, output, o, run) -> None:
    from rfcli.jobs.train import TrainSettings, train

    settings = settings_from(
        TrainSettings,
        o,
        model=model,
        tol=1e-7 if o["tol"] is None else o["tol"],
        cache_bytes=o["cache_mb"] << 20,
    )
    res = train(input_path, output, settings, **run)
    r = res.report
    if model == "svm":
        if "validation_accuracy" in r:
            ui.info(
                "validation accuracy: "
                + ", ".join(f"C={c:g}: {a:.4f}" for c, a in r["validation_accuracy"].items())
            )
        ui.info(
            f"svm ({r['loss']}) C={r['C']:g}: {r['iterations']} iterations, {r['passes']} passes, "
            f"objective {r['objective']:.6g}, "
            + ("converged" if r["converged"] else "NOT converged: " + r["message"])
        )
    else:
        ui.info(f"krr ({r['task']}): alpha={r['alpha']:.4g}, train MSE {r['train_mse']:.6g}")
    ui.info(f"wrote {output} ({res.seconds:.1f} s)")


def _train_gpr(ui, input_path, output, o, run) -> None:
    from rfcli.io.settings import ReadSettings
    from rfcli.jobs.train_gpr import GPRSettings, train_gpr

    s = settings_from(
        GPRSettings, o, features=o["gp_features"], tol=1e-3 if o["tol"] is None else o["tol"]
    )
    r = train_gpr(input_path, output, s, ReadSettings(label=o["label"]), **run).report
    ui.info(f"map: {r['map']}")
    ui.info(
        f"gpr: signal variance {r['signal_variance']:.4g}, lengthscale "
        f"{', '.join(f'{v:.4g}' for v in r['lengthscale'])}, "
        f"noise variance {r['noise_variance']:.4g}, "
        f"log marginal likelihood {r['log_marginal_likelihood']:.6g}"
    )
    ui.info(
        f"{r['iterations']} iterations, {r['seconds_per_iteration'] * 1e3:.1f} ms/iteration, "
        f"{r['data_passes']} data pass(es); wrote {output} ({r['seconds']:.1f} s)"
    )
