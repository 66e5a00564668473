"""Start-up: ``rfcli --help``, ``--version`` and usage errors import no numeric library;
the group's command list (written out for that) matches the commands themselves."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rfcli.cli import COMMANDS, cli

HEAVY = ("numpy", "scipy", "pyarrow", "zarr", "rich", "dask", "fsspec")


def _modules_after(*args: str) -> set[str]:
    """The heavy packages imported by ``rfcli ARGS`` (run in a fresh interpreter)."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(m for m in "
        f"{HEAVY!r} if m in sys.modules)) + '\\n'))\n"
        f"sys.argv = ['rfcli', *{list(args)!r}]\n"
        "from rfcli.cli import main\n"
        "main()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    line = [x for x in r.stderr.splitlines() if x.startswith("MODULES")][-1]
    return set(line.split()[1:])


@pytest.mark.parametrize(
    "args", [("--version",), ("--help",), (), ("bogus",), ("train", "--bogus"), ("train", "-h")]
)
def test_fast_paths_import_no_numeric_library(args):
    assert _modules_after(*args) == set()


def test_a_command_imports_what_it_uses():  # the check above can see an import
    assert "numpy" in _modules_after("encode", "--bogus")


def test_command_list_matches_the_commands():
    for name, (_, short_help) in COMMANDS.items():
        cmd = cli.get_command(None, name)
        assert cmd is not None and cmd.name == name
        assert cmd.get_short_help_str(limit=1000) == short_help
    assert sorted(cli.list_commands(None)) == sorted(COMMANDS)


def test_sweep_models_are_the_train_models():
    from rfcli.jobs.train import MODELS

    sweep = cli.get_command(None, "sweep")
    (opt,) = [p for p in sweep.params if p.name == "model"]
    assert tuple(opt.type.choices) == MODELS
