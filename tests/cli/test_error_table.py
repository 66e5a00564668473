"""Each bad input of docs/errors.md through the real CLI (its click entry point, in a few
subprocesses that run the cases one after another): the exit status and
the one-line message must be exactly the documented ones, with no traceback.  Every error,
click's usage errors included (an option value out of its range names the flag), is one
line starting with ``rfcli: error:``."""

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.cli import error_cases
from tests.cli.error_cases import CASES
from tests.helpers import ROOT


def documented() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in open(os.path.join(ROOT, "docs", "errors.md")):
        m = re.match(r"\| (\S+) \| .* \| (\S+) \| `(.*)` \|$", line.rstrip("\n"))
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3).replace("\\|", "|"))
    return rows


DOC = documented()
#: processes the cases run in (each runs its share one after another)
BATCHES = 2


def _setup(case, tmp):
    try:
        return case.setup(tmp)
    except OSError as e:
        return e


def _unmount(tmp):
    mnt = os.path.join(tmp, "small-fs")
    if os.path.ismount(mnt):
        subprocess.run(["umount", mnt])


def _batch(jobs, tmp):
    """The CLI runs of ``jobs`` in one Python process (tests/cli/batch_cli.py)."""
    path = os.path.join(tmp, "jobs.json")
    with open(path, "w") as f:
        json.dump(jobs, f)
    out = os.path.join(tmp, "results.json")
    r = subprocess.run([sys.executable, "-m", "tests.cli.batch_cli", path, out], cwd=ROOT,
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """All cases: set up here (the shared store and model first), then run through the CLI's
    entry point in BATCHES processes at once, each running its share of the cases one
    after another (a Python start per case cost most of the table's time)."""
    error_cases.SHARED = str(tmp_path_factory.mktemp("shared"))
    try:
        error_cases._model(error_cases.SHARED)
        dirs = {c.name: str(tmp_path_factory.mktemp(c.name)) for c in CASES}
        with ThreadPoolExecutor(4) as pool:
            args = dict(zip(dirs, pool.map(_setup, CASES, dirs.values()), strict=True))
        ready = [c for c in CASES if not isinstance(args[c.name], OSError)]
        jobs = [{"args": args[c.name], "env": c.env} for c in ready]
        shares = [list(range(i, len(jobs), BATCHES)) for i in range(BATCHES)]
        tmps = [str(tmp_path_factory.mktemp(f"batch{k}")) for k in range(BATCHES)]
        with ThreadPoolExecutor(BATCHES) as pool:
            outs = list(pool.map(_batch, [[jobs[i] for i in sh] for sh in shares], tmps))
        res = {c.name: args[c.name] for c in CASES if isinstance(args[c.name], OSError)}
        for share, out in zip(shares, outs, strict=True):
            for i, r in zip(share, out, strict=True):
                c = ready[i]
                lines = r["stderr"].strip().splitlines()
                msg = error_cases.normalize(lines[-1] if lines else "", dirs[c.name])
                res[c.name] = (r["code"], msg, r["stderr"])
        for d in dirs.values():
            _unmount(d)
        yield res
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
