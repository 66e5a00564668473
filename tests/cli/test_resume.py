"""Crash safety: kill a real `rfcli encode` (SIGKILL, SIGINT, SIGTERM) at points spread over
the run, continue with --resume, and compare every file with an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.helpers import tree_digest, write_parquet

N_ROWS, STORE_CHUNK = 24_000, 400


@pytest.fixture(scope="module")
def big_input(tmp_path_factory):
    d = tmp_path_factory.mktemp("resume")
    rng = np.random.default_rng(0)
    cols = {f"f{j}": rng.normal(size=N_ROWS) for j in range(16)}
    cols["label"] = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, N_ROWS)]
    return write_parquet(d / "big.parquet", **cols)


def encode_args(src, out, *extra):
    return [
        sys.executable, "-m", "rfcli", "encode", str(src), "-o", str(out),
        "--label", "label", "-m", "512", "-b", "2", "--standardize", "--threads", "1",
        "--chunk-rows", "300", "--store-chunk-rows", str(STORE_CHUNK), *extra,
    ]  # fmt: skip


def committed(out) -> int:
    try:
        with open(os.path.join(f"{out}.partial", "zarr.json")) as f:
            return int(json.load(f)["attributes"]["rfcli"].get("rows_committed") or 0)
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_until(args, out, rows, sig):
    """Start the encode, send ``sig`` once ``rows`` rows are committed; its result."""
    # a test run started in the background (SIGINT ignored, which children inherit) still
    # gives the encode Python's Ctrl-C handler
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_default_sigint)  # fmt: skip
    while p.poll() is None and committed(out) < rows:
        time.sleep(0.002)
    if p.poll() is None:
        p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=120)
    return p.returncode, stderr


@pytest.fixture(scope="module")
def reference(big_input, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "ref.zarr"
    r = subprocess.run(encode_args(big_input, out), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return tree_digest(out)


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_sigkill_then_resume_is_byte_identical(big_input, reference, tmp_path, fraction):
    out = tmp_path / "s.zarr"
    code, _ = run_until(encode_args(big_input, out), out, int(fraction * N_ROWS), signal.SIGKILL)
    assert code == -signal.SIGKILL, "the encode finished before it could be killed"
    kept = committed(out)
    assert 0 < kept < N_ROWS and kept % STORE_CHUNK == 0
    r = subprocess.run(encode_args(big_input, out, "--resume"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(f"{out}.partial")
    assert tree_digest(out) == reference


def test_resume_drops_the_temporary_file_of_a_write_cut_short(big_input, reference, tmp_path):
    """zarr writes ``<name>.<uuid>.partial`` and renames it; a kill between the two leaves
    it behind (seen under load), and the resumed store must not carry it."""
    out = tmp_path / "s.zarr"
    code, _ = run_until(encode_args(big_input, out), out, N_ROWS // 2, signal.SIGKILL)
    assert code == -signal.SIGKILL, "the encode finished before it could be killed"
    stray = os.path.join(f"{out}.partial", "codes", "zarr." + "0123456789abcdef" * 2 + ".partial")
    with open(stray, "w") as f:
        f.write("{")
    r = subprocess.run(encode_args(big_input, out, "--resume"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert tree_digest(out) == reference


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_checkpoint_and_says_so(big_input, reference, tmp_path, sig):
    out = tmp_path / "s.zarr"
    for _ in range(3):  # on a loaded machine the (fast) encode may finish before the signal
        code, stderr = run_until(encode_args(big_input, out, "--overwrite"), out,
                                 N_ROWS // 8, sig)  # fmt: skip
        if code != 0:
            break
    assert code == 130, stderr
    last = stderr.strip().splitlines()[-1]
    assert "interrupted" in last and "--resume" in last and ".partial" in last
    assert "Traceback" not in stderr
    r = subprocess.run(encode_args(big_input, out, "--resume"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert tree_digest(out) == reference


def test_resume_with_other_settings_is_refused(big_input, tmp_path):
    out = tmp_path / "s.zarr"
    code, _ = run_until(encode_args(big_input, out), out, N_ROWS // 2, signal.SIGKILL)
    assert code == -signal.SIGKILL
    args = encode_args(big_input, out, "--resume")
    args[args.index("512")] = "256"
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 2 and "other settings" in r.stderr


def test_resume_without_partial_encodes_from_scratch(big_input, reference, tmp_path):
    out = tmp_path / "s.zarr"
    r = subprocess.run(encode_args(big_input, out, "--resume"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert tree_digest(out) == reference
