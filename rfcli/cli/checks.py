"""Checks of the command line before any work: options given where they do not apply,
arguments the other way round; each refused in one line that names the flags."""

from __future__ import annotations

import click

from rfcli.cli.spelling import flag_of, given
from rfcli.names import BANDWIDTH_KERNELS


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


#: CLI names of the map-family options, as make_map() takes them (see MAP_OPTIONS)
MAP_FAMILY_OPTIONS = ("target", "sparsity", "hyperbolic", "depth", "m0", "m1", "m_cs", "modified")


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


def check_bandwidth(ctx: click.Context, kernel: str) -> None:
    """``--gamma`` for a kernel without a bandwidth (encode, sweep)."""
    kernels = ", ".join(BANDWIDTH_KERNELS)
    where = f"the kernels with a bandwidth ({kernels}), not {kernel}"
    check_scope(ctx, ["gamma"], kernel in BANDWIDTH_KERNELS, where)


def check_overwrite(ctx: click.Context, output: str) -> None:
    """``--overwrite`` with ``-o -``: stdout is not a file to replace."""
    check_scope(ctx, ["overwrite"], output != "-", "an output file, not stdout (-o -)")


def check_raw_input(ctx: click.Context, data: str, names=("on_nan",)) -> None:
    """``--on-nan`` (and the other options of raw input among ``names``, e.g.
    ``--delimiter``) given with a store (encoded rows, no NaN)."""
    from rfcli.io import location

    if any(given(ctx, n) for n in names):  # else nothing to check: no look at the input
        check_scope(ctx, names, not location.is_store(data),
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
