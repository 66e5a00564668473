"""Default model selection of ``train`` (k-fold cross-validation of C / alpha, grid
extension, warm starts) and the decoded-feature cache of StoreData, against brute-force
references."""

from __future__ import annotations

import os

import numpy as np
import pytest

from rfcli import EncodeSettings, FeatureStore, ReadSettings, encode
from rfcli.jobs import train as training
from rfcli.jobs.train import TrainSettings, train
from rfcli.learn import selection
from rfcli.learn.data import StoreData, fold_ids
from rfcli.learn.selection import fold_sizes
from rfcli.learn.svm import fit_svm, loss_terms
from tests.helpers import decoded, ridge_solution, write_parquet

EPS32 = float(np.finfo(np.float32).eps)


# -- folds ----------------------------------------------------------------------------------
@pytest.mark.parametrize("n_folds", [2, 5, 7])
def test_folds_do_not_depend_on_chunking_and_are_balanced(n_folds):
    n = 1003
    whole = fold_ids(4, 0, n, n_folds)
    for chunk in (1, 6, 97, 500, 4096):
        parts = [fold_ids(4, r, min(chunk, n - r), n_folds) for r in range(0, n, chunk)]
        np.testing.assert_array_equal(np.concatenate(parts), whole)
    sizes = np.bincount(whole, minlength=n_folds)
    assert sizes.max() - sizes.min() <= 1
    np.testing.assert_array_equal(fold_sizes(4, n, n_folds, block=250), sizes)
    # a keyed draw: another seed deals the rows differently, the same seed again the same
    assert (fold_ids(5, 0, n, n_folds) != whole).mean() > 0.5
    np.testing.assert_array_equal(fold_ids(4, 0, n, n_folds), whole)


def test_folds_spread_sorted_labels_evenly():
    """Each block of n_folds consecutive rows gives one row to each fold: rows stored in
    label order still give every fold the same class proportions (up to one row per class
    and fold)."""
    y = np.repeat(np.arange(4), 250)  # sorted labels
    f = fold_ids(0, 0, len(y), 5)
    counts = np.array([[np.sum((f == j) & (y == c)) for c in range(4)] for j in range(5)])
    assert counts.min() >= 49 and counts.max() <= 51


# -- the search -----------------------------------------------------------------------------
def _search(score_of, grid=(0.01, 0.1, 1.0, 10.0, 100.0), lower=False, larger=False):
    asked = []

    def evaluate(values):
        asked.append(list(values))
        return {v: [score_of(v)] * 3 for v in values}

    return selection.grid_search(grid, evaluate, lower, larger), asked


def test_grid_extends_towards_the_best_edge_and_warns():
    sel, asked = _search(lambda c: np.log10(c))  # larger is always better
    assert asked == [[0.01, 0.1, 1.0, 10.0, 100.0], [1000.0], [10000.0]]
    assert sel["best"] == 10000.0 and sel["extended"] == [1000.0, 10000.0]
    assert sel["edge"] == "upper"
    cv = selection.cv_report("C", "accuracy", 3, [10, 10, 10], sel)
    assert "upper edge" in cv["warning"] and "larger C" in cv["warning"]


def test_grid_extension_stops_when_the_best_is_inside():
    # best near 10^-2.4: 0.01 is at the lower edge, 0.001 is worse, so 0.01 is then inside
    sel, asked = _search(lambda c: -abs(np.log10(c) + 2.4))
    assert asked[1:] == [[0.001]]
    assert sel["best"] == 0.01 and sel["edge"] is None and sel["values"][0] == 0.001
    assert selection.cv_report("C", "accuracy", 3, [10] * 3, sel)["warning"] is None
    # a minimum (MSE): the lowest mean wins
    sel, asked = _search(lambda a: (np.log10(a) - 1.2) ** 2, lower=True)
    assert sel["best"] == 10.0 and asked[1:] == [] and sel["edge"] is None


def test_ties_choose_the_most_regularized_value_and_extend_at_most_twice_per_side():
    sel, asked = _search(lambda c: 0.5)  # all equal: the smallest C, at the lower edge
    assert sel["best"] == 1e-4 and sel["extended"] == [0.001, 0.0001]
    assert sel["edge"] == "lower"
    # a plateau of the smallest alphas: the largest of them, inside the grid
    sel, asked = _search(lambda a: max(a, 1.0), lower=True, larger=True)  # MSE
    assert sel["best"] == 1.0 and asked[1:] == [] and sel["edge"] is None


def test_path_warm_start_moves_along_the_secant():
    W1, W2 = np.ones((3, 2)), 3 * np.ones((3, 2))
    b1, b2 = np.zeros(2), np.ones(2)
    sols = {1.0: (W1, b1), 10.0: (W2, b2)}
    W, b = selection.path_start(sols, 100.0)  # half a step beyond 10 on the line 1 -> 10
    np.testing.assert_allclose(W, 4 * np.ones((3, 2)))
    np.testing.assert_allclose(b, 1.5 * np.ones(2))
    W, b = selection.path_start(sols, 0.1)  # downwards from 1, away from 10
    np.testing.assert_allclose(W, 0 * W1)
    assert selection.path_start({1.0: (W1, b1)}, 10.0)[0] is W1
    assert selection.path_start({}, 1.0) is None


# -- stores ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small(tmp_path_factory, letter_small):
    """600 letter rows, m = 64, 2-bit, in 100-row store chunks."""
    d = tmp_path_factory.mktemp("sel")
    store = os.fspath(d / "s.zarr")
    encode(
        os.fspath(letter_small),
        store,
        EncodeSettings(n_features=64, bits=2, normalize_rows=True, store_chunk_rows=100),
        ReadSettings(label="label"),
    )
    return store


@pytest.fixture(scope="module")
def regression(tmp_path_factory):
    d = tmp_path_factory.mktemp("selreg")
    rng = np.random.default_rng(2)
    n = 400
    X = rng.uniform(-1, 1, (n, 2))
    y = np.sin(3 * X[:, 0]) * X[:, 1] + 0.1 * rng.normal(size=n)
    src = write_parquet(d / "r.parquet", a=X[:, 0], b=X[:, 1], y=y)
    store = os.fspath(d / "r.zarr")
    encode(src, store, EncodeSettings(n_features=48, bits=3, gamma=2.0), ReadSettings(label="y"))
    return store


def _float32_perturbation(F):
    """Bound on the float32 rounding of the streamed Phi'Phi (see the KRR dense test):
    about sqrt(n) eps32 max_j sum_i F_ij^2."""
    return np.sqrt(len(F)) * EPS32 * (F**2).sum(0).max()


def test_krr_regression_cv_equals_brute_force_per_fold(regression):
    """Every fold's held-out MSE for every alpha, from the statistics of one pass, against
    a dense solve on the fold's complement scored on the fold's rows.  Tolerance: the
    float32 block products perturb Phi'Phi by dG; that moves w by at most
    ||dG|| ||w|| / lambda_min (as in the dense KRR test), and the MSE by at most
    2 rms(r) ||F dw|| / sqrt(n_f) + ||F dw||^2 / n_f over the n_f held-out rows."""
    res = train(regression, None, TrainSettings(model="krr"))
    cv = res.report["cv"]
    F, y = decoded(regression)
    Y = y.astype(np.float64)[:, None]
    fid = fold_ids(0, 0, len(F), 5)
    dG = _float32_perturbation(F)
    assert cv["fold_rows"] == np.bincount(fid).tolist() and cv["folds"] == 5
    for alpha in cv["grid"]:
        for f in range(5):
            tr, te = fid != f, fid == f
            W, b, H = ridge_solution(F[tr], Y[tr], alpha)
            r = Y[te] - F[te] @ W - b
            mse = float(np.mean(r**2))
            dw = dG * np.linalg.norm(W) / np.linalg.eigvalsh(H)[0]
            Fdw = np.linalg.norm(F[te], 2) * dw * (1 + np.abs(F[te].mean(0)).sum())
            tol = 2 * np.sqrt(mse) * Fdw / np.sqrt(te.sum()) + Fdw**2 / te.sum() + 1e-12
            assert abs(cv["fold_scores"][alpha][f] - mse) <= tol, (alpha, f)
        assert cv["mean"][alpha] == pytest.approx(np.mean(cv["fold_scores"][alpha]), rel=1e-12)
    best = min(cv["mean"], key=cv["mean"].get)
    assert res.report["alpha"] == best == cv["chosen"]
    assert res.report["validation_mse"] == cv["mean"]


def test_krr_classification_cv_equals_brute_force_per_fold(small):
    """Held-out accuracy per fold and alpha against dense solves: a row may flip only
    when its two best scores are closer than twice the float32 perturbation bound of its
    scores (||phi|| ||dW|| + |db|, dW as in the regression test)."""
    res = train(small, None, TrainSettings(model="krr"))
    cv = res.report["cv"]
    F, y = decoded(small)
    classes = sorted(set(y.tolist()))
    idx = np.searchsorted(classes, y)
    Y = np.eye(len(classes))[idx]
    fid = fold_ids(0, 0, len(F), 5)
    dG = _float32_perturbation(F)
    loose = {}
    for alpha in cv["grid"]:
        for f in range(5):
            tr, te = fid != f, fid == f
            W, b, H = ridge_solution(F[tr], Y[tr], alpha)
            S = F[te] @ W + b
            dW = dG * np.linalg.norm(W) / np.linalg.eigvalsh(H)[0]
            bound = np.linalg.norm(F[te], axis=1) * dW + np.abs(F[tr].mean(0)).sum() * dW
            top2 = np.sort(S, axis=1)[:, -2:]
            close = int(np.sum(top2[:, 1] - top2[:, 0] <= 2 * bound))
            acc = np.mean(S.argmax(1) == idx[te])
            assert abs(cv["fold_scores"][alpha][f] - acc) <= close / te.sum() + 1e-12
            loose[alpha] = loose.get(alpha, 0) + close
    # the bound leaves no slack at the large alphas (well conditioned): a misassigned fold
    # or a wrong solve would change tens of rows there
    assert sum(loose[a] for a in cv["grid"][-2:]) <= 2
    best = max(cv["mean"].values())
    assert res.report["alpha"] == max(a for a, s in cv["mean"].items() if s >= best - 1e-12)


def test_svm_cv_folds_equal_separate_fits(small):
    """The stacked problem (all folds' classes in the same passes, masked rows) has the
    optimum of each fold's problem solved alone.  Tolerance: both stop at ftol 1e-12, but
    the margins are float32 products (relative rounding ~1e-7), which products of other
    shapes round differently; 1e-6 relative is far below what one dropped or misassigned
    row changes (its loss is about 1e-3 of the objective)."""
    from rfcli.learn.selection import augmented_gram, fold_stats_pass
    from rfcli.learn.targets import Targets

    data = StoreData(FeatureStore(small), normalized=False, chunk_rows=128)
    targets = Targets.fit((y for _, y in data.labels()), None, "int")
    k, nf, C, m = len(targets.classes), 3, 0.5, 64
    (stats,) = fold_stats_pass(data, None, 0, 0)

    def stacked(W32, b, C, delta):
        return selection.svm_pass(data, targets, k, 0, nf, W32, b, C, "squared_hinge", delta)

    gram = augmented_gram(stats) * (1 - 1 / nf)
    W, b, rep = fit_svm(stacked, m, nf * k, C, gram=gram, tol=1e-12, max_iter=5000)
    F, y = decoded(small)
    idx = targets.index(y)
    fid = fold_ids(0, 0, len(F), nf)
    total = 0.0
    for f in range(nf):
        tr = fid != f
        Fs = F[tr].astype(np.float32)
        Ys = np.where(idx[tr][:, None] == np.arange(k)[None, :], 1.0, -1.0)
        Fa = np.hstack([F[tr], np.ones((tr.sum(), 1))])

        def alone(W32, b, C, d, Fs=Fs, Ys=Ys):
            return loss_terms([(Fs, Ys)], W32, b, C, "squared_hinge", d)

        _, _, r = fit_svm(alone, m, k, C, tol=1e-12, max_iter=5000, gram=Fa.T @ Fa)
        total += r["objective"]
    assert rep["objective"] == pytest.approx(total, rel=1e-6)


def test_svm_selection_report_and_refit(small, monkeypatch):
    """C auto: the chosen C has the best mean held-out accuracy (the smallest among equals),
    the fold scores are the held-out accuracies of the reported fold sizes, every C
    reports its passes, and the refit is warm-started (fewer passes than from zero)."""
    monkeypatch.setattr(training, "C_GRID", (0.1, 1.0, 10.0))
    res = train(small, None, TrainSettings(model="svm", max_iter=300))
    r = res.report
    cv = r["cv"]
    best = max(cv["mean"].values())
    assert r["C"] == cv["chosen"] == min(c for c, s in cv["mean"].items() if s == best)
    assert set(cv["passes"]) == set(cv["grid"]) and all(p > 0 for p in cv["passes"].values())
    for c in cv["grid"]:
        correct = np.array(cv["fold_scores"][c]) * np.array(cv["fold_rows"])
        np.testing.assert_allclose(correct, np.round(correct), atol=1e-9)  # whole rows
    assert r["validation_accuracy"] == cv["mean"]
    cold = train(small, None, TrainSettings(model="svm", C=r["C"], max_iter=300)).report
    assert r["passes"] < cold["passes"]
    assert r["objective"] == pytest.approx(cold["objective"], rel=1e-5)
    assert r["total_passes"] == 1 + sum(cv["passes"].values()) + len(cv["grid"]) + r["passes"]


def test_no_selection_with_fewer_than_two_folds(small):
    for folds in (0, 1):
        r = train(small, None, TrainSettings(model="svm", cv_folds=folds, max_iter=50)).report
        assert r["C"] == training.DEFAULT_C and "cv" not in r
        r = train(small, None, TrainSettings(model="krr", cv_folds=folds)).report
        assert "cv" not in r


def test_too_few_rows_for_the_folds(tmp_path):
    from rfcli.errors import InputError

    src = write_parquet(tmp_path / "t.parquet", a=np.arange(3.0), y=np.array([0, 1, 0]))
    store = os.fspath(tmp_path / "t.zarr")
    encode(src, store, EncodeSettings(n_features=8, gamma=1.0), ReadSettings(label="y"))
    with pytest.raises(InputError, match="5-fold cross-validation needs rows in every fold"):
        train(store, None, TrainSettings(model="krr"))


# -- the cache ------------------------------------------------------------------------------
def test_store_data_caches_decoded_then_packed_then_nothing(small):
    store = FeatureStore(small)
    decoded_size = 600 * (4 * 64 + 8)
    ref = [(b.row0, b.F.copy(), b.y.copy()) for b in StoreData(store, chunk_rows=128).batches()]
    for budget, kind in ((decoded_size, "decoded"), (decoded_size - 1, "packed"), (0, "none")):
        data = StoreData(store, chunk_rows=128, cache_bytes=budget, decoded_bytes=budget)
        assert data.cache_kind == kind
        for _ in range(2):  # filling, then from the cache
            got = [(b.row0, b.F, b.y) for b in data.batches()]
            assert [g[0] for g in got] == [r[0] for r in ref]
            for (_, F, y), (_, F0, y0) in zip(got, ref, strict=True):
                np.testing.assert_array_equal(F, F0)
                np.testing.assert_array_equal(y, y0)
        if kind == "decoded":
            assert data.cache_size == decoded_size and not got[0][1].flags.writeable
            assert got[0][1] is next(data.batches()).F  # the same arrays every pass
            assert [r0 for r0, _ in data.labels()] == [r[0] for r in ref]


def test_abandoned_first_pass_does_not_duplicate_the_cache(small):
    for kw in (dict(cache_bytes=1 << 30), dict(cache_bytes=1 << 30, decoded_bytes=1 << 30)):
        data = StoreData(FeatureStore(small), chunk_rows=128, **kw)
        next(data.batches())  # abandoned after one chunk
        assert sum(len(b) for b in data.batches()) == 600
        assert sum(len(b) for b in data.batches()) == 600


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_models_equal_with_and_without_cache(small, loss):
    """The decoded cache hands out the very features a pass decodes: the same model, the
    same passes, bit for bit on one thread (floating-point operations in the same order);
    on two threads (a cached pass split over them) equal up to the order of the sums."""
    kw = dict(model="svm", C=1.0, loss=loss, max_iter=40 if loss == "squared_hinge" else 12)
    out = {}
    # default (decoded: 600 x 264 bytes), packed only (600 x 32 bytes), none
    for budget in (None, 50_000, 0):
        res = train(small, None, TrainSettings(**kw, cache_bytes=budget), threads=1)
        out[res.report["cache"]["kind"]] = res
    assert set(out) == {"decoded", "packed", "none"}
    ref = out["none"]
    for res in out.values():
        np.testing.assert_array_equal(res.model.W, ref.model.W)
        assert res.report["passes"] == ref.report["passes"]
    two = train(small, None, TrainSettings(**kw), threads=2)
    assert two.report["objective"] == pytest.approx(ref.report["objective"], rel=1e-6)


def test_binary_svm_selection(tmp_path):
    """Two classes: one weight vector per fold (class 1 against class 0), scored by sign;
    the held-out accuracies are those of the folds' own predictions."""
    rng = np.random.default_rng(3)
    n = 300
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(np.int64)
    src = write_parquet(tmp_path / "b.parquet", a=X[:, 0], b=X[:, 1], y=y)
    store = os.fspath(tmp_path / "b.zarr")
    encode(src, store, EncodeSettings(n_features=32, gamma=0.5), ReadSettings(label="y"))
    res = train(store, None, TrainSettings(model="svm", cv_folds=3, max_iter=200))
    cv = res.report["cv"]
    assert res.model.W.shape == (32, 1) and min(cv["mean"].values()) > 0.5
    assert max(cv["mean"].values()) > 0.85
    # the chosen C's fold 0 model, refitted alone on folds 1 and 2, scores fold 0 the same
    F, _ = decoded(store)
    fid = fold_ids(0, 0, n, 3)
    C = res.report["C"]
    tr = fid != 0
    Fs = F[tr].astype(np.float32)
    Ys = np.where(y[tr] == 1, 1.0, -1.0)[:, None]
    Fa = np.hstack([F[tr], np.ones((tr.sum(), 1))])
    W, b, _ = fit_svm(lambda W32, b, C, d: loss_terms([(Fs, Ys)], W32, b, C, "squared_hinge", d),
                      32, 1, C, tol=1e-10, max_iter=2000, gram=Fa.T @ Fa)  # fmt: skip
    acc = np.mean(((F[~tr] @ W[:, 0] + b[0]) > 0).astype(int) == y[~tr])
    # the cross-validation fits stop at 100 x tol (1e-5): one row on the boundary may flip
    assert cv["fold_scores"][C][0] == pytest.approx(acc, abs=1.01 / (~tr).sum())


def test_nearest_warm_start_is_the_nearest_solution_in_log_C():
    sols = {1.0: ("W1", "b1"), 10.0: ("W10", "b10"), 1000.0: ("W1000", "b1000")}
    assert selection.nearest_start(sols, 50.0) == ("W10", "b10")  # 0.7 decades, not 1.3
    assert selection.nearest_start(sols, 0.01) == ("W1", "b1")
    assert selection.nearest_start(sols, 400.0) == ("W1000", "b1000")
    assert selection.nearest_start({}, 1.0) is None
