"""gamma='search': the bandwidth chosen by validation on a labelled row sample."""

from __future__ import annotations

import numpy as np
import pytest

from rfcli.errors import UsageError
from rfcli.io.store import FeatureStore
from rfcli.learn import bandwidth
from tests.helpers import run, tree_digest, write_parquet


@pytest.fixture(scope="module")
def wiggly(tmp_path_factory):
    """y = sin(6 x0) + noise: a bandwidth far above the median heuristic is needed."""
    d = tmp_path_factory.mktemp("gs")
    rng = np.random.default_rng(0)
    n = 1500
    X = rng.uniform(-2, 2, (n, 2))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=n)
    cls = (np.sin(6 * X[:, 0]) > 0).astype(np.int64)
    return write_parquet(d / "w.parquet", a=X[:, 0], b=X[:, 1], y=y, c=cls), d


@pytest.mark.parametrize("label", ["y", "c"])
def test_search_beats_the_median_heuristic(wiggly, label, tmp_path):
    src, _ = wiggly
    kw = dict(label=label, columns=["a", "b"], n_features=256, bits=2)
    res = run(src, tmp_path / "s.zarr", gamma="search", **kw)
    gs = FeatureStore(str(tmp_path / "s.zarr")).meta["fit"]["gamma_search"]
    assert gs == res.encoder.fit_report["gamma_search"]
    assert gs["metric"] == ("mse" if label == "y" else "accuracy")
    cands, scores = np.array(gs["candidates"]), np.array(gs["scores"])
    med = int(np.argmin(np.abs(cands - gs["median_heuristic"])))
    best = int(np.argmin(scores) if label == "y" else np.argmax(scores))
    assert gs["gamma"] == pytest.approx(cands[best])
    assert res.encoder.fmap.gamma_ == pytest.approx(gs["gamma"])
    # sin(6 x) varies on a scale ~ 1/6 of the data's: the validated gamma is far above the
    # median heuristic's, and its validation score clearly better
    assert gs["gamma"] >= 8 * gs["median_heuristic"]
    if label == "y":
        assert scores[best] < 0.5 * scores[med]
    else:
        assert scores[best] > scores[med] + 0.05
    assert not gs["at_edge"]


def test_search_is_deterministic_whatever_the_chunking(wiggly, tmp_path):
    src, _ = wiggly
    kw = dict(label="y", columns=["a", "b"], n_features=128, bits=2, gamma="search")
    run(src, tmp_path / "a.zarr", chunk_rows=97, **kw)
    run(src, tmp_path / "b.zarr", chunk_rows=5000, threads=2, **kw)
    assert tree_digest(tmp_path / "a.zarr") == tree_digest(tmp_path / "b.zarr")


def test_grid_widens_past_an_edge(wiggly, tmp_path, monkeypatch):
    src, _ = wiggly
    monkeypatch.setattr(bandwidth, "HALF_WIDTH", 1)  # 3 candidates: the best is beyond them
    run(src, tmp_path / "s.zarr", label="y", columns=["a", "b"], n_features=128,
        gamma="search")  # fmt: skip
    gs = FeatureStore(str(tmp_path / "s.zarr")).meta["fit"]["gamma_search"]
    assert len(gs["candidates"]) > 3
    assert max(gs["candidates"]) > 2.0 * gs["median_heuristic"]  # widened upwards


def test_search_needs_a_label_and_a_bandwidth(wiggly, tmp_path):
    src, _ = wiggly
    with pytest.raises(UsageError, match="label"):
        run(src, tmp_path / "s.zarr", columns=["a", "b"], gamma="search")
    with pytest.raises(UsageError, match="bandwidth"):
        run(src, tmp_path / "s.zarr", label="y", columns=["a", "b"], kernel="arccos0",
            gamma="search", quantizer="binary")  # fmt: skip


def test_validation_rows_are_held_out(tmp_path):
    """On labels that are pure noise, held-out rows cannot be predicted: the best validation
    MSE stays near the labels' variance (training on the validation rows would not)."""
    rng = np.random.default_rng(3)
    n = 900
    X = rng.uniform(-2, 2, (n, 2))
    y = rng.normal(size=n)
    src = write_parquet(tmp_path / "noise.parquet", a=X[:, 0], b=X[:, 1], y=y)
    run(src, tmp_path / "s.zarr", label="y", n_features=256, gamma="search")
    gs = FeatureStore(str(tmp_path / "s.zarr")).meta["fit"]["gamma_search"]
    assert min(gs["scores"]) >= 0.9 * np.var(y)
