"""Encoding with the fitted map families: the extra fit pass (TRF tau, positive kappa) and
the empirical quantizer are chunk-independent, stores round-trip, quantizer files are
tied to their map."""

import json
import os

import numpy as np
import pytest

from rfcli import FeatureStore
from rfcli.errors import IncompatibleError, UsageError
from rfcli.jobs.fit_quantizer import fit_quantizer_on_input
from rfcli.maps import RowReducer
from tests.helpers import chunk_files_digest, letter_matrix, run

FAMILIES = [
    dict(kernel="ternary", quantizer="trits", normalize_rows=True, map_options={"target": "relu"}),
    dict(kernel="ternary", normalize_rows=True, map_options={"target": "cos", "sparsity": 0.5}),
    dict(kernel="positive", standardize=True, gamma=0.05),
    dict(kernel="positive", normalize_rows=True, quantizer="none", bits=32),
    dict(kernel="ntk", standardize=True, map_options={"depth": 2}),
    dict(kernel="arccos1", normalize_rows=True, map_options={"modified": True}),
    dict(kernel="arccos1", standardize=True),
]


@pytest.mark.parametrize("kw", FAMILIES, ids=lambda k: f"{k['kernel']}-{k.get('quantizer', '')}")
def test_families_byte_identical_for_chunk_sizes(tmp_path, letter_small, kw):
    a = run(
        letter_small,
        tmp_path / "a.zarr",
        chunk_rows=600,
        threads=1,
        n_features=60,
        label="label",
        **kw,
    )
    b = run(
        letter_small,
        tmp_path / "b.zarr",
        chunk_rows=37,
        threads=3,
        n_features=60,
        label="label",
        **kw,
    )
    assert a.encoder.fingerprint() == b.encoder.fingerprint()
    assert chunk_files_digest(tmp_path / "a.zarr") == chunk_files_digest(tmp_path / "b.zarr")
    st = FeatureStore(os.fspath(tmp_path / "a.zarr"))
    assert st.encoder.fingerprint() == a.encoder.fingerprint()
    # the stored encoder encodes fresh rows exactly like the store's rows
    X = letter_matrix(600)
    again = st.encoder.encode_chunk(X[:256], 0)
    np.testing.assert_array_equal(again.packed, st.group["codes"][:256])


def test_ternary_tau_is_the_mean_squared_norm(tmp_path, letter_small):
    res = run(
        letter_small,
        tmp_path / "t.zarr",
        kernel="ternary",
        standardize=True,
        n_features=16,
        label="label",
        map_options={"target": "sin"},
    )
    X = letter_matrix(600)
    Xs = (X - X.mean(0)) / X.std(0)
    assert res.encoder.fmap.tau_ == pytest.approx(np.mean((Xs**2).sum(1)), rel=1e-12)


def test_positive_kappa_is_the_training_maximum(tmp_path, letter_small):
    res = run(
        letter_small,
        tmp_path / "p.zarr",
        kernel="positive",
        normalize_rows=True,
        label="label",
        n_features=32,
        quantizer="none",
        bits=32,
    )
    st = FeatureStore(os.fspath(tmp_path / "p.zarr"))
    scaled = st.group["codes"][:].view("<f4").astype(np.float64)  # raw z in (0, 1]
    assert scaled.max() == pytest.approx(1.0, rel=1e-6) and scaled.min() > 0
    f = res.encoder.fmap
    assert f.feature_scale == pytest.approx(np.exp(-f.kappa_) / np.sqrt(32))


def test_row_reducer_is_chunk_independent():
    v = np.random.default_rng(0).normal(size=10_000) * 1e3
    totals = []
    for step in (1, 77, 4096, 10_000):
        r = RowReducer({"s": "sum", "m": "max"}, block=512)
        for i in range(0, v.size, step):
            r.update(i, {"s": v[i : i + step], "m": v[i : i + step]})
        totals.append(r.totals())
    assert all(t == totals[0] for t in totals)  # bit-identical floats
    assert totals[0]["m"] == v.max() and totals[0]["s"] == pytest.approx(v.sum())
    with pytest.raises(ValueError):
        RowReducer({"s": "sum"}).update(5, {"s": v[:3]})


def test_fit_quantizer_empirical_flow(tmp_path, letter_small):
    kw = dict(kernel="positive", standardize=True, gamma=0.05, n_features=64, label="label")
    run(letter_small, tmp_path / "f.zarr", quantizer="none", bits=32, **kw)
    q = fit_quantizer_on_input(
        os.fspath(tmp_path / "f.zarr"), os.fspath(letter_small), 2, n_values=5000, seed=3
    )
    assert q.info["sample_values"] == 5000 and q.info["sample_seed"] == 3
    cfg = q.to_config()
    res = run(letter_small, tmp_path / "q.zarr", quantizer_config=cfg, **kw)
    assert res.encoder.quantizer == q
    # the same file with another map (seed) is refused
    with pytest.raises(IncompatibleError, match="another map"):
        run(letter_small, tmp_path / "x.zarr", quantizer_config=cfg, **{**kw, "seed": 1})
    # a fitted quantizer is reproducible (hash sample, exact Lloyd)
    q2 = fit_quantizer_on_input(
        os.fspath(tmp_path / "f.zarr"), os.fspath(letter_small), 2, n_values=5000, seed=3
    )
    assert json.dumps(q2.to_config()) == json.dumps(cfg)


def test_quantizer_map_rules(tmp_path, letter_small):
    with pytest.raises(UsageError, match="empirical"):
        run(
            letter_small,
            tmp_path / "a.zarr",
            kernel="positive",
            quantizer="lm",
            gamma=0.05,
            label="label",
            standardize=True,
        )
    with pytest.raises(UsageError, match="trits"):
        run(
            letter_small,
            tmp_path / "b.zarr",
            kernel="ternary",
            quantizer="empirical",
            normalize_rows=True,
        )


def test_empirical_domain_auto_follows_the_measurement(tmp_path, letter_small):
    kw = dict(kernel="positive", standardize=True, gamma=0.05, n_features=32, label="label")
    r4 = run(letter_small, tmp_path / "a.zarr", bits=4, **kw)
    r2 = run(letter_small, tmp_path / "b.zarr", bits=2, **kw)
    rl = run(letter_small, tmp_path / "c.zarr", bits=4, quantizer_domain="linear", **kw)
    assert r4.encoder.quantizer.info["domain"] == "log"
    assert r2.encoder.quantizer.info["domain"] == "linear"
    assert rl.encoder.quantizer.info["domain"] == "linear"
    r = run(letter_small, tmp_path / "d.zarr", kernel="ntk", standardize=True, n_features=32,
            bits=4, label="label")  # fmt: skip
    assert r.encoder.quantizer.info["domain"] == "linear"
