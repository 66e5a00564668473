"""``rfcli train``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import overwrite_option
from rfcli.training import MODELS, TrainSettings, train


class AutoFloat(click.ParamType):
    name = "FLOAT|auto"

    def convert(self, value, param, ctx):
        if value == "auto" or isinstance(value, float):
            return value
        try:
            return float(value)
        except ValueError:
            self.fail(f"{value!r} is neither a number nor 'auto'", param, ctx)


@cli.command("train")
@click.argument("store_path", metavar="STORE")
@click.option(
    "--model", type=click.Choice(MODELS), required=True, help="svm (classification) or krr."
)
@click.option(
    "-o", "--output", required=True, help="Model file to write (.npz: JSON metadata + arrays)."
)
@click.option(
    "--normalized", is_flag=True, help="Train on unit rows Q(z)/||Q(z)|| (normalized estimator)."
)
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
    "--val-fraction", type=float, default=0.2, show_default=True, help="Validation split for auto."
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the validation split.",
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
    type=float,
    default=1e-7,
    show_default=True,
    help="SVM: relative objective reduction to stop.",
)
@click.option(
    "--cache-mb",
    type=click.IntRange(min=0),
    default=256,
    show_default=True,
    help="Keep packed codes in memory between SVM passes if they fit.",
)
@overwrite_option
@click.pass_obj
def train_cmd(
    ui,
    store_path,
    model,
    output,
    normalized,
    C,
    alpha,
    loss,
    task,
    val_fraction,
    seed,
    max_iter,
    tol,
    cache_mb,
    overwrite,
):
    """Train a linear SVM or kernel ridge regression on a feature store, out of core.

    The store's codes are decoded chunk by chunk in every pass; the float feature matrix
    is never held whole.  The model file embeds the store's encoder, so `predict` and
    `evaluate` can also take raw data.

    \b
    Examples:
      rfcli train train.rff.zarr --model svm -o svm.npz
      rfcli train train.rff.zarr --model krr --alpha auto -o krr.npz
    """
    settings = TrainSettings(
        model=model,
        normalized=normalized,
        C=C,
        alpha=alpha,
        loss=loss,
        task=task,
        val_fraction=val_fraction,
        seed=seed,
        max_iter=max_iter,
        tol=tol,
        cache_bytes=cache_mb << 20,
    )
    res = train(store_path, output, settings, overwrite=overwrite, progress=ui.progress())
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
