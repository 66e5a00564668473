"""Shared click option types and helpers for commands."""

from __future__ import annotations

import click


class CommaList(click.ParamType):
    """``a,b,c`` (the option may also be repeated)."""

    name = "COLS"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        return [v.strip() for v in str(value).split(",") if v.strip()]


def flatten(values) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for v in values:
        out.extend(v)
    return out


class GammaType(click.ParamType):
    name = "FLOAT|auto"

    def convert(self, value, param, ctx):
        if value == "auto" or isinstance(value, float):
            return value
        try:
            return float(value)
        except ValueError:
            self.fail(f"{value!r} is neither a number nor 'auto'", param, ctx)


overwrite_option = click.option(
    "--overwrite", is_flag=True, help="Replace the output if it exists."
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout."
)
