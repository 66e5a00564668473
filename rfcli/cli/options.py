"""Shared click options of the commands (option groups, the sectioned help) and turning
options into settings; parameter types are in :mod:`rfcli.cli.types`, the checks in
:mod:`rfcli.cli.checks`."""

from __future__ import annotations

import math

import click

from rfcli.cli.checks import check_scope
from rfcli.cli.types import NumberList, Pair
from rfcli.names import GP_KERNELS, TARGET_NAMES


def settings_from(cls, opts: dict, options: dict[str, str] | None = None,
                  flags: dict[str, str] | None = None, **given):  # fmt: skip
    """A settings dataclass from the click options named like its fields, with ``given``
    for the fields whose option has another name or needs converting, validated (its
    ``validate``: rfcli.constraints) with messages that name the flags: ``options`` maps a
    field to its option's name where they differ (``n_features`` -> ``features``), ``flags``
    a field to the words naming it where its flag is not enough."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(cls)}
    settings = cls(**{k: v for k, v in opts.items() if k in names and k not in given}, **given)
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return settings.validate()
    return settings.validate({**flag_names(ctx, names, options or {}), **(flags or {})})


def flag_names(ctx: click.Context, fields, options: dict[str, str]) -> dict[str, str]:
    """The flag of each field that has an option (``options``: field -> option name where
    they differ), as messages name it (:func:`rfcli.cli.spelling.flag_of`)."""
    from rfcli.cli.spelling import flag_of

    params = {p.name for p in ctx.command.params}
    out = {}
    for f in fields:
        name = options.get(f, f)
        if name in params:
            out[f] = flag_of(ctx, name)
    return out


def flatten(values) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for v in values:
        out.extend(v)
    return out


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


def _delimiter(ctx, param, value):
    from rfcli.io.settings import check_delimiter

    try:
        return check_delimiter(value)
    except ValueError as e:
        raise click.BadParameter(str(e).replace("delimiter ", "", 1), ctx, param) from None


def delimiter_option(f):
    """--delimiter for commands that read CSV input (encode, predict, evaluate, train)."""
    return click.option(
        "--delimiter",
        callback=_delimiter,
        metavar="CHAR",
        help="CSV input: the field delimiter, one character or 'tab' (default: a tab for "
        ".tsv/.tab names, else a comma).",
    )(f)


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


def map_family_options(f):
    """Options of the ternary/activation, positive, NTK and arc-cosine maps (encode)."""
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


#: the help of --threads (every command that computes)
THREADS_HELP = (
    "Cores to use: worker threads, one BLAS thread each (default: the available "
    "cores, at most 8); results do not depend on it."
)


def threads_option(f):
    """--threads: the local engine's worker threads (rfcli.jobs.resources)."""
    return click.option("--threads", type=click.IntRange(min=1), default=None,
                        help=THREADS_HELP)(f)  # fmt: skip


def check_threads(ctx: click.Context, engine: str) -> None:
    """--threads is the local engine's: refused with --engine dask (a Dask worker computes
    on one thread per task)."""
    check_scope(ctx, ["threads"], engine == "local",
                "the local engine (a Dask worker computes on one thread per task)")  # fmt: skip


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
