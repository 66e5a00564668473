"""One calling convention for the jobs (rfcli/jobs/resources.py, docs/python.md): data and
settings positional, everything else keyword-only, the resources the same keywords with
the same defaults on every job; ``--threads`` on every command that computes."""

from __future__ import annotations

import inspect
import re

import pytest
from click.testing import CliRunner

import rfcli
from rfcli.cli import COMMANDS, cli

#: job -> its positional parameters (data, then settings)
JOBS = {
    "encode": ["input_path", "output", "settings", "read"],
    "fit_encoder": ["input_path", "settings", "read"],
    "train": ["store_path", "output", "settings", "read"],
    "train_gpr": ["input_path", "output", "settings", "read"],
    "predict": ["model_path", "input_path", "output"],
    "evaluate": ["model_path", "test_path"],
    "decode": ["store_path", "output"],
    "sweep": ["train_path", "test_path"],
}
RESOURCES = {"threads": None, "memory": None, "engine": "local", "dask": None}
#: jobs that run here only (no engine)
LOCAL_ONLY = {"decode": ("threads", "memory")}


@pytest.mark.parametrize("name", sorted(JOBS))
def test_the_job_follows_the_convention(name):
    params = inspect.signature(getattr(rfcli, name)).parameters
    positional = [p.name for p in params.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == JOBS[name]
    others = [p for p in params.values() if p.kind is not p.POSITIONAL_OR_KEYWORD]
    assert all(p.kind is p.KEYWORD_ONLY for p in others), name
    wanted = LOCAL_ONLY.get(name, tuple(RESOURCES))
    for r in wanted:
        assert r in params and params[r].default == RESOURCES[r], (name, r)
    assert "progress" in params and params["progress"].default is None
    # the settings hold modelling choices only: no resource is a settings field
    for cls in (rfcli.TrainSettings, rfcli.GPRSettings, rfcli.EncodeSettings):
        assert not set(RESOURCES) & set(cls.__dataclass_fields__), cls


@pytest.mark.parametrize("name", sorted(JOBS))
def test_a_bad_resource_is_refused_by_name(name):
    job = getattr(rfcli, name)
    args = ["x"] * len([p for p in JOBS[name] if p in ("input_path", "store_path", "model_path",
                                                        "test_path", "train_path")])  # fmt: skip
    with pytest.raises(rfcli.RfcliError, match="threads must be >= 1"):
        job(*args, **({"output": "o"} if "output" in JOBS[name] and len(args) < 2 else {}),
            threads=0, **({"bits": [2], "features": [8], "quantizers": ["lm"],
                           "encode_settings": None, "read": None, "train_settings": None}
                          if name == "sweep" else {}))  # fmt: skip


#: the commands that compute nothing (a command added to rfcli.cli.COMMANDS computes, and
#: takes --threads, unless it is listed here)
NOT_COMPUTING = {"inspect"}


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - NOT_COMPUTING))
def test_every_computing_command_takes_threads(command):
    r = CliRunner().invoke(cli, [command, "--help"])
    assert r.exit_code == 0, r.output
    # listed among the options (a line of its own), not only named in the help text
    assert re.search(r"^\s+--threads INTEGER", r.output, re.M), command


def test_the_commands_that_compute_are_most_of_them():
    assert NOT_COMPUTING < set(COMMANDS)
    assert {"encode", "fit-quantizer", "train", "predict", "evaluate", "decode", "sweep"} <= (
        set(COMMANDS) - NOT_COMPUTING
    )


@pytest.mark.parametrize("name", sorted(JOBS))
def test_the_job_documents_parameters_returns_and_raises(name):
    doc = inspect.getdoc(getattr(rfcli, name))
    for section in ("Parameters", "Returns", "Raises"):
        assert f"{section}\n{'-' * len(section)}" in doc, (name, section)
    params = inspect.signature(getattr(rfcli, name)).parameters
    documented = doc.split("Parameters\n----------", 1)[1].split("Returns\n-------", 1)[0]
    for p in params:
        assert p in documented, (name, p)
