"""``rfcli encode``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.checks import MAP_FAMILY_OPTIONS, check_bandwidth, check_family_options
from rfcli.cli.options import (
    SectionedCommand,
    check_threads,
    dask_settings,
    delimiter_option,
    engine_options,
    flatten,
    glf_quadrature_options,
    gp_kernel_option,
    json_option,
    map_family_options,
    overwrite_option,
    settings_from,
    threads_option,
)
from rfcli.cli.spelling import deprecated_alias, flag_of, given, take_deprecated
from rfcli.cli.types import AutoFloat, Bits, CommaList, MemorySize
from rfcli.errors import Interrupted, UsageError
from rfcli.io.jsonfile import read_json
from rfcli.io.settings import FORMATS, NAN_POLICIES, ReadSettings
from rfcli.names import KERNELS, QUANTIZER_KINDS

#: the sections of ``rfcli encode --help``: option -> section
ENCODE_SECTIONS = {
    **dict.fromkeys(("columns", "label", "ids", "fmt", "delimiter", "on_nan", "normalize_rows",
                     "standardize", "like"), "Input options"),
    **dict.fromkeys(("features", "kernel", "gamma", "seed", *MAP_FAMILY_OPTIONS, "gp_kernel",
                     "kernel_tol", "lengthscale_bounds", "nodes", "cutoff"), "Map options"),
    **dict.fromkeys(("bits", "row_bytes", "quantizer", "quantizer_domain", "quantizer_file"),
                    "Quantizer options"),
    **dict.fromkeys(("output", "overwrite", "store_chunk_rows", "resume", "as_json"),
                    "Output options"),  # fmt: skip
    **dict.fromkeys(("threads", "chunk_rows", "memory", "engine", "scheduler", "workers"),
                    "Engine options"),
    **dict.fromkeys(("quiet", "debug", "help"), "General options"),
}  # fmt: skip
SECTION_ORDER = ("Input options", "Map options", "Quantizer options", "Output options",
                 "Engine options", "General options")  # fmt: skip

#: options of the Gauss-Legendre map only (--kernel glf)
GLF_OPTIONS = ("gp_kernel", "kernel_tol", "lengthscale_bounds", "nodes", "cutoff")
#: old spellings kept for one release: hidden option -> the option it now is
DEPRECATED = {"old_tol": "kernel_tol"}
#: quantizers with a fixed number of bits per feature
#: what --like takes from the store: options that would be ignored with it
LIKE_FIXES = ("features", "row_bytes", "kernel", "gamma", "seed", "bits", "quantizer",
              "quantizer_domain",
              "quantizer_file", "normalize_rows", "standardize", "columns", "store_chunk_rows",
              *MAP_FAMILY_OPTIONS, *GLF_OPTIONS)  # fmt: skip


@cli.command("encode", cls=SectionedCommand, sections=ENCODE_SECTIONS, section_order=SECTION_ORDER)
@click.argument("input_path", metavar="INPUT")
@click.option("-o", "--output", help="Output store (default: INPUT's name with .rff.zarr).")
@click.option(
    "-b",
    "--bits",
    type=Bits(),
    help="Bits per feature: 1-8, or 'none' for 32-bit floats (the same as --quantizer "
    "none; with it, 16 or 32). Default 2 (sign/binary: 1, ternary: 2, trits: 1.6). "
    "'auto' (with --row-bytes and --label): the b of 1, 2, 3, 4, 8 (m = 8N/b) chosen "
    "with gamma by the validation of --gamma search.",
)
@click.option(
    "--row-bytes",
    type=click.IntRange(min=1),
    metavar="N",
    help="Bytes of codes per row: sets m = 8N/b (-m is then not needed).",
)
@click.option(
    "-m",
    "--features",
    type=click.IntRange(min=1),
    help="Number of random features m (default 1024, or 8N/b with --row-bytes).",
)
@click.option("--kernel", type=click.Choice(KERNELS), default="gaussian", show_default=True)
@click.option(
    "--gamma",
    type=AutoFloat(("auto", "search")),
    default="auto",
    show_default=True,
    help="Bandwidth: k = exp(-gamma ||x-y||^2); 'auto' = 1/median squared distance "
    "of a row sample; 'search' (with --label) = chosen by 3-fold validation on a row "
    "sample (at most 20,000 rows) over a grid around the median heuristic.",
)
@click.option(
    "--quantizer",
    type=click.Choice(QUANTIZER_KINDS),
    help="Quantizer (default: lm for Fourier kernels and arccos1, binary for arccos0, "
    "ternary for ternary, empirical for positive and ntk, none for activation). "
    "empirical = Lloyd-Max fitted on the map's own values (a row sample).",
)
@click.option(
    "--quantizer-domain",
    type=click.Choice(["auto", "linear", "log"]),
    default="auto",
    show_default=True,
    help="--quantizer empirical: fit on the values or their logarithm; auto = log for "
    "positive features at 3+ bits (smaller kernel error there), else linear.",
)
@click.option(
    "--quantizer-file",
    type=click.Path(dir_okay=False),
    help="Quantizer JSON from `rfcli fit-quantizer`.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of every random draw.",
)
@click.option(
    "--columns",
    type=CommaList(),
    multiple=True,
    help="Feature columns (default: all numeric but label/id).",
)
@click.option("--label", help="Target column stored with the codes.")
@click.option("--id", "ids", multiple=True, help="Pass-through id column (repeatable).")
@click.option(
    "--normalize-rows",
    is_flag=True,
    help="Scale each row to unit L2 norm, as in Li and Li, 'Quantization Algorithms for "
    "Random Fourier Features', ICML 2021.",
)
@click.option(
    "--standardize", is_flag=True, help="Column z-scores fitted on this input (one extra pass)."
)
@click.option(
    "--like",
    type=click.Path(),
    help="Reuse this store's map, preprocessing and quantizer (test data).",
)
@click.option(
    "--chunk-rows",
    type=click.IntRange(min=1),
    default=8192,
    show_default=True,
    help="Rows per processing chunk (bounds memory).",
)
@threads_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Input format (default: from the extension).",
)
@click.option(
    "--on-nan",
    type=click.Choice(NAN_POLICIES),
    default="error",
    show_default=True,
    help="Rows with NaN/inf features: fail, drop them, or set those values to 0.",
)
@delimiter_option
@gp_kernel_option("--kernel glf: the GP kernel of the quadrature.")
@deprecated_alias("--tol", "old_tol", type=click.FloatRange(0, 1, min_open=True, max_open=True))
@click.option(
    "--memory",
    type=MemorySize(),
    help="Memory budget for the working arrays, e.g. 512M or 2G: the chunk size is derived "
    "from it (the output does not change).",
)
@click.option(
    "--store-chunk-rows",
    type=click.IntRange(min=1),
    help="Rows per store chunk (default: about 4 MiB of codes, 1024-65536 rows).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue an interrupted encode of the same input with the same settings from "
    "OUTPUT.partial (the result is identical to an uninterrupted run).",
)
@glf_quadrature_options
@map_family_options
@engine_options
@overwrite_option
@json_option
@click.pass_obj
def encode_cmd(ui, input_path, output, like, threads, memory, resume, engine, scheduler, workers,
               overwrite, as_json, **opts):  # fmt: skip
    """Encode INPUT (a Parquet file, directory or glob of Parquet files, CSV, Zarr; '-' = CSV
    on stdin) into a bit-packed feature store.

    Rows are read in chunks, preprocessed, mapped through m random features, quantized
    to b bits and packed into a Zarr store; memory stays bounded by --chunk-rows.

    \b
    Examples:
      rfcli encode train.parquet --label label --normalize-rows -m 2048 -b 2
      rfcli encode test.parquet --like train.rff.zarr -o test.rff.zarr
      cat data.csv | rfcli encode - -o data.rff.zarr --kernel laplacian --gamma 0.5
      rfcli encode train.parquet --normalize-rows --kernel ternary --target relu \\
          --quantizer trits -o train.trf.zarr
      rfcli encode train.parquet --standardize --kernel ntk --depth 2 -m 2048 -b 2
      rfcli encode big.parquet -o big.rff.zarr --resume   # after Ctrl-C, kill or crash
      rfcli encode lake/events/ -o events.rff.zarr --engine dask --scheduler tcp://host:8786
      rfcli encode co2.parquet --label y --standardize --kernel glf --gp-kernel matern32 \\
          --kernel-tol 1e-4 -o co2.glf.zarr
    """
    ctx = click.get_current_context()
    notes = take_deprecated(ctx, opts, DEPRECATED)
    _check_given(ctx, like, opts)
    check_family_options(ctx, opts["kernel"])
    _check_combinations(input_path, output, resume, engine, opts)
    check_threads(ctx, engine)
    for note in notes:
        ui.info(note)
    from rfcli.cli.console import warning_lines
    from rfcli.errors import PrecisionWarning
    from rfcli.jobs.encode import ResumeMismatch, encode
    from rfcli.memory import encode_malloc

    encode_malloc()  # one long streaming pass: reuse the chunk arrays' pages

    try:
        with warning_lines(ui, PrecisionWarning):
            res = encode(
                input_path,
                output,
                _encode_settings(opts),
                _read_settings(opts),
                like=like,
                threads=threads,
                overwrite=overwrite,
                resume=resume,
                memory=memory,
                engine=engine,
                dask=dask_settings(engine, scheduler, workers),
                progress=ui.progress(),
                note=lambda text: ui.info(text.replace("resume: ", "--resume: ", 1)),
            )
    except ResumeMismatch as e:
        raise UsageError(e.text(names=_flag_of_setting, again="--resume")) from None
    except Interrupted as e:
        if e.partial is None:
            raise
        raise Interrupted(
            f"interrupted; {e.rows_kept:,} encoded rows are kept in {e.partial} "
            "(run the same command with --resume to continue)"
        ) from None
    _report(ui, res, fitted=like is None, gamma=opts["gamma"], label=opts["label"])
    if as_json:
        ui.result_json(_result(res))


#: settings (as ResumeMismatch names them) whose flag is not ``--`` + the name
SETTING_FLAGS = {"n_features": "-m", "bits": "-b", "quantizer_config": "--quantizer-file",
                 "read.fmt": "--format", "read.ids": "--id", "like": "--like",
                 "input": "INPUT", "map_options.tol": "--kernel-tol",
                 "map_options.glf_kernel": "--gp-kernel"}  # fmt: skip


def _flag_of_setting(name: str) -> str:
    """The flag of a setting named as the library names it (``read.label``: --label)."""
    if name in SETTING_FLAGS:
        return SETTING_FLAGS[name]
    field = name.rsplit(".", 1)[-1]
    if name == "sample_rows":
        return "the row sample's size (sample_rows)"
    return "--" + field.replace("_", "-")


def _result(res) -> dict:
    """The encode's outcome as JSON values (``--json``)."""
    enc = res.encoder
    out = {
        "path": res.path,
        "rows": res.n_rows,
        "features": enc.n_features,
        "quantizer": enc.quantizer.kind,
        "bits": enc.quantizer.bits_per_feature,
        "seconds": res.seconds,
        "rows_per_s": res.rows_per_s,
        "map": enc.fmap.fitted_params(),
        "skipped_columns": list(res.skipped_columns),
    }
    out.update(enc.fit_report)
    return out


def _check_given(ctx: click.Context, like, o: dict) -> None:
    """Options that would be silently ignored are refused: those of another kernel, those
    that --like takes from its store, bits that a quantizer does not have; ``-b none``
    becomes the float quantizer (in ``o``)."""
    from rfcli.errors import UsageError

    kernel = o["kernel"]
    if like is not None:
        fixed = [flag_of(ctx, n) for n in LIKE_FIXES if given(ctx, n)]
        if fixed:
            raise UsageError(
                f"--like takes the map, preprocessing, quantizer and columns of {like}: drop "
                f"{', '.join(fixed)} (or encode without --like)"
            )
        return
    for name in GLF_OPTIONS:
        if given(ctx, name) and kernel != "glf":
            raise UsageError(f"{flag_of(ctx, name)} applies to --kernel glf, not {kernel}")
    check_bandwidth(ctx, kernel)
    q, bits = o["quantizer"], o["bits"]
    if bits == "auto":
        _check_auto_bits(o)
        return
    if bits == "none":
        if q not in (None, "none"):
            raise UsageError(f"-b none means --quantizer none (32-bit floats), not {q}")
        o["quantizer"], o["bits"] = q, bits = "none", 32
    if bits is not None and not o["quantizer_file"]:
        what = f"--quantizer {q}" if q else None
        q = q or _default_quantizer(o)
        what = what or f"the {kernel} kernel's quantizer ({q})"
        from rfcli.quantize.base import FIXED_BITS

        if q in FIXED_BITS and bits != FIXED_BITS[q][0]:
            n = FIXED_BITS[q][1]
            raise UsageError(
                f"{what} is {n:g} bit{'' if n == 1 else 's'} per feature: drop -b {bits}"
            )
        if q == "none" and bits not in (16, 32):
            raise UsageError(f"{what} stores 16- or 32-bit floats (-b 16 or 32), not -b {bits}")
        if q != "none" and bits in (16, 32):
            raise UsageError(f"-b {bits} is for --quantizer none (floats); {q} takes 1-8 bits")
    if given(ctx, "quantizer_domain"):
        if o["quantizer_file"]:
            raise UsageError("--quantizer-domain is for fitting: the --quantizer-file is fitted")
        if (q or _default_quantizer(o)) != "empirical":
            raise UsageError(
                "--quantizer-domain applies to --quantizer empirical, not "
                f"{q or _default_quantizer(o)}"
            )


def _check_auto_bits(o: dict) -> None:
    """``-b auto``: a quantizer with a bit width to choose, a budget and a label."""
    from rfcli.jobs.encode import AUTO_BITS_KINDS
    from rfcli.names import BIT_CANDIDATES

    q = o["quantizer"]
    if o["quantizer_file"]:
        raise UsageError("-b auto chooses a quantizer's bits: the --quantizer-file fixes them")
    kind = q or _default_quantizer(o)
    if kind not in AUTO_BITS_KINDS:
        what = f"--quantizer {q}" if q else f"the {o['kernel']} kernel's quantizer ({kind})"
        among = ", ".join(map(str, BIT_CANDIDATES))
        raise UsageError(f"-b auto chooses among {among} bits: {what} has no bit width to "
                         "choose (give -b, or --quantizer lm)")  # fmt: skip
    if o["row_bytes"] is None:
        raise UsageError("-b auto chooses the bits for a storage budget: give --row-bytes N")
    if o["features"] is not None:
        raise UsageError("-b auto chooses m with the bits (m = 8N/b for --row-bytes N): drop -m")
    if o["label"] is None:
        raise UsageError("-b auto chooses the bits by validation: give --label")


def _default_quantizer(o: dict) -> str:
    from rfcli.maps import make_map

    fmap = make_map(o["kernel"], 8, **{k: o[k] for k in MAP_FAMILY_OPTIONS})
    return fmap.default_quantizer


def _check_combinations(input_path, output, resume, engine, o: dict) -> None:
    """Options that do not go together, refused here so that the message names the flags
    (the library checks them too, naming its parameters)."""
    from rfcli.errors import UsageError
    from rfcli.io import location

    if resume and input_path == "-":
        raise UsageError("--resume needs a file input (stdin cannot be read again)")
    if input_path == "-" and not output:
        raise UsageError("reading from stdin: give the output store with -o")
    if resume and engine == "dask":
        raise UsageError("--resume is for the local engine (a Dask encode is retried by Dask)")
    if resume and location.is_url(output or input_path):
        raise UsageError(
            "--resume needs a local output store (a URL store is written in place, not as "
            "a partial store)"
        )
    if o["kernel"] == "positive" and o["hyperbolic"] and o["features"] % 2:
        raise UsageError(f"--hyperbolic needs an even -m, got {o['features']}")


def _encode_settings(o: dict):
    """The EncodeSettings of the options (imported here: ``--help`` loads no NumPy)."""
    from rfcli.jobs.encode import EncodeSettings

    map_options = {k: o[k] for k in MAP_FAMILY_OPTIONS}
    if o["kernel"] == "glf":
        map_options.update(
            glf_kernel=o["gp_kernel"],
            lengthscale_bounds=o["lengthscale_bounds"],
            tol=o["kernel_tol"],
            nodes=o["nodes"],
            cutoff=o["cutoff"],
        )
    qfile = o["quantizer_file"]
    return settings_from(
        EncodeSettings,
        o,
        flags={"n_features": "-m"},
        map_options=map_options,
        n_features=o["features"],
        quantizer_config=_quantizer_file(qfile) if qfile else None,
    )


def _read_settings(o: dict) -> ReadSettings:
    return settings_from(ReadSettings, o, columns=flatten(o["columns"]), ids=list(o["ids"]))


def _report(ui, res, fitted: bool, gamma, label: str | None = None) -> None:
    """What was skipped, what was fitted on the input, and what was written (stderr)."""
    if label is None:
        from rfcli.io.columns import LABEL_LIKE  # names that usually hold a label

        for c in res.encoder.columns:
            if c.lower() in LABEL_LIKE:
                ui.info(f"note: column {c!r} is encoded as a feature; if it is the label, "
                        f"encode with --label {c} (train needs a store with a label)")  # fmt: skip
    if res.skipped_columns:
        ui.info(
            f"skipped non-numeric column(s): {', '.join(res.skipped_columns)} "
            "(use --columns to choose)"
        )
    enc = res.encoder
    if fitted:
        params = enc.fmap.fitted_params()
        if gamma == "auto" and params.get("gamma") is not None:
            ui.info(f"gamma = {params['gamma']:.6g} (median heuristic)")
        search = enc.fit_report.get("gamma_search")
        if search:
            _search_report(ui, search)
        choice = enc.fit_report.get("bits_choice")
        if choice:
            _bits_report(ui, choice)
        if "kappa" in params:
            ui.info(f"kappa = {params['kappa']:.6g} (positive features, training maximum)")
        if "s_minus" in params:
            ui.info(
                f"ternary thresholds s- = {params['s_minus']:.6g}, s+ = {params['s_plus']:.6g} "
                f"({params['pattern']} pattern, tau = {params['tau']:.6g}, "
                f"moment residual {params['residual']:.2g})"
            )
    ui.info(
        f"wrote {res.path}: {res.n_rows:,} rows x {enc.n_features} features, "
        f"{enc.quantizer.kind} {_bits(enc.quantizer.bits_per_feature)}, "
        f"{res.seconds:.2f} s ({res.rows_per_s:,.0f} rows/s)"
    )


def _search_report(ui, gs: dict) -> None:
    """The gamma search's candidates and validation scores (stderr)."""
    what = "accuracy" if gs["metric"] == "accuracy" else "MSE"
    ui.info(
        f"gamma search: {gs['folds']}-fold validation of ridge on {gs['features']} random "
        f"features, {gs['sample_rows']:,} sample rows (median heuristic "
        f"{gs['median_heuristic']:.4g}):"
    )
    for g, sc in zip(gs["candidates"], gs["scores"], strict=True):
        mark = "  <- chosen" if g == gs["gamma"] else ""
        ui.info(f"  gamma {g:<10.4g} validation {what} {sc:.4g}{mark}")
    if gs.get("at_edge"):
        ui.info("warning: the chosen gamma is at the edge of the searched grid")


def _bits_report(ui, bc: dict) -> None:
    """The bit widths compared for --row-bytes and their validation scores (stderr)."""
    what = "accuracy" if bc["metric"] == "accuracy" else "MSE"
    ui.info(
        f"bits for {bc['row_bytes']:,} bytes per row: validation {what} at the budget's m, "
        f"extrapolated from {bc['search_features']}, {bc['search_features'] // 2} and "
        f"{bc['search_features'] // 4} "
        f"features, {bc['sample_rows']:,} sample rows:"
    )
    for c in bc["candidates"]:
        mark = "  <- chosen" if c["bits"] == bc["bits"] else ""
        g = f" gamma {c['gamma']:<10.4g}" if c["gamma"] is not None else ""
        se = f" (SE {c['se']:.2g}, of the difference {c['diff_se']:.2g})" if "se" in c else ""
        ui.info(f"  b {c['bits']}  m {c['features']:<6d}{g} validation {what} "
                f"{c['score']:.4g}{se}{mark}")  # fmt: skip
    if "se" in bc["candidates"][0]:
        ui.info("  chosen: the most features that no larger b beats by more than the paired SE")
    for c in bc.get("left_out", []):
        ui.info(f"  b {c['bits']}  m {c['features']:<6d} left out: {c['reason']}")


def _bits(b: float) -> str:
    return f"{b:g} bit" + ("" if b == 1 else "s")


def _quantizer_file(path: str) -> dict:
    """The quantizer file's config, validated here so errors name the file."""
    from rfcli.errors import ConfigError
    from rfcli.quantize import Quantizer

    cfg = read_json(path, "quantizer file")
    try:
        Quantizer.from_config(cfg)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    return cfg
