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


@pytest.mark.parametrize("a", [0.5, 0.7, 1.0])
def test_extrapolation_follows_the_power_law_of_three_points(a):
    # s(m) = s_inf + c m^-a measured at m, m/2 and m/4: the exponent is found and the
    # extrapolation at m_b is the law's own value
    s_inf, c, m = 0.9, -3.0, 512
    s1, s2, s4 = (s_inf + c * (m / d) ** -a for d in (1, 2, 4))
    assert bc.decay_exponent(s1, s2, s4) == pytest.approx(a)
    for target in (1024, 4096, 16384):
        got = bc.extrapolate(s1, s2, m, target, s_quarter=s4)
        assert got == pytest.approx(s_inf + c * target**-a)
    # a slow decay gains more from the same last doubling than the 1/m law gives
    assert bc.extrapolate(s1, s2, m, 16384, s_quarter=s4) >= bc.extrapolate(s1, s2, m, 16384)


def test_decay_exponent_bounds():
    # slower than m^-1/2: the slowest decay, MIN_DECAY; faster than 1/m: a = 1
    s_inf, c, m = 0.9, -3.0, 512
    s1, s2, s4 = (s_inf + c * (m / d) ** -0.2 for d in (1, 2, 4))
    assert bc.decay_exponent(s1, s2, s4) == bc.MIN_DECAY
    assert bc.decay_exponent(0.86, 0.85, 0.80) == 1.0
    # a gain that is no gain, or no quarter: a = 1 (and no gain extrapolated)
    assert bc.decay_exponent(0.86, 0.85, 0.851) == 1.0
    assert bc.decay_exponent(0.85, 0.86, 0.80) == 1.0
    assert bc.decay_exponent(0.86, 0.85, None) == 1.0
    assert bc.extrapolate(0.85, 0.86, m, 4096, s_quarter=0.80) == 0.85


def test_decay_fitted_only_to_gains_above_their_noise():
    """Gains count only where both exceed GAIN_SE standard errors, and their ratio is
    taken MOVE_SE (relative) standard errors towards the faster decay."""
    s = (0.86, 0.85, 0.84)  # equal gains: a = 0 from the ratio itself, held at MIN_DECAY
    assert bc.decay_exponent(*s, se=(0.0005, 0.0005)) == bc.MIN_DECAY
    ok = 0.01 / bc.GAIN_SE * 0.9
    assert bc.decay_exponent(*s, se=(ok / 0.8, 0.0005)) == 1.0
    assert bc.decay_exponent(*s, se=(0.0005, ok / 0.8)) == 1.0
    # gains 0.008 then 0.010 (ratio 0.8, a = 0.32), SEs 0.002: the ratio's relative SE
    # hypot(0.25, 0.2) = 0.32 times MOVE_SE = 1.5 moves it to 0.8 x (1 - 0.48), a = 1
    g = (0.868, 0.86, 0.85)
    rel = bc.MOVE_SE * np.hypot(0.002 / 0.008, 0.002 / 0.010)
    assert -np.log2(0.8 * (1 - rel)) > 1.0
    assert bc.decay_exponent(*g, se=(0.002, 0.002)) == 1.0
    # SEs 0.001: moved by 0.16 x 1.5, to 0.8 x 0.76, a = 0.72
    rel = bc.MOVE_SE * np.hypot(0.001 / 0.008, 0.001 / 0.010)
    assert 0.6 < -np.log2(0.8 * (1 - rel)) < 0.8
    assert bc.decay_exponent(*g, se=(0.001, 0.001)) == pytest.approx(-np.log2(0.8 * (1 - rel)))
    assert bc.decay_exponent(*g) == bc.MIN_DECAY
    assert bc.extrapolate(*s[:2], 512, 16384, s_quarter=s[2], se=(ok / 0.8, 0.0005)) == (
        pytest.approx(bc.extrapolate(*s[:2], 512, 16384))
    )


def test_a_slow_curve_favours_more_features():
    """phoneme at 2 KiB (docs/defaults-report.md), the choice's own measurements at 512,
    256 and 128 features of its 4,053 sample rows (2,702 train each fold) and their
    gains' SEs: b = 1 at the searched gamma and b = 4 at half of it (the 1/m law's
    choice).  Scored on the same sample at their m_b (16384 and 4096 features, in the
    dual) they give 0.8826 and 0.8746.  The 1/m law ranked b = 4 first; the fitted
    decay ranks b = 1 first, the difference nearer the measured one."""
    one = (0.8335, 0.8041, 0.7863), (0.0049, 0.0054)
    four = (0.8682, 0.8563, 0.8383), (0.0042, 0.0043)
    at_mb = {16384: 0.8826, 4096: 0.8746}
    cases = ((one, 16384), (four, 4096))
    old = {mb: bc.extrapolate(s[0], s[1], 512, mb) for (s, _), mb in cases}
    new = {mb: bc.extrapolate(s[0], s[1], 512, mb, s_quarter=s[2], se=se, rows=2702)
           for (s, se), mb in cases}  # fmt: skip
    assert old[16384] < old[4096] and new[16384] > new[4096]
    gap = at_mb[16384] - at_mb[4096]
    assert abs(new[16384] - new[4096] - gap) < abs(old[16384] - old[4096] - gap)
    # each extrapolated score within 0.005 of the measured one (the 1/m law: 0.021 off)
    assert max(abs(new[mb] - at_mb[mb]) for mb in at_mb) < 0.005


def test_beyond_the_rows_the_curve_is_one_over_m():
    """From the validation's training rows on, a = 1: the slow curve's doubling gain at
    the knee, falling as 1/m; measured at or beyond the rows: the 1/m law throughout."""
    s_inf, c, m, a, rows = 0.9, -3.0, 512, 0.5, 2048
    s1, s2, s4 = (s_inf + c * (m / d) ** -a for d in (1, 2, 4))
    law = s_inf + c * rows**-a
    assert bc.extrapolate(s1, s2, m, rows, s_quarter=s4, rows=rows) == pytest.approx(law)
    knee_gain = (s1 - s2) * (m / rows) ** a  # the doubling ending at the rows
    for target in (4096, 16384):
        got = bc.extrapolate(s1, s2, m, target, s_quarter=s4, rows=rows)
        assert got == pytest.approx(law + knee_gain * (1 - rows / target))
        assert got < bc.extrapolate(s1, s2, m, target, s_quarter=s4)  # no knee: more
    for few in (256, 512):
        assert bc.extrapolate(s1, s2, m, 4096, s_quarter=s4, rows=few) == pytest.approx(
            bc.extrapolate(s1, s2, m, 4096)
        )


def test_extrapolated_loss_falls_at_most_as_one_over_m():
    # minus an MSE that fell 3.2x from 256 to 512 features (faithfuld, b = 1): the line
    # through them crosses 0 before m_b; the loss stops at the 1/m rate from 512
    s1, s2 = -1.87e-6, -6.04e-6
    assert bc.extrapolate(s1, s2, 512, 16384, perfect=0.0) == pytest.approx(s1 * 512 / 16384)
    # accuracy: the error rate alike (the line would pass 1)
    assert bc.extrapolate(0.95, 0.80, 512, 4096) == pytest.approx(1 - 0.05 * 512 / 4096)
    # a loss that falls slower than 1/m keeps the line
    assert bc.extrapolate(0.9, 0.85, 512, 1024) == pytest.approx(0.925)


def _pair(task, n=600, better=14, worse=10, seed=3):
    """Per-row held-out losses of two candidates on the same n rows: the second (more
    bits) better than the first on ``better`` rows and worse on ``worse`` (0/1 errors, or
    squared errors that differ by one unit on those rows)."""
    rng = np.random.default_rng(seed)
    if task == "classification":
        a = (rng.uniform(size=n) < 0.17).astype(float)
        wrong, right = np.flatnonzero(a == 1), np.flatnonzero(a == 0)
        b = a.copy()
        b[wrong[:better]] = 0.0
        b[right[:worse]] = 1.0
        return a, b, 1.0 - a.mean(), 1.0 - b.mean()
    a = rng.chisquare(1, size=n) * 0.2
    b = a.copy()
    b[:better] -= 0.5
    b[better : better + worse] += 0.5
    a[:better] += 0.5  # keep the losses positive
    b[:better] += 0.5
    return a, b, -a.mean(), -b.mean()


def _candidates(task, **kw):
    a, b, sa, sb = _pair(task, **kw)

    def cand(bits, m, s, losses):
        return bc.Candidate(bits, m, min(m, 512), [1.0], [0], [s], [s], [s], losses=losses)

    return cand(2, 4096, sa, a), cand(8, 1024, sb, b)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_the_best_score_wins_even_within_its_standard_error(task):
    """b = 8 better by 4 net rows of 600 (14 better, 10 worse: the mammographic case), within
    the paired standard error of the difference: still b = 8 (the one-SE rule that would
    take b = 2 was not kept, docs/methods.md); the SE is reported beside it."""
    more_m, more_b = _candidates(task)
    assert more_b.score > more_m.score
    gap = more_b.score - more_m.score
    assert gap < bc.paired_se(more_m.losses, more_b.losses)
    assert bc.best_choice([more_b, more_m]) is more_b
    assert bc.best_choice([more_m, more_b]) is more_b


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_a_clear_win_goes_to_more_bits(task):
    """b = 8 better by 24 net rows of 600 (30 better, 6 worse): beyond the paired SE."""
    more_m, more_b = _candidates(task, better=30, worse=6)
    assert more_b.score - more_m.score > bc.paired_se(more_m.losses, more_b.losses)
    assert bc.best_choice([more_m, more_b]) is more_b


def test_standard_errors_on_the_scale_of_the_extrapolated_scores():
    """faithfuld at 2 KiB: b = 1's MSE, measured 6e-7 at 512 features, extrapolates to
    1.9e-8 at m = 16384, b = 4's 5e-8 to 6e-9.  On the measured losses' scale the paired
    SE (3.5e-8) hides b = 4's lead; scaled to the extrapolated scores it is 1.1e-9."""
    rng = np.random.default_rng(4)
    la, lb = rng.chisquare(1, 600) * 6e-7, rng.chisquare(1, 600) * 5e-8
    sa, sb = -1.9e-8, -6e-9
    scaled = bc.at_budget((sa, -la.mean(), 0.0, la), perfect=0.0)
    assert scaled.mean() == pytest.approx(-sa)
    errors = (rng.uniform(size=600) < 0.2).astype(float)  # accuracy: the error rate alike
    assert bc.at_budget((0.9, 0.8, 0.7, errors), perfect=1.0).mean() == pytest.approx(
        errors.mean() * 0.1 / 0.2
    )

    def cand(bits, m, score, losses):
        return bc.Candidate(bits, m, 512, [1.0], [0], [score], [0.0], [0.0], losses=losses)

    a = cand(1, 16384, sa, scaled)
    b = cand(4, 4096, sb, bc.at_budget((sb, -lb.mean(), 0.0, lb), perfect=0.0))
    assert bc.best_choice([a, b]) is b
    assert bc.paired_se(la, lb) > sb - sa  # the measured scale: a tie, b = 1


def test_paired_se_is_the_se_of_the_mean_difference():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=400), rng.normal(size=400)
    assert bc.paired_se(a, b) == pytest.approx(np.std(a - b, ddof=1) / 20)
    assert bc.paired_se(a, a) == 0.0  # identical losses: a tie, whatever the scores


def test_candidates_the_default_learner_cannot_fit_are_left_out():
    """The informative b = 1 (most features) is not chosen when its m does not fit: it is
    left out with the reason, before any scoring."""
    X, y = _problem()
    rng = np.random.default_rng(2)
    onehot = np.eye(3)[y]
    asked = []

    def features(gamma, b, m):
        asked.append(b)
        noise = rng.normal(size=(len(y), m))
        noise[:, :3] += (3.0 if b == 1 else 1.0) * onehot
        return noise

    free = bc.choose_bits(features, y, 1.0, 64, [1, 2, 4, 8], seed=0, widen=False)
    assert free.bits == 1 and free.left_out == []

    def fits(m, task, k):
        assert (task, k) == ("classification", 3)
        return None if m <= 256 else f"m = {m} is too many"

    asked.clear()
    res = bc.choose_bits(features, y, 1.0, 64, [1, 2, 4, 8], seed=0, widen=False, fits=fits)
    assert res.bits != 1 and 1 not in asked
    assert res.to_dict()["left_out"] == [
        {"bits": 1, "features": 512, "reason": "m = 512 is too many"}
    ]
    with pytest.raises(UsageError, match="no bit width .* fits in memory"):
        bc.choose_bits(features, y, 1.0, 64, [1, 2], seed=0, fits=lambda m, t, k: "too big")


def test_nested_scores_match_the_search_scores():
    """The full-width score of the shared factor is the bandwidth search's own score; the
    half- and quarter-width ones those of the first m/2 and m/4 features up to the
    penalty's scale."""
    X, y = _problem()
    rng = np.random.default_rng(1)
    W = rng.normal(size=(4, 64))
    F = np.sqrt(2 / 64) * np.cos(X @ W + rng.uniform(0, 2 * np.pi, 64))
    Y, task, truth = _targets(y)
    folds = (keyed_uniform(0, np.arange(len(y)), 1)[:, 0] * FOLDS).astype(int)
    (full, half, quarter), se, losses = bc._score_nested(F, Y, task, truth, folds)
    assert full == pytest.approx(_score(F, Y, task, truth, folds)[0], abs=1.5 / len(y))
    # the rows' 0/1 losses at the best alpha: the folds' mean accuracy, pooled
    assert set(np.unique(losses)) <= {0.0, 1.0} and len(losses) == len(y)
    per_fold = [1 - losses[folds == f].mean() for f in range(FOLDS)]
    assert np.mean(per_fold) == pytest.approx(full, abs=1e-12)
    assert half == pytest.approx(_score(F[:, :32], Y, task, truth, folds)[0], abs=0.02)
    assert half < full  # 32 features separate these classes worse than 64
    assert quarter == pytest.approx(_score(F[:, :16], Y, task, truth, folds)[0], abs=0.02)
    assert quarter < half


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
    # no candidate of more bits beats the chosen one by more than their paired SE
    won = next(c for c in choice["candidates"] if c["bits"] == choice["bits"])
    assert won["diff_se"] == 0.0 and won["se"] > 0
    assert all(c["score"] - won["score"] <= c["diff_se"]
               for c in choice["candidates"] if c["bits"] > won["bits"])  # fmt: skip
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
    assert text.count("(SE ") == len(choice["candidates"])
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


def test_encode_never_chooses_a_store_the_default_train_refuses(tmp_path):
    """With a memory budget between what KRR needs at the b chosen without one and at the
    next larger b, the chosen b and every smaller one are left out; train accepts the
    chosen store within the same budget and refuses the one chosen without it."""
    from rfcli.jobs.train import TrainSettings
    from rfcli.learn.footprint import learner_need

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 4))
    y = np.sin(X).sum(axis=1) + 0.05 * rng.normal(size=1200)
    s = EncodeSettings(standardize=True, bits="auto", row_bytes=64, gamma=0.5)
    free = rfcli.encode(X, str(tmp_path / "free.zarr"), s, y=y)
    b = free.encoder.quantizer.bits
    assert b < 8
    m, m_next = (
        bc.features_for(64, b),
        bc.features_for(64, bc.BIT_CANDIDATES[bc.BIT_CANDIDATES.index(b) + 1]),
    )
    need = [learner_need("krr", k, 1, 5, rows=1200, chunk_rows=256) for k in (m_next, m)]
    memory = (need[0] + need[1]) // 2
    capped = rfcli.encode(X, str(tmp_path / "capped.zarr"), s, y=y, memory=memory)
    choice = capped.encoder.fit_report["bits_choice"]
    assert capped.encoder.quantizer.bits == choice["bits"] > b
    assert [c["bits"] for c in choice["left_out"]] == [c for c in bc.BIT_CANDIDATES if c <= b]
    assert f"KRR on m = {m} needs about" in choice["left_out"][-1]["reason"]
    krr = TrainSettings(model="krr")
    rfcli.train(capped.path, settings=krr, memory=memory)
    with pytest.raises(UsageError, match=f"KRR with m = {m} features needs about"):
        rfcli.train(free.path, settings=krr, memory=memory)


def test_train_estimates_fewer_rows_than_features_by_the_dual(tmp_path):
    """300 rows of m = 1024 features train in the dual (rows x m, n x n arrays): accepted
    within a budget far below the primal's m x m estimate, which the same budget refuses
    once there are more rows than features."""
    from rfcli.jobs.train import TrainSettings
    from rfcli.learn.footprint import learner_need

    rng = np.random.default_rng(1)
    X = rng.normal(size=(1100, 3))
    y = np.sin(X).sum(axis=1)
    s = EncodeSettings(standardize=True, n_features=1024, bits=1, gamma=0.5)
    few = rfcli.encode(X[:300], str(tmp_path / "few.zarr"), s, y=y[:300])
    many = rfcli.encode(X, str(tmp_path / "many.zarr"), s, y=y)
    dual, primal = (learner_need("krr", 1024, 1, 5, rows=r, chunk_rows=256) for r in (300, 1100))
    assert 8 * dual < primal
    memory = 2 * dual
    krr = TrainSettings(model="krr")
    assert rfcli.train(few.path, settings=krr, memory=memory).report["solver"] == "dual"
    with pytest.raises(UsageError, match="KRR with m = 1024 features needs about"):
        rfcli.train(many.path, settings=krr, memory=memory)


def test_choice_is_deterministic_whatever_the_chunking_and_threads(tmp_path):
    """A sample above the rows where the fitted decay applies (1,000 rows: 666 train a
    fold) and m_b beyond CHOICE_FEATURES: the same choice, scores and store for any
    chunking and threads."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, (1000, 2))
    y = (np.sin(5 * X[:, 0]) + 0.3 * X[:, 1] > 0).astype(np.int64)
    src = helpers.write_parquet(tmp_path / "w.parquet", a=X[:, 0], b=X[:, 1], y=y)
    kw = dict(label="y", columns=["a", "b"], bits="auto", row_bytes=80, gamma="search")
    a = helpers.run(src, tmp_path / "a.zarr", chunk_rows=97, **kw)
    b = helpers.run(src, tmp_path / "b.zarr", chunk_rows=5000, threads=2, **kw)
    ca, cb = (r.encoder.fit_report["bits_choice"] for r in (a, b))
    assert ca == cb
    assert any(c["measured_features"] < c["features"] for c in ca["candidates"])
    assert helpers.tree_digest(tmp_path / "a.zarr") == helpers.tree_digest(tmp_path / "b.zarr")


def test_choose_bits_extrapolates_along_the_fitted_decay():
    """A label spread over many weak features (weights j^-1/2: every doubling of m adds
    about as much signal): the candidates beyond CHOICE_FEATURES get a fitted a < 1 and
    their score is :func:`extrapolate`'s along it, above the 1/m law's, 1/m from the
    folds' 4,000 training rows on (b = 1's 4096 features)."""
    rng = np.random.default_rng(5)
    n = 6000
    Z = rng.normal(size=(n, 512))
    y = (Z @ (1 / np.arange(1, 513) ** 0.5) > 0).astype(int)
    res = bc.choose_bits(lambda g, b, m: Z[:, :m], y, 1.0, 512, [1, 2, 8], seed=0, widen=False)
    cands = {c["bits"]: c for c in res.to_dict()["candidates"]}
    for b in (1, 2):
        c = cands[b]
        s1, s2, s4 = c["measured"][0], c["measured_half"][0], c["measured_quarter"][0]
        assert s1 > s2 > s4 and c["decay"][0] < 0.8
        fitted = bc.extrapolate(s1, s2, 512, c["features"], s_quarter=s4, rows=n * 2 // 3)
        assert c["scores"][0] == pytest.approx(fitted)
        assert fitted > bc.extrapolate(s1, s2, 512, c["features"]) + 0.004 * (3 - b)
    assert cands[8]["decay"] == [1.0] and cands[8]["measured_features"] == 512
    assert res.bits == 1
