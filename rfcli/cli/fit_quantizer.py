"""``rfcli fit-quantizer``."""

from __future__ import annotations

import click

from rfcli.cli import cli
from rfcli.cli.options import overwrite_option
from rfcli.io.jsonfile import write_json
from rfcli.quantize import DESIGNABLE, make_quantizer
from rfcli.quantize.lloyd_max import arcsine_distortion


@cli.command("fit-quantizer")
@click.option("--kind", type=click.Choice(DESIGNABLE), default="lm", show_default=True)
@click.option(
    "-b", "--bits", type=int, default=2, show_default=True, help="Bits per feature (1-8)."
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed (stoc only)."
)
@click.option(
    "-o", "--output", default="-", show_default=True, help="JSON file to write ('-' = stdout)."
)
@overwrite_option
@click.pass_obj
def fit_quantizer_cmd(ui, kind, bits, seed, output, overwrite):
    """Design a b-bit quantizer for random Fourier features and write it as JSON.

    The file holds kind, bits, the 2^b - 1 interior borders and the 2^b levels, plus
    the distortion D1 = E[(z - Q(z))^2] under the arcsine law of RFF values.

    \b
    Examples:
      rfcli fit-quantizer --kind lm -b 2 -o lm2bit.json
      rfcli encode train.parquet --quantizer-file lm2bit.json
    """
    q = make_quantizer(kind, bits, seed=seed)
    cfg = q.to_config()
    cfg["distortion_d1"] = arcsine_distortion(q.borders, q.levels)
    write_json(output, cfg, overwrite=overwrite)
    if output != "-":
        rows = [
            (i, f"{lv:+.6f}", f"{q.borders[i]:+.6f}" if i < len(q.borders) else "")
            for i, lv in enumerate(q.levels)
        ]
        ui.table(
            f"{kind}, {bits} bit(s), D1 = {cfg['distortion_d1']:.6g}",
            rows,
            headers=("code", "level", "upper border"),
        )
        ui.info(f"wrote {output}")
