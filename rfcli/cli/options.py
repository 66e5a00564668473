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


class AutoFloat(click.ParamType):
    """A number or the word ``auto`` (gamma, -C, --alpha)."""

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


class Pair(click.ParamType):
    """``LO,HI``: two numbers."""

    name = "LO,HI"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            lo, hi = (float(v) for v in str(value).split(","))
        except ValueError:
            self.fail(f"{value!r} is not two numbers LO,HI", param, ctx)
        return lo, hi


class NumberList(click.ParamType):
    """``a,b,c`` of ints or floats."""

    def __init__(self, kind=float):
        self.kind = kind
        self.name = "INTS" if kind is int else "NUMBERS"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        try:
            return [self.kind(v) for v in str(value).split(",")]
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of numbers", param, ctx)


def glf_quadrature_options(f):
    """--lengthscale-bounds, --nodes, --cutoff: the Gauss-Legendre quadrature (encode, train)."""
    f = click.option("--cutoff", type=NumberList(float), help="GLF: truncation L per dimension.")(f)
    f = click.option(
        "--nodes",
        type=NumberList(int),
        help="GLF: Gauss-Legendre nodes per dimension (even), e.g. 64,64.",
    )(f)
    return click.option(
        "--lengthscale-bounds",
        type=Pair(),
        default="0.05,2",
        show_default=True,
        help="GP lengthscale range LO,HI (standardized inputs); decides GLF's nodes.",
    )(f)
