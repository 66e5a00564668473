"""bits='auto' with row_bytes: (gamma, b) chosen at equal bits per row (rfcli.learn.bits_choice)."""

from __future__ import annotations

import numpy as np
import pytest

import rfcli
from rfcli.errors import UsageError
from rfcli.io.settings import ReadSettings
from rfcli.jobs.encode import EncodeSettings
from rfcli.learn import bits_choice as bc
from rfcli.learn.bandwidth import FOLDS, _score, _targets
from rfcli.random import keyed_uniform
from tests import helpers


def _problem(n=900, seed=0):
    """A 3-class problem whose classes follow the sign pattern of two inputs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)
    return X, y


def test_features_for_the_budget():
    assert [bc.features_for(64, b) for b in (1, 2, 3, 4, 8)] == [512, 256, 170, 128, 64]
    assert bc.candidate_bits(1, lambda b: True) == [1, 2, 3, 4, 8]
    with pytest.raises(UsageError, match="no bit width"):
        bc.candidate_bits(4, lambda b: b > 8)


def test_extrapolation_follows_one_over_m():
    # s(m) = s_inf + c/m through (m, s1) and (m/2, s2): at m_b the 1/m law itself
    s_inf, c, m = 0.9, -20.0, 256
    s1, s2 = s_inf + c / m, s_inf + c / (m / 2)
    for target in (256, 512, 4096):
        assert bc.extrapolate(s1, s2, m, target) == pytest.approx(s_inf + c / target)
    assert bc.extrapolate(0.8, 0.85, m, 4096) == 0.8  # a loss with more features: no gain
    assert bc.extrapolate(0.8, 0.7, m, 128) == 0.8  # fewer features than measured: as measured


def test_nested_scores_match_the_search_scores():
    """The full-width score of the shared factor is the bandwidth search's own score; the
    half-width one that of the first m/2 features up to the penalty's scale."""
    X, y = _problem()
    rng = np.random.default_rng(1)
    W = rng.normal(size=(4, 64))
    F = np.sqrt(2 / 64) * np.cos(X @ W + rng.uniform(0, 2 * np.pi, 64))
    Y, task, truth = _targets(y)
    folds = (keyed_uniform(0, np.arange(len(y)), 1)[:, 0] * FOLDS).astype(int)
    full, half = bc._score_nested(F, Y, task, truth, folds)
    assert full == pytest.approx(_score(F, Y, task, truth, folds)[0], abs=1.5 / len(y))
    assert half == pytest.approx(_score(F[:, :32], Y, task, truth, folds)[0], abs=0.02)
    assert half < full  # 32 features separate these classes worse than 64


def test_the_informative_candidate_wins():
    """Whatever the map: the (gamma, b) whose features carry the label is chosen, the
    others' scores are reported beside it."""
    X, y = _problem()
    rng = np.random.default_rng(2)
    good = 4
    onehot = np.eye(3)[y]

    def features(gamma, b, m):
        noise = rng.normal(size=(len(y), m))
        if b == good and gamma == 1.0:  # only this pair sees the label
            noise[:, :3] += 3 * onehot
        return noise

    res = bc.choose_bits(features, y, 1.0, 64, [1, 2, 4, 8], seed=0)
    assert (res.bits, res.features, res.gamma) == (good, 128, 1.0)
    d = res.to_dict()
    assert [c["bits"] for c in d["candidates"]] == [1, 2, 4, 8]
    won = max(d["candidates"], key=lambda c: c["score"])
    assert won["bits"] == good and won["score"] > 0.9
    assert all(c["score"] < 0.7 for c in d["candidates"] if c["bits"] != good)
    # every b at gamma, the REFINE best of them on a grid around it
    grids = sorted(len(c["gammas"]) for c in d["candidates"])
    assert grids[: 4 - bc.REFINE] == [1] * (4 - bc.REFINE) and min(grids[4 - bc.REFINE :]) >= 3


def _encode(tmp_path, **kw):
    """Encode 600 letter rows."""
    import pyarrow.parquet as pq

    src = tmp_path / "letter600.parquet"
    pq.write_table(pq.read_table(helpers.LETTER).slice(0, 600), src)
    s = EncodeSettings(standardize=True, **kw)
    return rfcli.encode(str(src), str(tmp_path / "s.zarr"), s, ReadSettings(label="label"))


def test_encode_keeps_the_budget_and_reports_the_choice(tmp_path):
    res = _encode(tmp_path, bits="auto", row_bytes=48, gamma="search")
    enc = res.encoder
    choice = enc.fit_report["bits_choice"]
    assert choice["bits"] == enc.quantizer.bits
    assert enc.n_features == bc.features_for(48, enc.quantizer.bits) == choice["features"]
    assert enc.fmap.gamma_ == pytest.approx(choice["gamma"])
    best = max(choice["candidates"], key=lambda c: (c["score"], c["bits"]))
    assert best["bits"] == choice["bits"]
    assert [c["bits"] for c in choice["candidates"]] == [1, 2, 3, 4, 8]
    assert "gamma_search" in enc.fit_report
    from rfcli.io.store import FeatureStore
    from rfcli.jobs.inspect import store_summary

    summary = store_summary(FeatureStore(res.path))  # what inspect --json shows
    assert summary["fit"]["bits_choice"] == choice
    from rfcli.cli.inspect import store_sections

    rows = dict(store_sections(summary)[0][1])  # what inspect shows
    text = rows["bits choice"]
    assert text.startswith(f"{choice['bits']} bits, m {choice['features']} for 48 bytes per row")
    assert all(f"b {c['bits']} m {c['features']:,} " in text for c in choice["candidates"])
    assert "bits_choice" not in rows.get("fitted", "")


def test_fixed_bits_and_row_bytes_set_the_features(tmp_path):
    enc = _encode(tmp_path, bits=4, row_bytes=48, gamma=0.5).encoder
    assert (enc.n_features, enc.quantizer.bits) == (96, 4)
    assert "bits_choice" not in enc.fit_report


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(bits="auto"), "bits='auto' chooses the bits for a storage budget: give row_bytes"),
        (dict(bits="auto", row_bytes=64, quantizer="none"), "the none quantizer has no bit"),
        (dict(bits="auto", row_bytes=64, kernel="ternary"), r"ternary kernel's\)"),
        (dict(bits="auto", row_bytes=64, n_features=128), "n_features follows the chosen"),
        (dict(bits=2, row_bytes=64, n_features=128), "n_features=128 contradicts row_bytes=64"),
        (dict(row_bytes=64, kernel="glf"), "row_bytes sets the number of features"),
    ],
)
def test_settings_refused(kw, message):
    with pytest.raises(UsageError, match=message):
        EncodeSettings(**kw).validate()


def test_estimator_with_a_budget():
    from rfcli.sklearn import RandomFeatureRidge, RandomFeatures

    X = helpers.letter_matrix(400)
    y = X[:, 0] * X[:, 1]
    reg = RandomFeatureRidge(bits="auto", row_bytes=32, gamma="search", standardize=True)
    reg.fit(X, y)
    b = reg.encoder_.quantizer.bits
    assert reg.encoder_.n_features == bc.features_for(32, b)
    assert reg.encoder_.fit_report["bits_choice"]["bits"] == b
    with pytest.raises(UsageError, match="give y"):
        RandomFeatures(bits="auto", row_bytes=32).fit(X)
