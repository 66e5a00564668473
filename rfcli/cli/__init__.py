"""The ``rfcli`` command line: a thin click layer over the library.

Library errors become one-line messages with exit status 2 (usage/input), 1 (internal)
or 130 (interrupted by Ctrl-C or SIGTERM); ``--debug`` shows tracebacks.
"""

from __future__ import annotations

import sys

import click

from rfcli._version import __version__
from rfcli.cli.console import UI
from rfcli.errors import RfcliError, first_line

#: every command: its module (imported only when the command runs, or for its own --help,
#: so that ``rfcli --help``, ``--version`` and usage errors return at once) and the one-line
#: help the group's --help lists (tests/cli/test_startup.py checks it against the command)
COMMANDS = {
    "decode": ("rfcli.cli.decode", "Write a store's decoded features for other tools."),
    "encode": ("rfcli.cli.encode", "Encode INPUT (a Parquet file, directory or glob of Parquet "
               "files, CSV, Zarr; '-' = CSV on stdin) into a bit-packed feature store."),
    "evaluate": ("rfcli.cli.evaluate", "Metrics of MODEL on TEST (a store or raw data with the "
                 "training label column), or with --kernel-error the kernel-approximation "
                 "errors of STORE (docs/methods.md, evaluation metrics)."),
    "fit-quantizer": ("rfcli.cli.fit_quantizer", "Design a b-bit quantizer and write it as JSON."),
    "inspect": ("rfcli.cli.inspect", "Show a store's shape, map, quantizer, size on disk and "
                "completeness, or a model file's kind, classes, map and quantizer and the "
                "report of its training."),
    "predict": ("rfcli.cli.predict", "Predict with MODEL on INPUT: a store encoded with the "
                "model's map, or raw data (encoded on the fly with the model's map and "
                "quantizer)."),
    "sweep": ("rfcli.cli.sweep", "Accuracy (or MSE) against bits per sample: encode, train and "
              "evaluate TRAIN/TEST for every combination of --features, --quantizer and --bits "
              "('none' = float32, once per m)."),
    "train": ("rfcli.cli.train", "Train a linear SVM or kernel ridge regression on a feature "
              "store, out of core, or a Gaussian-process regression on a store or on raw data."),
}  # fmt: skip


def _set_flag(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``-q``/``--debug`` given after the command: the same as before it."""
    ui = ctx.find_root().obj
    if value and ui is not None:
        setattr(ui, param.name, True)


def _global_options() -> list[click.Option]:
    """``-q/--quiet`` and ``--debug`` for every command, so that they work after the
    command's name as well as before it (``rfcli encode ... -q``)."""
    return [
        click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, callback=_set_flag,
                     help="No progress or diagnostics on stderr."),
        click.Option(["--debug"], is_flag=True, expose_value=False, callback=_set_flag,
                     help="Show Python tracebacks for internal errors."),
    ]  # fmt: skip


def _env_names(cmd_name: str, cmd: click.Command) -> None:
    """Every option can come from ``RFCLI_<COMMAND>_<LONG_OPTION>`` (``RFCLI_ENCODE_FORMAT``
    for ``--format``); click's own name, from the Python parameter (``RFCLI_ENCODE_FMT``),
    still works after it.  Options with their own variable (``--scheduler``) keep it."""
    prefix = "RFCLI_" + cmd_name.upper().replace("-", "_")
    for p in cmd.params:
        if not isinstance(p, click.Option) or p.envvar or not p.name:
            continue
        longs = [o for o in p.opts if o.startswith("--")]
        names = [f"{prefix}_{longs[0][2:].upper().replace('-', '_')}"] if longs else []
        names.append(f"{prefix}_{p.name.upper()}")
        p.envvar = list(dict.fromkeys(names))


class RfcliGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMANDS:
            import importlib

            importlib.import_module(COMMANDS[name][0])  # registers itself with @cli.command
        cmd = self.commands.get(name)
        if cmd is not None and not getattr(cmd, "_rfcli_ready", False):
            have = {o for p in cmd.params for o in getattr(p, "opts", ())}
            cmd.params.extend(o for o in _global_options() if not set(o.opts) & have)
            _env_names(name, cmd)
            cmd._rfcli_ready = True
        return cmd

    def format_commands(self, ctx, formatter):
        """The command list from :data:`COMMANDS`, without importing any command."""
        from click.utils import make_default_short_help

        limit = formatter.width - 6 - max(map(len, COMMANDS))
        names = self.list_commands(ctx)
        rows = [(n, make_default_short_help(COMMANDS[n][1], limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, *args, **kwargs):
        """Click's main, with usage errors as the documented single line
        ``rfcli: error: ...`` (exit status 2) instead of click's Usage/Try/Error block."""
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.ClickException as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # bare `rfcli`: the help, as click shows it
                e.show()
            else:
                click.echo(f"rfcli: error: {_usage_message(e)}", err=True)
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("rfcli: interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.ClickException, click.exceptions.Abort):
            raise
        except RfcliError as e:
            _fail(ctx, f"rfcli: error: {cli_message(ctx, e)}", e.exit_code)
        except MemoryError as e:
            if _debug(ctx):
                raise
            why = f" ({first_line(e)})" if str(e) else ""
            _fail(
                ctx,
                f"rfcli: error: out of memory{why}; use fewer features (-m) or a smaller "
                "--chunk-rows, or set a budget with --memory so that rfcli checks it first",
                2,
            )
        except KeyboardInterrupt:
            _fail(ctx, "rfcli: interrupted; partial outputs were removed", 130)
        except BrokenPipeError:
            sys.stderr.close()
            ctx.exit(141)
        except OSError as e:
            msg = _os_error_message(e)
            if msg is None or _debug(ctx):
                raise
            _fail(ctx, f"rfcli: error: {msg}", 2)
        except Exception as e:
            if _debug(ctx):
                raise
            if _is_storage_error(e):  # credentials, endpoint, network of a URL's backend
                _fail(ctx, f"rfcli: error: object storage: {type(e).__name__}: {first_line(e)}", 2)
            _fail(
                ctx,
                f"rfcli: internal error: {type(e).__name__}: {first_line(e)} "
                "(run with --debug for the traceback)",
                1,
            )


def _usage_message(e: click.exceptions.ClickException) -> str:
    """click's message; for a bad value that came from the environment, it names the
    variable (click names only the option)."""
    import os

    # one line: click lists a choice option's values one per line ("Choose from:\n\tsvm,")
    msg = " ".join(e.format_message().split())
    param, ctx = getattr(e, "param", None), getattr(e, "ctx", None)
    if isinstance(e, click.BadParameter) and param is not None and ctx is not None:
        from click.core import ParameterSource

        if param.name and ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT:
            names = param.envvar if isinstance(param.envvar, list | tuple) else [param.envvar]
            if getattr(param, "allow_from_autoenv", False) and ctx.auto_envvar_prefix:
                names = [*names, f"{ctx.auto_envvar_prefix}_{param.name.upper()}"]
            var = next((n for n in names if n and os.environ.get(n)), None)
            if var:
                msg = f"{msg.rstrip('.')} (from the environment variable {var})"
    return msg


#: library messages name the Python parameters; on the command line the same hints name
#: the flags: (phrase, replacement, parameter the command must have; else the fallback)
CLI_PHRASES = [
    ("(set overwrite to replace it)", "(add --overwrite to replace it)", "overwrite", None),
    ("(set on_nan to drop or zero)", "(use --on-nan drop or zero)", "on_nan",
     "(fix or remove those rows)"),
    ("use on_nan error or zero", "use --on-nan error or zero", "on_nan", None),
    ("(choose them with columns)", "(choose them with --columns)", "columns", None),
    ("; or give the format, fmt)", "; or give --format)", "fmt", ")"),
    (" or give the format, fmt)", " or give --format)", "fmt", ")"),
    ("raise memory or lower n_features or threads", "raise --memory or lower -m or --threads",
     "memory", None),
    ("use a store with fewer features or raise memory",
     "use a store with fewer features or raise --memory", "memory", None),
    ("lower n_features (or threads), or set memory to allow more",
     "use a smaller -m (or fewer --threads), or raise --memory to allow more", "memory", None),
    ("raise memory, loosen tol, give narrower lengthscale_bounds, or set nodes/cutoff by hand",
     "raise --memory, loosen --kernel-tol, give narrower --lengthscale-bounds, or set --nodes/"
     "--cutoff by hand", "memory", None),
    ("add normalize_rows or standardize", "add --normalize-rows or --standardize",
     "normalize_rows", None),
    ("(give a numeric gamma)", "(give a numeric --gamma)", "gamma", None),
    ("use random Fourier features (features='rff')", "use random Fourier features "
     "(--gp-features rff)", "gp_features", None),
    ("use fewer cv_folds or give the value (C / alpha)", "use fewer --cv-folds or give the "
     "value (-C / --alpha)", "cv_folds", None),
    ("use a larger alpha", "use a larger --alpha", "alpha", None),
    ("use quantizer empirical", "use --quantizer empirical", "quantizer", None),
    ("raise memory or lower threads", "raise --memory or lower --threads", "memory", None),
    ("lower row_bytes or raise memory", "lower --row-bytes or raise --memory", "row_bytes",
     None),
    ("(standardize or normalize_rows) or lower gamma", "(--standardize or --normalize-rows) "
     "or lower --gamma", "gamma", None),
    ("(or drop the plot)", "(or drop --plot)", "plot_path", None),
    ("use model krr", "use --model krr", "model", None),
    ("(or task classification", "(or --task classification", "task", None),
    ("or choose the feature columns with columns)", "or choose the feature columns with "
     "--columns)", "columns", "or leave the column out)"),
    ("set delimiter='\\t'", "use --delimiter tab", "delimiter", "convert it to commas"),
    ("set delimiter=';'", "use --delimiter ';'", "delimiter", "convert it to commas"),
    ("set delimiter='|'", "use --delimiter '|'", "delimiter", "convert it to commas"),
    ("delimiter applies to CSV input", "--delimiter applies to CSV input", "delimiter", None),
    ("or without resume to start over", "or without --resume to start over", "resume", None),
    ("(run the same encode with resume to continue)", "(run the same command with --resume "
     "to continue)", "resume", None),
]  # fmt: skip


def cli_message(ctx: click.Context, e: BaseException) -> str:
    """An error's message with the parameter hints of :data:`CLI_PHRASES` naming this
    command's flags."""
    msg = str(e)
    sub = ctx.invoked_subcommand and ctx.command.get_command(ctx, ctx.invoked_subcommand)
    names = {p.name for p in sub.params} if sub else set()
    for phrase, flag_text, param, fallback in CLI_PHRASES:
        if phrase in msg:
            if param in names:
                msg = msg.replace(phrase, flag_text)
            elif fallback is not None:
                msg = msg.replace(phrase, fallback)
    return msg


#: packages whose exceptions mean a URL's storage could not be used (not a bug in rfcli)
_STORAGE_PACKAGES = ("botocore", "aiobotocore", "s3fs", "gcsfs", "google", "adlfs", "azure",
                     "aiohttp", "fsspec")  # fmt: skip


def _is_storage_error(e: BaseException) -> bool:
    return any((type(c).__module__ or "").split(".")[0] in _STORAGE_PACKAGES for c in _chain(e))


def _chain(e: BaseException):
    """The exception and its causes/contexts."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _os_error_message(e: OSError) -> str | None:
    """One line for the operating-system errors a user can fix (disk full, permissions)."""
    import errno

    where = f"{e.filename}: " if getattr(e, "filename", None) else ""
    if e.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(e):
        return (
            f"{where}no space left on device (the partial output was removed; free some "
            "space or write elsewhere)"
        )
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{where}{e.strerror or 'permission denied'}"
    return None


def _debug(ctx) -> bool:
    root = ctx.find_root()
    return bool(root.obj and root.obj.debug)


def _fail(ctx, msg: str, code: int):
    import logging
    import warnings

    # an interrupted or failed write may leave zarr's I/O tasks pending; asyncio would
    # report them ("Task was destroyed but it is pending!") at exit, after the one line
    # that must end stderr
    logging.getLogger("asyncio").disabled = True
    # likewise a coroutine of such a write, created but never awaited when a signal arrived,
    # is reported when it is collected at exit
    warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
    click.echo(msg, err=True)
    ctx.exit(code)


@click.group(
    cls=RfcliGroup,
    context_settings={"auto_envvar_prefix": "RFCLI", "help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, "--version", prog_name="rfcli")
@click.option("-q", "--quiet", is_flag=True, help="No progress or diagnostics on stderr.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for internal errors.")
@click.pass_context
def cli(ctx: click.Context, quiet: bool, debug: bool) -> None:
    """Kernel learning with compressed (1-8 bit) random features.

    \b
    Typical session:
      rfcli encode train.parquet --label label -b 2 -o train.rff.zarr
      rfcli encode test.parquet --like train.rff.zarr -o test.rff.zarr
      rfcli inspect train.rff.zarr
    """
    ctx.obj = UI(quiet=quiet, debug=debug)


def _terminate(signum, frame):
    raise KeyboardInterrupt  # SIGTERM: clean up / keep checkpoints as for Ctrl-C


def main() -> None:
    import signal

    from rfcli.memory import small_pages
    from rfcli.threads import sleeping_blas_pool

    small_pages()  # before NumPy's import: no huge pages for short-lived arrays
    sleeping_blas_pool()  # ... and OpenBLAS's unused pool threads do not spin
    signal.signal(signal.SIGTERM, _terminate)
    try:
        cli(prog_name="rfcli")
    except SystemExit as e:
        _exit(e.code)


def _exit(code) -> None:
    """End the process without the interpreter's teardown of every loaded module (what the
    teardown costs: docs/cli.md, "What the encode's implementation choices cost"): the
    exit handlers run (atexit, weakref finalizers) and the standard streams are
    flushed first.  With another thread still alive, or a stream that cannot be flushed
    (a closed pipe), the interpreter exits as usual."""
    import atexit
    import os
    import threading

    if threading.active_count() > 1 or not hasattr(atexit, "_run_exitfuncs"):
        raise SystemExit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr, flush=True)
        status = 1
    os._exit(status & 0xFF)
