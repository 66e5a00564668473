"""Shared click option types and helpers for commands."""

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


def settings_from(cls, opts: dict, **given):
    """A settings dataclass from the click options named like its fields, with ``given``
    for the fields whose option has another name or needs converting."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in opts.items() if k in names and k not in given}, **given)


def flatten(values) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for v in values:
        out.extend(v)
    return out


class AutoFloat(click.ParamType):
    """A positive number or one of ``words`` (default ``auto``: gamma, -C, --alpha)."""

    def __init__(self, words: tuple[str, ...] = ("auto",)):
        self.words = tuple(words)
        self.name = "|".join(("FLOAT", *self.words))

    def convert(self, value, param, ctx):
        if value in self.words:
            return value
        alts = " or ".join(repr(w) for w in self.words)
        try:
            v = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither a number nor {alts}", param, ctx)
        if not (v > 0 and math.isfinite(v)):
            self.fail(f"{value} is not a positive number or {alts}", param, ctx)
        return v


class Bits(click.ParamType):
    """Bits per feature: 1..8, 16/32 (the float quantizer ``none``), or ``none`` (the
    float quantizer, 32 bits)."""

    name = "1-8|none"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value == "none":
            b = value
        else:
            try:
                b = int(value)
            except ValueError:
                self.fail(f"{value!r} is neither an integer in 1..8 nor 'none'.", param, ctx)
        if b != "none" and not (1 <= b <= 8 or b in (16, 32)):
            self.fail(f"{b} is not in 1..8 (or 16/32 for --quantizer none).", param, ctx)
        return b


class SectionedCommand(click.Command):
    """A command whose ``--help`` lists its options in sections (click has no option
    groups): ``sections`` maps each parameter name to its section's title; sections come
    in the order of ``section_order`` (then the others, then "Other options")."""

    def __init__(self, *args, sections: dict[str, str] | None = None,
                 section_order: tuple[str, ...] = (), **kwargs):  # fmt: skip
        super().__init__(*args, **kwargs)
        self.sections = dict(sections or {})
        self.section_order = tuple(section_order)

    def format_options(self, ctx, formatter):
        groups: dict[str, list[tuple[str, str]]] = {}
        help_option = self.get_help_option(ctx)
        for p in self.get_params(ctx):
            rec = p.get_help_record(ctx) if isinstance(p, click.Option) else None
            if rec is not None:
                name = "help" if p is help_option else p.name
                groups.setdefault(self.sections.get(name, "Other options"), []).append(rec)
        order = [*self.section_order, *sorted(set(groups) - set(self.section_order))]
        if "Other options" in order:  # last
            order.remove("Other options")
            order.append("Other options")
        for title in order:
            if groups.get(title):
                with formatter.section(title):
                    formatter.write_dl(groups[title])


class AlsoSpelled(click.Option):
    """An option whose help shows another flag beside its own (``-m, --features``): a hidden
    option of the same meaning, merged by the command (see ``rfcli train``'s -m)."""

    def __init__(self, *args, also: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.also = also

    def get_help_record(self, ctx):
        rec = super().get_help_record(ctx)
        if rec is None:
            return rec
        return rec[0].replace(self.opts[0], f"{self.opts[0]}, {self.also}", 1), rec[1]


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


overwrite_option = click.option(
    "--overwrite", is_flag=True, help="Replace the output if it exists."
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object on stdout."
)


def nan_option(f):
    """--on-nan for commands that read raw input (predict, evaluate)."""
    from rfcli.io.settings import NAN_POLICIES

    return click.option(
        "--on-nan",
        type=click.Choice(NAN_POLICIES),
        default="error",
        show_default=True,
        help="Raw input rows with NaN/inf features: fail, drop them, or set those values to 0.",
    )(f)


def check_model_and_data(model: str, data: str, usage: str) -> None:
    """Refuse MODEL and data given the other way round (``rfcli evaluate STORE MODEL``),
    before either is opened: in one line that says so."""
    from rfcli.errors import UsageError
    from rfcli.io.kinds import kind_of

    if (
        kind_of(model) in ("store", "parquet", "parquet-dir", "zarr", "text")
        and kind_of(data) == "model"
    ):
        raise UsageError(
            f"the arguments are the other way round: {data} is the model file and {model} the "
            f"data (rfcli {usage})"
        )


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


#: the GP kernels (encode --gp-kernel with --kernel glf, train --model gpr --gp-kernel)
GP_KERNELS = ("gaussian", "matern12", "matern32", "matern52")


def gp_kernel_option(help: str):
    """--gp-kernel (encode, train)."""
    return click.option(
        "--gp-kernel",
        type=click.Choice(GP_KERNELS),
        default="gaussian",
        show_default=True,
        help=help,
    )


def glf_quadrature_options(f):
    """--lengthscale-bounds, --kernel-tol, --nodes, --cutoff: the Gauss-Legendre quadrature
    (encode, train)."""
    f = click.option(
        "--cutoff",
        type=NumberList(float, lambda v: 0 < v < math.inf, "positive numbers"),
        help="GLF: truncation L per dimension.",
    )(f)
    f = click.option(
        "--nodes",
        type=NumberList(int, lambda v: v >= 2 and v % 2 == 0, "even integers >= 2"),
        help="GLF: Gauss-Legendre nodes per dimension (even), e.g. 64,64.",
    )(f)
    f = click.option(
        "--kernel-tol",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=1e-3,
        show_default=True,
        help="GLF: the kernel error the quadrature must meet (at the optimum for train, in "
        "units of the signal variance).",
    )(f)
    return click.option(
        "--lengthscale-bounds",
        type=Pair(),
        default=None,
        help="GP lengthscale range LO,HI (standardized inputs).  train --model gpr: default "
        "from the data (nearest-neighbour spacing of a row sample to 3x its extent; the "
        "quadrature follows the lengthscales reached); encode --kernel glf: the range the "
        "nodes serve (default 0.05,2).",
    )(f)


#: CLI names of the map-family options, as make_map() takes them (see MAP_OPTIONS)
MAP_FAMILY_OPTIONS = ("target", "sparsity", "hyperbolic", "depth", "m0", "m1", "m_cs", "modified")


def map_family_options(f):
    """Options of the ternary/activation, positive, NTK and arc-cosine maps (encode)."""
    from rfcli.maps import TARGET_NAMES

    opts = [
        click.option(
            "--target",
            type=click.Choice(list(TARGET_NAMES)),
            default="relu",
            show_default=True,
            help="ternary/activation: the activation whose random-feature kernel is matched.",
        ),
        click.option(
            "--sparsity",
            type=click.FloatRange(0, 1, max_open=True),
            default=0.0,
            show_default=True,
            help="ternary: fraction eps of zero weights, in [0, 1).",
        ),
        click.option(
            "--hyperbolic", is_flag=True, help="positive: use each draw as +omega and -omega."
        ),
        click.option(
            "--depth",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="ntk: hidden layers L.",
        ),
        click.option(
            "--m0",
            type=click.IntRange(min=1),
            help="ntk: order-0 features per layer (default m/2).",
        ),
        click.option(
            "--m1",
            type=click.IntRange(min=1),
            help="ntk: order-1 features per layer (default m/2).",
        ),
        click.option(
            "--m-cs",
            "m_cs",
            type=click.IntRange(min=1),
            help="ntk: TensorSketch size (default m - m1).",
        ),
        click.option(
            "--modified",
            is_flag=True,
            help="ntk, arccos1: importance-sampled order-1 features (lower variance).",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def given(ctx: click.Context, name: str) -> bool:
    """Whether the option ``name`` was given (on the command line or in the environment),
    not left at its default."""
    from click.core import ParameterSource

    src = ctx.get_parameter_source(name)
    return src in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


#: ``ctx.meta`` key: the options given in an old spelling (name -> the flag typed)
_SPELLED = "rfcli.spelled"


def flag_of(ctx: click.Context, name: str) -> str:
    """The option's flags (``-m/--features``) for messages; the old spelling when that is
    what was typed (:func:`take_deprecated`)."""
    spelled = ctx.meta.get(_SPELLED, {})
    if name in spelled:
        return spelled[name]
    for p in ctx.command.params:
        if p.name == name:
            return "/".join(p.opts)
    return "--" + name.replace("_", "-")


def _long_flag(ctx: click.Context, name: str) -> str:
    p = next(p for p in ctx.command.params if p.name == name)
    return next((o for o in p.opts if o.startswith("--")), p.opts[0])


def deprecated_alias(old_flag: str, name: str, **kw):
    """A hidden option: the old spelling ``old_flag`` of another option, kept for one release
    (the command moves its value with :func:`take_deprecated`)."""
    return click.option(old_flag, name, hidden=True, default=None, **kw)


def deprecation_note(old: str, new: str) -> str:
    return f"note: {old} is deprecated, use {new} (the old spelling goes in the next release)"


def respell(ctx: click.Context, opts: dict, old: str, new: str, value, old_flag: str,
            deprecated: bool = True) -> str:  # fmt: skip
    """``old_flag`` (the parameter ``old``) was given meaning the option ``new``: its value
    moves there (refused when ``new`` is given too), ``new`` counts as given, and messages
    name ``old_flag``.  Returns the deprecation note (``deprecated``: an old spelling, else
    another spelling of the same option)."""
    from rfcli.errors import UsageError

    new_flag = _long_flag(ctx, new)
    if given(ctx, new):
        what = "is the old spelling of" if deprecated else "is the same option as"
        raise UsageError(f"{old_flag} {what} {new_flag}: give only {new_flag}")
    opts[new] = value
    ctx.set_parameter_source(new, ctx.get_parameter_source(old))
    ctx.meta.setdefault(_SPELLED, {})[new] = old_flag
    return deprecation_note(old_flag, new_flag)


def take_deprecated(ctx: click.Context, opts: dict, aliases: dict[str, str]) -> list[str]:
    """The old spellings (``aliases``: parameter of the hidden option -> parameter of the
    option it spells) given: their values move to the new options in ``opts``
    (:func:`respell`).  Returns the deprecation notes, to print once the options have been
    checked (so that an error stays one line)."""
    notes = []
    for old, new in aliases.items():
        value = opts.pop(old, None)
        if given(ctx, old):
            notes.append(respell(ctx, opts, old, new, value, _long_flag(ctx, old)))
    return notes


def check_scope(ctx: click.Context, names, applies: bool, where: str) -> None:
    """Options among ``names`` given on the command line (or in the environment) where they
    do not apply (``applies`` false) are refused in one line: ``{flag} applies to {where}``
    (never silently ignored)."""
    from rfcli.errors import UsageError

    if applies:
        return
    for n in names:
        if given(ctx, n):
            raise UsageError(f"{flag_of(ctx, n)} applies to {where}")


#: kernels with a bandwidth (--gamma)
BANDWIDTH_KERNELS = ("gaussian", "laplacian", "matern12", "matern32", "matern52", "positive")


def check_bandwidth(ctx: click.Context, kernel: str) -> None:
    """``--gamma`` for a kernel without a bandwidth (encode, sweep)."""
    kernels = ", ".join(BANDWIDTH_KERNELS)
    where = f"the kernels with a bandwidth ({kernels}), not {kernel}"
    check_scope(ctx, ["gamma"], kernel in BANDWIDTH_KERNELS, where)


def check_overwrite(ctx: click.Context, output: str) -> None:
    """``--overwrite`` with ``-o -``: stdout is not a file to replace."""
    check_scope(ctx, ["overwrite"], output != "-", "an output file, not stdout (-o -)")


def check_raw_input(ctx: click.Context, data: str) -> None:
    """``--on-nan`` (an option of raw input) given with a store (encoded rows, no NaN)."""
    from rfcli.io import location

    if given(ctx, "on_nan"):  # else nothing to check: no look at the input
        check_scope(ctx, ["on_nan"], not location.is_store(data),
                    "raw input, not a store (its rows are encoded already)")  # fmt: skip


def check_family_options(ctx: click.Context, kernel: str) -> None:
    """A map option given on the command line for a kernel that does not take it is an
    error, not silently ignored."""
    from click.core import ParameterSource

    from rfcli.errors import UsageError
    from rfcli.maps import MAP_OPTIONS

    for name in MAP_FAMILY_OPTIONS:
        src = ctx.get_parameter_source(name)
        if src in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            if name not in MAP_OPTIONS.get(kernel, ()):
                takers = [k for k, names in MAP_OPTIONS.items() if name in names]
                flag = "--" + name.replace("_", "-")
                raise UsageError(f"{flag} applies to --kernel {'/'.join(takers)}, not {kernel}")


def engine_options(f):
    """--engine, --scheduler, --workers (encode, train, predict, evaluate)."""
    f = click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=2,
        show_default=True,
        help="--engine dask without --scheduler: worker processes of a local cluster.",
    )(f)
    f = click.option(
        "--scheduler",
        envvar="DASK_SCHEDULER_ADDRESS",
        help="--engine dask: address of a running scheduler (tcp://host:8786; default "
        "$DASK_SCHEDULER_ADDRESS, else a local cluster).",
    )(f)
    return click.option(
        "--engine",
        type=click.Choice(["local", "dask"]),
        default="local",
        show_default=True,
        help="Run here (threads) or on a Dask cluster (pip install 'rfcli[dask]').",
    )(f)


def dask_settings(engine: str, scheduler: str | None, workers: int):
    """The Dask settings of ``--engine dask``; ``--scheduler`` (typed, not from
    $DASK_SCHEDULER_ADDRESS) or ``--workers`` with the local engine, and ``--workers`` with a
    scheduler (whose cluster has its own workers), are refused."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        typed = ctx.get_parameter_source("scheduler") == ParameterSource.COMMANDLINE
        if typed and engine != "dask":
            check_scope(ctx, ["scheduler"], False, "--engine dask")
        check_scope(ctx, ["workers"], engine == "dask", "--engine dask")
        check_scope(ctx, ["workers"], scheduler is None,
                    "the local cluster started without --scheduler")  # fmt: skip
    if engine != "dask":
        return None
    from rfcli.engines.dask import DaskSettings

    return DaskSettings(scheduler=scheduler, workers=workers)
