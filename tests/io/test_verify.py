"""`rfcli inspect --verify` finds flipped bytes, missing chunks, truncated metadata and
inconsistent metadata; a clean store verifies."""

import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from rfcli.cli import cli
from rfcli.io.store.verify import verify_store
from tests.helpers import edit_meta, run


@pytest.fixture
def store(tmp_path, letter_small):
    out = tmp_path / "s.zarr"
    run(letter_small, out, label="label", n_features=64, store_chunk_rows=128)
    return out


def verify_cli(path):
    return CliRunner().invoke(cli, ["inspect", str(path), "--verify"])


def chunk_file(store, array="codes", i=1):
    key = [str(i), "0"] if array == "codes" else [str(i)]
    return os.path.join(store, array, "c", *key)


def test_clean_store_verifies(store):
    rep = verify_store(str(store))
    assert rep.ok and rep.rows == 600 and rep.chunks == 5
    r = verify_cli(store)
    assert r.exit_code == 0 and "ok (600 rows, 5 chunk(s) verified)" in r.stderr


@pytest.mark.parametrize("array", ["codes", "norms", "label"])
def test_flipped_byte_in_a_chunk_is_detected(store, array):
    f = chunk_file(store, array, 2)
    data = bytearray(open(f, "rb").read())
    data[len(data) // 2] ^= 0x10
    open(f, "wb").write(bytes(data))
    rep = verify_store(str(store))
    assert not rep.ok and any(f"{array}: chunk 2" in p for p in rep.problems)
    r = verify_cli(store)
    assert r.exit_code == 2 and "verification failed" in r.stderr and "chunk 2" in r.stderr


@pytest.mark.parametrize("array", ["codes", "norms"])
def test_deleted_chunk_is_detected(store, array):
    os.remove(chunk_file(store, array, 3))
    rep = verify_store(str(store))
    assert any(
        f"{array}: chunk 3 (rows 384..511): chunk file is missing" == p for p in rep.problems
    )
    assert verify_cli(store).exit_code == 2


@pytest.mark.parametrize("meta", ["zarr.json", "codes/zarr.json"])
def test_truncated_metadata_is_detected(store, meta):
    f = os.path.join(store, meta)
    data = open(f, "rb").read()
    open(f, "wb").write(data[: len(data) // 2])
    rep = verify_store(str(store))
    assert not rep.ok
    r = verify_cli(store)
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_inconsistent_metadata_is_detected(store):
    edit_meta(store, lambda m: m.update(n_rows=599))
    assert any("n_rows is 599" in p for p in verify_store(str(store)).problems)


def test_altered_encoder_arrays_are_detected(store, tmp_path):
    import zarr

    g = zarr.open_group(str(store), mode="r+")
    w = g["encoder/map/W"]
    w[0, 0] = w[0, 0] + 1.0
    assert any("fingerprint" in p for p in verify_store(str(store)).problems)


def test_altered_norms_values_are_detected(store):
    import zarr

    g = zarr.open_group(str(store), mode="r+")
    g["norms"][10] = np.float32(3.0)  # rewritten with a valid checksum
    assert any("norms: chunk 0" in p for p in verify_store(str(store)).problems)


def test_incomplete_and_missing(store, tmp_path):
    edit_meta(store, lambda m: m.update(complete=False))
    assert any("incomplete" in p for p in verify_store(str(store)).problems)
    shutil.rmtree(store)
    r = verify_cli(store)
    assert r.exit_code == 2 and "no such store" in r.stderr
