"""What the command line was given, and how it was spelled: options given (not left at
their default), the flags to name in messages, and the old or other spellings of options
(kept one release, their values moved to the new options)."""

from __future__ import annotations

import click


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
            return "/".join([*p.opts, *getattr(p, "secondary_opts", [])])
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
