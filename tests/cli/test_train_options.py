"""Every option of `rfcli train` belongs to a model; giving one of another model's options
is refused (never silently ignored)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from rfcli.cli import cli
from rfcli.cli.train import MODEL_OPTIONS

COMMON = {"input_path", "model", "output", "threads", "engine", "scheduler", "workers", "overwrite",
          "seed", "as_json", "quiet", "debug", "help"}  # fmt: skip


def _train():
    return cli.get_command(None, "train")


def _value(param: click.Parameter) -> list[str]:
    """The option on the command line with a valid value."""
    flag = param.opts[0]
    if getattr(param, "is_flag", False):
        return [flag]
    t = param.type
    if isinstance(t, click.Choice):
        return [flag, t.choices[-1]]
    if param.name in ("noise_bounds", "lengthscale_bounds"):
        return [flag, "0.1,2"]
    if param.name == "memory":
        return [flag, "1G"]
    if param.name == "nodes":
        return [flag, "32"]
    if param.name == "kernel_tol":
        return [flag, "0.01"]
    return [flag, "3"]


def test_every_option_belongs_to_a_model():
    # hidden options are old spellings of others (tests/cli/test_options.py)
    names = {p.name for p in _train().params if not getattr(p, "hidden", False)}
    owned = {n for opts in MODEL_OPTIONS.values() for n in opts}
    assert names - COMMON == owned


@pytest.mark.parametrize("model", sorted(MODEL_OPTIONS))
def test_other_models_options_are_refused(model):
    params = {p.name: p for p in _train().params}
    others = {n for opts in MODEL_OPTIONS.values() for n in opts} - set(MODEL_OPTIONS[model])
    assert others
    for name in sorted(others):
        if params[name].hidden or (model, name) == ("gpr", "tol"):
            continue  # old spellings: --tol with gpr is --kernel-tol for a release (test_options)
        args = ["train", "no-such.zarr", "--model", model, "-o", "m.npz", *_value(params[name])]
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2, (name, r.output)
        assert "is for" in r.output and f"not --model {model}" in r.output, (name, r.output)
