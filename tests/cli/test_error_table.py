"""Each bad input of docs/errors.md through the real CLI (a subprocess): the exit status and
the one-line message must be exactly the documented ones, with no traceback.  Every error,
click's usage errors included (an option value out of its range names the flag), is one
line starting with ``rfcli: error:``."""

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.cli import error_cases
from tests.cli.error_cases import CASES, run_case
from tests.helpers import ROOT


def documented() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in open(os.path.join(ROOT, "docs", "errors.md")):
        m = re.match(r"\| (\S+) \| .* \| (\S+) \| `(.*)` \|$", line.rstrip("\n"))
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3).replace("\\|", "|"))
    return rows


DOC = documented()


def _run(case, tmp):
    try:
        return run_case(case, tmp)
    except OSError as e:
        return e
    finally:
        mnt = os.path.join(tmp, "small-fs")
        if os.path.ismount(mnt):
            subprocess.run(["umount", mnt])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """All cases at once, 4 subprocesses at a time (the shared store and model first)."""
    error_cases.SHARED = str(tmp_path_factory.mktemp("shared"))
    try:
        error_cases._model(error_cases.SHARED)
        dirs = {c.name: str(tmp_path_factory.mktemp(c.name)) for c in CASES}
        with ThreadPoolExecutor(4) as pool:
            futs = {c.name: pool.submit(_run, c, dirs[c.name]) for c in CASES}
            yield {k: f.result() for k, f in futs.items()}
    finally:
        error_cases.SHARED = None


def test_every_case_is_documented():
    assert sorted(DOC) == sorted(c.name for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input_message_and_exit_status(case, results):
    res = results[case.name]
    if isinstance(res, OSError):
        pytest.skip(f"cannot set this case up here: {res}")
    code, msg, stderr = res
    assert "Traceback" not in stderr
    assert code == case.exit == int(DOC[case.name][0])
    assert msg.startswith("rfcli: error: ")
    assert stderr.strip().splitlines()[-1].startswith("rfcli: error: ")  # one line, whole
    assert "Usage:" not in stderr and "Try '" not in stderr  # no click usage block
    assert msg == DOC[case.name][1]
