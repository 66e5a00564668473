"""FeatureStore checks the encoder against the fingerprint recorded in the store's metadata:
a store whose drawn map arrays or recorded fingerprint were altered is refused (StoreError
naming both fingerprints) on every read path, never decoded with the wrong map."""

import os

import numpy as np
import pytest
import zarr

from rfcli import FeatureStore, decode
from rfcli.encoder import Encoder
from rfcli.errors import StoreError
from tests.helpers import edit_meta, run


@pytest.fixture
def store(tmp_path, letter_small):
    out = tmp_path / "s.zarr"
    run(letter_small, out, label="label", n_features=32, store_chunk_rows=256)
    return os.fspath(out)


def stored_encoder(path) -> Encoder:
    """The encoder rebuilt straight from the store's config and arrays (no check)."""
    g = zarr.open_group(path, mode="r")
    meta = dict(g.attrs)["rfcli"]
    arrays = {k: g[f"encoder/{k}"][...] for k in meta["encoder_arrays"]}
    return Encoder.from_state(meta["encoder"], arrays)


READS = {
    "encoder": lambda st: st.encoder,
    "iter_encoded": lambda st: next(st.iter_encoded()),
    "iter_features": lambda st: next(st.iter_features()),
    "iter_features_normalized": lambda st: next(st.iter_features(normalized=True)),
}


def test_clean_store_matches_its_fingerprint(store):
    st = FeatureStore(store)
    assert st.encoder.fingerprint() == st.meta["fingerprint"]
    assert sum(len(ch.packed) for ch in st.iter_encoded()) == st.n_rows == 600


@pytest.mark.parametrize("read", list(READS))
def test_altered_map_array_is_refused(store, read):
    recorded = FeatureStore(store).meta["fingerprint"]
    g = zarr.open_group(store, mode="r+")
    assert "map/W" in dict(g.attrs)["rfcli"]["encoder_arrays"]
    w = g["encoder/map/W"]
    w[0, 0] = w[0, 0] + np.float64(1e-3)  # one drawn frequency, rewritten with a valid checksum
    actual = stored_encoder(store).fingerprint()
    assert actual != recorded
    with pytest.raises(StoreError, match="fingerprint") as e:  # refused on open
        FeatureStore(store)
    assert recorded in str(e.value) and actual in str(e.value)
    st = FeatureStore(store, require_complete=False)  # opened for inspection: the metadata is fine
    with pytest.raises(StoreError, match="fingerprint") as e:  # and every read path refuses it
        READS[read](st)
    assert recorded in str(e.value) and actual in str(e.value)
    with pytest.raises(StoreError, match="fingerprint"):  # a job reading it fails the same way
        decode(store, os.path.join(os.path.dirname(store), "f.npy"))


@pytest.mark.parametrize("read", list(READS))
def test_altered_recorded_fingerprint_is_refused(store, read):
    actual = FeatureStore(store).meta["fingerprint"]
    edit_meta(store, lambda m: m.update(fingerprint="0123456789abcdef"))
    with pytest.raises(StoreError, match="fingerprint"):
        FeatureStore(store)
    st = FeatureStore(store, require_complete=False)
    with pytest.raises(StoreError, match="fingerprint") as e:
        READS[read](st)
    assert "0123456789abcdef" in str(e.value) and actual in str(e.value)
