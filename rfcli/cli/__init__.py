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
                "completeness."),
    "predict": ("rfcli.cli.predict", "Predict with MODEL on INPUT: a store encoded with the "
                "model's map, or raw data (encoded on the fly with the model's map and "
                "quantizer)."),
    "sweep": ("rfcli.cli.sweep", "Accuracy (or MSE) against bits per sample: encode, train and "
              "evaluate TRAIN/TEST for every combination of --features, --quantizer and --bits "
              "('none' = float32, once per m)."),
    "train": ("rfcli.cli.train", "Train a linear SVM or kernel ridge regression on a feature "
              "store, out of core, or a Gaussian-process regression on a store or on raw data."),
}  # fmt: skip


class RfcliGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMANDS:
            import importlib

            importlib.import_module(COMMANDS[name][0])  # registers itself with @cli.command
        return self.commands.get(name)

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
                click.echo(f"rfcli: error: {e.format_message()}", err=True)
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
            _fail(ctx, f"rfcli: error: {e}", e.exit_code)
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

    signal.signal(signal.SIGTERM, _terminate)
    cli(prog_name="rfcli")
