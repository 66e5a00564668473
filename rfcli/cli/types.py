"""The command line's click parameter types: comma lists, numbers or words, bits, memory
sizes, ranges."""

from __future__ import annotations

import math

import click


class CommaList(click.ParamType):
    """``a,b,c`` (the option may also be repeated)."""

    name = "COLS"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        return [v.strip() for v in str(value).split(",") if v.strip()]


class AutoFloat(click.ParamType):
    """A positive number or one of ``words`` (default ``auto``: gamma, -C, --alpha);
    ``checked=False``: any number, its range checked by the settings' table
    (rfcli.constraints), whose messages name the flag."""

    def __init__(self, words: tuple[str, ...] = ("auto",), checked: bool = True):
        self.words = tuple(words)
        self.checked = checked
        self.name = "|".join(("FLOAT", *self.words))

    def convert(self, value, param, ctx):
        if value in self.words:
            return value
        alts = " or ".join(repr(w) for w in self.words)
        try:
            v = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither a number nor {alts}", param, ctx)
        if self.checked and not (v > 0 and math.isfinite(v)):
            self.fail(f"{value} is not a positive number or {alts}", param, ctx)
        return v


class Bits(click.ParamType):
    """Bits per feature: 1..8, 16/32 (the float quantizer ``none``), ``none`` (the
    float quantizer, 32 bits) or ``auto`` (chosen for --row-bytes)."""

    name = "1-8|none|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value in ("none", "auto"):
            b = value
        else:
            try:
                b = int(value)
            except ValueError:
                self.fail(f"{value!r} is neither an integer in 1..8 nor 'none' or 'auto'.",
                          param, ctx)  # fmt: skip
        if b not in ("none", "auto") and not (1 <= b <= 8 or b in (16, 32)):
            self.fail(f"{b} is not in 1..8 (or 16/32 for --quantizer none).", param, ctx)
        return b


class MemorySize(click.ParamType):
    """A memory budget such as ``512M`` or ``2G``, in bytes."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        from rfcli.errors import UsageError
        from rfcli.memory import parse_size

        try:
            return parse_size(value)
        except UsageError as e:
            self.fail(str(e), param, ctx)


class Pair(click.ParamType):
    """``LO,HI``: two numbers with 0 < LO <= HI (a range of a positive quantity)."""

    name = "LO,HI"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            lo, hi = (float(v) for v in str(value).split(","))
        except ValueError:
            self.fail(f"{value!r} is not two numbers LO,HI", param, ctx)
        if not 0 < lo <= hi:
            self.fail(f"{value!r} does not satisfy 0 < LO <= HI", param, ctx)
        return lo, hi


class NumberList(click.ParamType):
    """``a,b,c`` of ints or floats; ``check``/``what``: a condition on each number and its
    description for the error (``"even integers >= 2"``)."""

    def __init__(self, kind=float, check=None, what=None):
        self.kind, self.check, self.what = kind, check, what
        self.name = "INTS" if kind is int else "NUMBERS"

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        try:
            out = [self.kind(v) for v in str(value).split(",")]
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of numbers", param, ctx)
        if self.check is not None and not all(self.check(v) for v in out):
            self.fail(f"{value!r} is not a comma-separated list of {self.what}", param, ctx)
        return out
