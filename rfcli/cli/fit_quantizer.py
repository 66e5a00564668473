"""``rfcli fit-quantizer``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.checks import check_overwrite, check_scope
from rfcli.cli.options import overwrite_option, threads_option
from rfcli.errors import UsageError
from rfcli.io.jsonfile import write_json
from rfcli.quantize import DESIGNABLE, make_quantizer
from rfcli.quantize.lloyd_max import arcsine_distortion

#: the kinds that draw random numbers (--seed): stochastic rounding, the empirical sample
SEEDED = ("stoc", "empirical")


@cli.command("fit-quantizer")
@click.argument("input_path", metavar="[INPUT]", required=False)
@click.option(
    "--kind",
    type=click.Choice([*DESIGNABLE, "empirical"]),
    default="lm",
    show_default=True,
    help="empirical: Lloyd-Max fitted on a sample of the --map's feature values of INPUT.",
)
@click.option(
    "-b",
    "--bits",
    type=click.IntRange(1, 8),
    default=2,
    show_default=True,
    help="Bits per feature (1-8).",
)
@click.option(
    "--map",
    "map_path",
    help="empirical: store or model file whose map (and preprocessing) to fit for.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=200_000,
    show_default=True,
    help="empirical: feature values to fit on.",
)
@click.option(
    "--domain",
    type=click.Choice(["linear", "log"]),
    default="linear",
    show_default=True,
    help="empirical: fit on the values or on their logarithm (positive features).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed (stoc, and the empirical sample).",
)
@click.option(
    "-o", "--output", default="-", show_default=True, help="JSON file to write ('-' = stdout)."
)
@overwrite_option
@threads_option
@click.pass_obj
def fit_quantizer_cmd(
    ui, input_path, kind, bits, map_path, sample, domain, seed, output, overwrite, threads
):
    """Design a b-bit quantizer and write it as JSON.

    Designed kinds (lm, lm2, stoc, uniform, sign) need no data: the file holds kind, bits,
    the 2^b - 1 interior borders and the 2^b levels, plus the distortion
    D1 = E[(z - Q(z))^2] under the arcsine law of RFF values.  The empirical kind is
    fitted on INPUT mapped through the map of --map (exact 1-D Lloyd-Max on the sorted
    sample, its values mapped on --threads worker threads); the file records the sample
    size, seed and the map's fingerprint, and encode refuses it for another map.

    \b
    Examples:
      rfcli fit-quantizer --kind lm -b 2 -o lm2bit.json
      rfcli encode train.parquet --quantizer-file lm2bit.json
      rfcli encode train.parquet --kernel positive --quantizer none -o float.zarr
      rfcli fit-quantizer --kind empirical -b 2 --map float.zarr train.parquet -o q.json
      rfcli encode train.parquet --kernel positive --quantizer-file q.json
    """
    ctx = click.get_current_context()
    check_overwrite(ctx, output)
    fitted = "--kind empirical (fitted)"
    check_scope(ctx, ("sample", "domain", "threads"), kind == "empirical", fitted)
    drawn = f"--kind {'/'.join(SEEDED)} (the kinds with random draws), not {kind}"
    check_scope(ctx, ["seed"], kind in SEEDED, drawn)
    if kind == "empirical":
        if not map_path or not input_path:
            raise UsageError("--kind empirical needs --map STORE_OR_MODEL and INPUT")
        if sample < 2**bits:
            raise UsageError(f"--sample must be at least {2**bits} values for {bits} bits")
        from rfcli.jobs.fit_quantizer import fit_quantizer_on_input

        q = fit_quantizer_on_input(
            map_path,
            input_path,
            bits,
            n_values=sample,
            seed=seed,
            domain=domain,
            threads=threads,
            progress=ui.progress(),
        )
        cfg = q.to_config()
        title = (
            f"empirical ({domain}), {bits} bit(s), {cfg['sample_values']:,} values, "
            f"MSE {cfg['distortion']:.4g}"
        )
    else:
        if input_path or map_path:
            raise UsageError(f"--kind {kind} is designed, not fitted: drop INPUT and --map")
        q = make_quantizer(kind, bits, seed=seed)
        cfg = q.to_config()
        cfg["distortion_d1"] = arcsine_distortion(q.borders, q.levels)
        title = f"{kind}, {bits} bit(s), D1 = {cfg['distortion_d1']:.6g}"
    write_json(output, cfg, overwrite=overwrite)
    if output != "-":
        rows = [
            (i, f"{lv:+.6g}", f"{q.borders[i]:+.6g}" if i < len(q.borders) else "")
            for i, lv in enumerate(q.levels)
        ]
        ui.table(title, rows, headers=("code", "level", "upper border"))
        ui.info(f"wrote {output}")
