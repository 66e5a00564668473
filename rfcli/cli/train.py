"""``rfcli train``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.checks import check_scope
from rfcli.cli.options import (
    SectionedCommand,
    check_threads,
    dask_settings,
    delimiter_option,
    engine_options,
    glf_quadrature_options,
    gp_kernel_option,
    json_option,
    nan_option,
    overwrite_option,
    settings_from,
    threads_option,
)
from rfcli.cli.spelling import (
    AlsoSpelled,
    deprecated_alias,
    flag_of,
    given,
    respell,
    take_deprecated,
)
from rfcli.cli.types import AutoFloat, MemorySize, Pair
from rfcli.names import GP_KERNELS

#: the options of each model (the others are refused, never silently ignored)
MODEL_OPTIONS = {
    "svm": ("normalized", "C", "loss", "multiclass", "task", "cv_folds", "max_iter", "tol",
            "cache_mb", "memory"),
    "krr": ("normalized", "alpha", "task", "cv_folds", "memory"),
    "gpr": ("label", "on_nan", "delimiter", "standardize", "gp_features", "n_features",
            "gp_kernel", "learn", "ard", "noise_bounds", "lengthscale", "lengthscale_bounds",
            "kernel_tol", "nodes", "cutoff", "exact", "memory"),
}  # fmt: skip
#: gpr options that apply to raw INPUT only (a store's label, preprocessing and map are fixed)
GPR_RAW_ONLY = ("label", "on_nan", "delimiter", "standardize", "gp_features", "n_features",
                "gp_kernel", "kernel_tol", "nodes", "cutoff", "exact")  # fmt: skip
#: gpr options of Gauss-Legendre features (the map's quadrature, ARD)
GPR_GLF_ONLY = ("ard", "kernel_tol", "nodes", "cutoff", "exact")
#: old spellings kept for one release: hidden option -> the option it now is (and --tol
#: with --model gpr: --kernel-tol; -m/--features glf|rff: --gp-features)
DEPRECATED = {"old_kernel": "gp_kernel"}
_SECTION = {"svm": "SVM options", "krr": "KRR options", "gpr": "GP regression options"}
TRAIN_SECTIONS = {
    **{n: "svm and krr options" for n in ("normalized", "task", "cv_folds", "memory")},
    **{n: _SECTION["svm"] for n in ("C", "loss", "multiclass", "max_iter", "tol", "cache_mb")},
    "alpha": _SECTION["krr"],
    **{n: _SECTION["gpr"] for n in MODEL_OPTIONS["gpr"]},
    **dict.fromkeys(("threads", "engine", "scheduler", "workers"), "Engine options"),
}
TRAIN_ORDER = ("svm and krr options", "SVM options", "KRR options", "GP regression options",
               "Engine options")  # fmt: skip


class FeatureWord(click.IntRange):
    """--features: the long form of -m (a number of features >= 1), or ``glf``/``rff``: the
    old spelling of --gp-features (one release), passed through as text."""

    name = "integer"

    def __init__(self):
        super().__init__(min=1)

    def convert(self, value, param, ctx):
        if value in ("glf", "rff"):
            return value
        return super().convert(value, param, ctx)


def take_old_spellings(ctx: click.Context, model: str, o: dict) -> list[str]:
    """The old spellings of one release: ``--kernel`` (now --gp-kernel), ``--features
    glf|rff`` (now --gp-features) and ``--tol`` with --model gpr (now --kernel-tol; --tol is
    the SVM's).  Their values move to the new options; returns the deprecation notes."""
    from click.core import ParameterSource

    notes = take_deprecated(ctx, o, DEPRECATED)
    word = o.pop("features_arg")
    if given(ctx, "features_arg"):
        if word in ("glf", "rff"):
            notes.append(respell(ctx, o, "features_arg", "gp_features", word, "--features"))
        else:  # the long form of -m
            respell(ctx, o, "features_arg", "n_features", word, "--features", deprecated=False)
    if model == "gpr" and given(ctx, "tol"):  # its range: GPRSettings.validate
        note = respell(ctx, o, "tol", "kernel_tol", o["tol"], "--tol")
        ctx.set_parameter_source("tol", ParameterSource.DEFAULT)
        notes.append(note.replace("--tol is", "--tol with --model gpr is"))
    return notes


def check_gpr_options(ctx: click.Context, input_path: str, o: dict) -> None:
    """The gpr options that apply to this use: raw INPUT or a store (its map fixed), GLF or
    RFF features, learned or fixed hyperparameters; the others are refused."""
    from rfcli.io import location

    store = location.is_store(input_path)
    check_scope(ctx, GPR_RAW_ONLY, not store,
                "raw INPUT, not a store (its label, preprocessing and map are used)")  # fmt: skip
    if store:
        from rfcli.io.store import FeatureStore

        kind = "glf" if FeatureStore(input_path).encoder.fmap.kind == "glf" else "rff"
        check_scope(ctx, ("ard", "lengthscale_bounds", "lengthscale"), kind == "glf",
                    "raw INPUT or a GLF store, not a store of random Fourier features (its "
                    "lengthscale is fixed)")  # fmt: skip
    else:
        kind = o["gp_features"]
        check_scope(ctx, GPR_GLF_ONLY, kind == "glf", f"--gp-features glf, not {kind}")
        check_scope(ctx, ["n_features"], kind == "rff", f"--gp-features rff, not {kind}")
    check_scope(ctx, ["noise_bounds"], o["learn"], "--learn (--no-learn fixes the noise)")
    check_scope(ctx, ["exact"], o["learn"] and not o["nodes"],
                "--learn without --nodes (a fixed lengthscale or rule has no levels)")  # fmt: skip
    check_scope(ctx, ["lengthscale"], not o["learn"],
                "--no-learn (--learn learns the lengthscale)")  # fmt: skip
    # with --no-learn the bounds give the lengthscale (their geometric midpoint) or the
    # range a hand-made rule (--nodes) serves; a --lengthscale given leaves them nothing
    bounds_used = o["learn"] or o["lengthscale"] is None or o["nodes"] is not None
    where = "learning, or --no-learn without --lengthscale (whose midpoint it gives)"
    check_scope(ctx, ["lengthscale_bounds"], bounds_used, where)


def check_store_input(input_path: str, model: str, label: str | None, output: str) -> None:
    """svm/krr on raw data: the first thing to say is that it must be encoded first, with
    an encode command that makes the store train needs (its label: --label, else the
    column named like a label, else a placeholder)."""
    from rfcli.errors import UsageError
    from rfcli.io.kinds import DESCRIPTION, RAW_DATA, kind_of

    kind = kind_of(input_path)
    if kind not in RAW_DATA:
        return  # a store, or something the store reader names
    from rfcli.jobs.encode import default_output

    if label is None:
        from rfcli.io.columns import candidates
        from rfcli.io.readers import open_source

        try:
            with open_source(input_path) as source:
                found = candidates("label", source.names, label=True)
        except Exception:  # unreadable here: the encode command will say why
            found = []
        label = found[0] if found else "LABEL"
    store = default_output(input_path)
    raise UsageError(
        f"{input_path}: is {DESCRIPTION[kind]}: --model {model} trains on a feature store, "
        f"encode it first: `rfcli encode {input_path} --label {label} -o {store}`, then "
        f"`rfcli train {store} --model {model} -o {output}`"
    )


def check_model_options(ctx: click.Context, model: str) -> None:
    """Options of another model given on the command line (or in the environment) are an
    error: ``--alpha`` with svm, ``-C`` with krr, the GP's with svm/krr."""
    from rfcli.errors import UsageError

    mine = set(MODEL_OPTIONS[model])
    others = {n for opts in MODEL_OPTIONS.values() for n in opts} - mine
    bad = [n for n in sorted(others) if given(ctx, n)]
    if bad:
        owners = {n: [m for m, opts in MODEL_OPTIONS.items() if n in opts] for n in bad}
        raise UsageError(
            "; ".join(f"{flag_of(ctx, n)} is for {'/'.join(owners[n])}" for n in bad)
            + f", not --model {model}"
        )


@cli.command("train", cls=SectionedCommand, sections=TRAIN_SECTIONS, section_order=TRAIN_ORDER)
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
    type=AutoFloat(checked=False),  # its range: TrainSettings.validate, naming -C
    default="auto",
    show_default=True,
    help="SVM cost; auto = grid 0.01..100 (extended at the edges) by cross-validated accuracy.",
)
@click.option(
    "--alpha",
    type=AutoFloat(checked=False),
    default="auto",
    show_default=True,
    help="Ridge penalty; auto = grid by cross-validation (MSE or accuracy).",
)
@click.option(
    "--loss",
    type=click.Choice(["squared_hinge", "hinge"]),
    default="squared_hinge",
    show_default=True,
)
@click.option(
    "--multiclass",
    type=click.Choice(["auto", "ovr", "ovo"]),
    default="auto",
    show_default=True,
    help="svm, more than 2 classes: one-vs-rest (K problems) or one-vs-one (K(K-1)/2 "
    "problems on two classes' rows each, decided by votes); auto = one-vs-one when the "
    "store has fewer rows than features (the SVM then trains in the dual, where it is the "
    "cheaper), else one-vs-rest.",
)
@click.option(
    "--task",
    type=click.Choice(["classification", "regression"]),
    help="The target: one-hot classes or numbers (default: from the label type; svm: "
    "classification only, e.g. of class codes stored as real numbers).",
)
@click.option(
    "--cv-folds",
    type=int,
    default=5,
    show_default=True,
    help="svm/krr: folds of the cross-validation choosing C / alpha auto (0 or 1: no "
    "selection, C=1 or the middle alpha).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of every random draw (cross-validation folds, the GP's row sample, RFF).",
)
@click.option(
    "--max-iter",
    type=int,
    default=1000,
    show_default=True,
    help="SVM L-BFGS iterations (per fit).",
)
@click.option(
    "--tol",
    type=float,
    default=1e-7,
    show_default=True,
    help="SVM optimizer: stop when the relative objective reduction is below this (the "
    "quadrature's tolerance of gpr is --kernel-tol).",
)
@click.option(
    "--cache-mb",
    type=click.IntRange(min=0),
    default=None,
    help="svm: memory for the rows between passes: decoded features if they fit, else "
    "packed codes; 0 re-reads the store every pass [default: min(2048, physical memory/4)].",
)
@click.option("--label", help="gpr from raw INPUT: the target column.")
@nan_option
@delimiter_option
@click.option(
    "--gp-features",
    type=click.Choice(["glf", "rff"]),
    default="glf",
    show_default=True,
    help="gpr from raw INPUT: Gauss-Legendre or random Fourier features.",
)
@gp_kernel_option("gpr from raw INPUT: the GP kernel.")
@deprecated_alias("--kernel", "old_kernel", type=click.Choice(GP_KERNELS))
@click.option(
    "--learn/--no-learn",
    default=True,
    show_default=True,
    help="gpr: learn the hyperparameters (rff: the lengthscale too, a data pass per step).",
)
@click.option("--ard", is_flag=True, help="gpr/glf: one lengthscale per input dimension.")
@click.option(
    "--exact/--no-exact",
    default=True,
    show_default=True,
    help="gpr/glf from raw INPUT, learning: fit the exact GP of the rows (its n x n kernel "
    "matrix; a band for one input) where that costs less than a quadrature rule (small data, "
    "short lengthscales) and the rows fit --memory.",
)
@click.option(
    "--noise-bounds",
    type=Pair(),
    default="1e-6,10",
    show_default=True,
    help="gpr --learn: noise variance range (standardized targets).",
)
@click.option(
    "--lengthscale",
    type=click.FloatRange(0, min_open=True),
    help="gpr --no-learn: the fixed lengthscale.",
)
@click.option(
    "-m",
    "n_features",
    cls=AlsoSpelled,
    also="--features",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="gpr --gp-features rff: number of random features m (as encode's -m).",
)
@click.option("--features", "features_arg", type=FeatureWord(), hidden=True)
@click.option(
    "--standardize/--no-standardize",
    default=True,
    show_default=True,
    help="gpr from raw INPUT: z-score inputs.",
)
@click.option(
    "--memory",
    type=MemorySize(),
    help="svm/krr/gpr: memory budget for the working arrays, e.g. 2G (default: physical "
    "memory); refuses models whose m x m matrices cannot fit (gpr: sizes the quadrature "
    "rule), sizes chunks and the SVM cache.",
)
@glf_quadrature_options
@threads_option
@engine_options
@overwrite_option
@json_option
@click.pass_obj
def train_cmd(ui, input_path, model, output, engine, scheduler, workers, overwrite, as_json,
              **opts):  # fmt: skip
    """Train a linear SVM or kernel ridge regression on a feature store, out of core, or a
    Gaussian-process regression on a store or on raw data.

    svm/krr choose C / alpha (auto) by 5-fold cross-validation over a grid that is extended
    at its edges, then refit on all rows.  The SVM keeps the decoded features in memory
    between its passes when they fit --cache-mb (else the packed codes, else it reads the
    store chunk by chunk); krr reads the store chunk by chunk.  gpr on a store makes one
    pass for V'V and V'y and learns its hyperparameters from those statistics alone; from
    raw INPUT (Gauss-Legendre features) it makes a pass per quadrature rule, the rules
    following the lengthscales it reaches (or fits the exact GP of the rows where that
    costs less).  Either way it stores the weight posterior: `predict` gives mean and std.
    Model files embed the encoder, so `predict` and `evaluate` also take raw data.

    \b
    Examples:
      rfcli train train.rff.zarr --model svm -o svm.npz
      rfcli train train.rff.zarr --model krr --alpha auto -o krr.npz
      rfcli train co2.train.parquet --model gpr --label y -o gp.npz
      rfcli train quakes.train.parquet --model gpr --label y --gp-features rff -m 2048 \\
          --gp-kernel matern32 -o gp-rff.npz
      rfcli train s3://lake/events.rff.zarr --model svm -o s3://lake/svm.npz \\
          --engine dask --scheduler tcp://host:8786
    """
    ctx = click.get_current_context()
    notes = take_old_spellings(ctx, model, opts)
    if model != "gpr":
        check_store_input(input_path, model, opts["label"], output)
    check_model_options(ctx, model)
    if model == "gpr":
        check_gpr_options(ctx, input_path, opts)
    else:
        value = "-C" if model == "svm" else "--alpha"
        check_scope(ctx, ["cv_folds"], opts[value.strip("-")] == "auto",
                    f"{value} auto (here {value} is given)")  # fmt: skip
    from rfcli.memory import steady_malloc

    check_threads(ctx, engine)
    # the resources are keywords of the job, the modelling choices its settings
    run = dict(overwrite=overwrite, threads=opts["threads"], memory=opts["memory"],
               engine=engine, dask=dask_settings(engine, scheduler, workers),
               progress=ui.progress())  # fmt: skip
    # the settings, validated naming the flags: a bad value is the only line printed
    settings = _gpr_settings(opts) if model == "gpr" else _linear_settings(model, opts)
    for note in notes:
        ui.info(note)
    steady_malloc()  # many passes: reuse heap pages, peak memory flat (see its docstring)
    from rfcli.cli.console import warning_lines
    from rfcli.errors import ConvergenceWarning

    with warning_lines(ui, ConvergenceWarning):
        if model == "gpr":
            report = _train_gpr(ui, input_path, output, settings, opts, run)
        else:
            report = _train_linear(ui, input_path, model, output, settings, run)
    if as_json:
        ui.result_json({"model": model, "output": output, **report})


def _linear_settings(model: str, o: dict):
    from rfcli.jobs.train import TrainSettings

    return settings_from(
        TrainSettings,
        o,
        {"cache_bytes": "cache_mb"},
        model=model,
        cache_bytes=None if o["cache_mb"] is None else o["cache_mb"] << 20,
    )


def _gpr_settings(o: dict):
    from rfcli.jobs.train_gpr import GPRSettings

    renamed = {"features": "gp_features", "kernel": "gp_kernel", "tol": "kernel_tol"}
    ctx = click.get_current_context()
    # --tol with --model gpr (its old spelling) is named as such in messages
    old = {"tol": "--tol (now --kernel-tol)"} if flag_of(ctx, "kernel_tol") == "--tol" else {}
    return settings_from(GPRSettings, o, renamed, old, features=o["gp_features"],
                         kernel=o["gp_kernel"], tol=o["kernel_tol"])  # fmt: skip


def _train_linear(ui, input_path, model, output, settings, run) -> None:
    from rfcli.jobs.train import train

    res = train(input_path, output, settings, **run)
    r = res.report
    if "cv" in r:
        for line in cv_table(r["cv"]):
            ui.info(line)
    if model == "svm":
        ui.info(
            f"svm ({r['loss']}{', one-vs-one' if r.get('multiclass') == 'ovo' else ''}) "
            f"C={r['C']:g} on all rows: {r['iterations']} iterations, "
            f"{r['passes']} passes, objective {r['objective']:.6g}, "
            + ("converged" if r["converged"] else "NOT converged: " + r["message"])
        )
        ui.info(cache_line(r["cache"]))
        ui.info(f"{r['total_passes']} passes over the data in all")
    else:
        ui.info(f"krr ({r['task']}): alpha={r['alpha']:.4g}, train MSE {r['train_mse']:.6g}")
    ui.info(f"wrote {output} ({res.seconds:.1f} s)")
    return r


def cv_table(cv: dict) -> list[str]:
    """The cross-validation's candidates (mean and spread of the folds' scores, SVM passes)
    and the choice, as lines of text."""
    import numpy as np

    name, metric, passes = cv["parameter"], cv["metric"], cv.get("passes")
    lo, hi = min(cv["fold_rows"]), max(cv["fold_rows"])
    lines = [
        f"{cv['folds']}-fold cross-validation of {name} (held-out {metric}, "
        f"folds of {lo if lo == hi else f'{lo}..{hi}'} rows):",
        f"  {name:>10}  {'mean':>9}  {'std':>9}" + ("  passes" if passes else ""),
    ]
    for v in cv["grid"]:
        scores = cv["fold_scores"][v]
        mark = "  <- chosen" if v == cv["chosen"] else ""
        added = " (extension)" if v in cv["extended"] else ""
        lines.append(
            f"  {v:>10.4g}  {cv['mean'][v]:>9.5g}  {np.std(scores):>9.2g}"
            + (f"  {passes[v]:>6}" if passes else "")
            + mark
            + added
        )
    if cv["warning"]:
        lines.append(f"warning: {cv['warning']}")
    return lines


def cache_line(cache: dict) -> str:
    """Which rows the SVM kept in memory between passes, in words."""
    from rfcli.memory import human

    where = "" if cache["where"] == "this process" else f" (on the {cache['where']})"
    if cache["kind"] == "decoded":
        return f"features cached in memory: {human(cache['bytes'])} decoded float32{where}"
    if cache["kind"] == "packed":
        return (
            f"features cached in memory: {human(cache['bytes'])} of packed codes{where}, "
            "decoded again in every pass"
        )
    return "features not cached (over the cache budget): every pass reads the store"


def _train_gpr(ui, input_path, output, s, o, run) -> None:
    from rfcli.io.settings import ReadSettings
    from rfcli.jobs.train_gpr import train_gpr

    read = ReadSettings(label=o["label"], on_nan=o["on_nan"], delimiter=o["delimiter"])
    r = train_gpr(input_path, output, s, read, **run).report
    _gpr_lines(ui, r, output)
    return r


def _gpr_lines(ui, r: dict, output: str) -> None:
    if "lengthscale_bounds" in r:
        b = r["lengthscale_bounds"]
        ui.info(
            f"lengthscale bounds ({r['bounds_from']}): "
            + "; ".join(f"{lo:.4g}..{hi:.4g}" for lo, hi in b)
        )
    levels = [lv for lv in r.get("levels", []) if lv["kind"] != "coarse"] or r.get("levels", [])
    if "exact_rows" in r:  # the exact GP: no quadrature at the optimum
        # (after a coarse rule over the budget the levels may still pick it on cost)
        why = (
            "the coarse rule is over the budget"
            if "coarse_rule" in r
            else "it costs less than a rule"
        )
        ui.info(
            "quadrature nodes by level: "
            + " -> ".join(str(lv.get("nodes", "exact GP")) for lv in r["levels"])
            + f"; the exact GP of the {r['exact_rows']} rows ({why} here)"
        )
    elif len(r.get("levels", [])) > 1:
        ui.info(
            "quadrature nodes by level: "
            + " -> ".join(str(lv["nodes"]) for lv in r["levels"])
            + f"; kernel error at the optimum {r['probe_error']:.2g}"
            + (f" (noise/signal {r['noise_to_signal']:.2g})" if "noise_to_signal" in r else "")
            + ("" if r.get("converged", True) else " (levels NOT converged)")
        )
    elif levels and levels[-1].get("probe_error") is not None:
        ui.info(f"kernel error at the optimum {levels[-1]['probe_error']:.2g}")
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
