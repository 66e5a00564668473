"""The SVM's one-vs-one scheme (rfcli.learn.multiclass): each pair's column is the binary SVM
of that pair's rows alone, in the dual and the primal; the vote and its tie rule; the cross-
validation scores the votes; model files (old ones are one-vs-rest); the settings and the
estimator."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from rfcli import EncodeSettings, FeatureStore, ReadSettings, encode
from rfcli.errors import UsageError
from rfcli.jobs.train import TrainSettings, train
from rfcli.learn import dual, dual_svm, selection
from rfcli.learn.data import StoreData, fold_ids
from rfcli.learn.model_file import load_model, save_model
from rfcli.learn.multiclass import Columns
from rfcli.learn.svm import fit_svm, loss_terms
from tests.helpers import decoded


def _four_classes(tmp_path_factory, letter_small, m, name):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp(name)
    t = pq.read_table(letter_small)
    t = t.filter(pc.is_in(t["label"], value_set=t["label"].unique()[:4]))
    src = d / "c.parquet"
    pq.write_table(t, src)
    store = os.fspath(d / "c.zarr")
    encode(os.fspath(src), store, EncodeSettings(n_features=m, bits=2, store_chunk_rows=32),
           ReadSettings(label="label"))  # fmt: skip
    return store


@pytest.fixture(scope="module")
def wide(tmp_path_factory, letter_small):
    """The letter rows of 4 classes among the first 600 (92 rows), m = 256: the dual path."""
    return _four_classes(tmp_path_factory, letter_small, 256, "ovo_wide")


@pytest.fixture(scope="module")
def tall(tmp_path_factory, letter_small):
    """The same rows at m = 32: the primal path."""
    return _four_classes(tmp_path_factory, letter_small, 32, "ovo_tall")


def _votes_by_hand(S, pairs, K):
    """The vote of each row of pair scores S (n, P), by loops: most votes, then the largest
    summed decision value of the tied classes, then the first class."""
    out = []
    for s in S:
        votes, total = [0] * K, [0.0] * K
        for (i, j), v in zip(pairs, s, strict=True):
            votes[i if v > 0 else j] += 1
            total[i] += v
            total[j] -= v
        best = max(votes)
        tied = [c for c in range(K) if votes[c] == best]
        out.append(max(tied, key=lambda c: (total[c], -c)))
    return np.array(out)


def _pair_alone(F, y_idx, i, j, C):
    """The dual Newton SVM of the rows of classes i (+1) and j (-1) alone: primal W, b."""
    rows = np.flatnonzero((y_idx == i) | (y_idx == j))
    kern = dual.Kernel(dual.Rows([(0, F[rows].astype(np.float32), y_idx[rows])]))
    Y = np.where(y_idx[rows] == i, 1.0, -1.0)[:, None]
    beta, b, _, rep = dual_svm.svm_newton(kern.K, Y, np.ones(Y.shape, dtype=bool), C)
    assert rep["converged"]
    W, b0 = kern.primal(beta, b)
    return W[:, 0], b0[0]


def test_columns_and_the_tie_rule():
    """Pairs (i, j), i < j; the votes with the documented tie rule, on scores built to tie:
    three classes one vote each (the summed decision values decide), equal sums (the first
    class), a score of exactly 0 (a vote for j)."""
    c = Columns(3, "ovo")
    assert c.pairs.tolist() == [[0, 1], [0, 2], [1, 2]]
    S = np.array([[0.5, -2.0, 1.0],  # votes 1/1/1, sums -1.5, 0.5, 1.0: class 2
                  [1.0, -1.0, 1.0],  # votes 1/1/1, sums 0/0/0: class 0
                  [0.0, 0.0, 0.0],  # 0 votes for j: classes 1, 2, 2: class 2
                  [3.0, 0.1, -0.2]])  # fmt: skip
    np.testing.assert_array_equal(c.decide(S), _votes_by_hand(S, c.pairs, 3))
    assert c.decide(S).tolist() == [2, 0, 2, 0]
    assert Columns(2, "ovo").n == Columns(2, "ovr").n == 1
    assert Columns(5, "ovo").n == 10 and Columns(5, "ovr").n == 5


def test_dual_ovo_columns_are_each_pairs_svm_alone_and_predict_by_votes(wide):
    """Each one-vs-one column of the dual refit is the exact SVM of its pair's rows trained
    alone (to rounding: both are exact Newton solutions); the model's predictions are the
    votes computed by hand, and what a model file gives back."""
    C = 2.0
    res = train(wide, None, TrainSettings(C=C, multiclass="ovo"))
    model = res.model
    assert res.report["solver"] == "dual" and res.report["multiclass"] == "ovo"
    F, y = decoded(wide)
    idx = model.targets.index(y)
    pairs = model.columns.pairs
    assert pairs.tolist() == Columns(4, "ovo").pairs.tolist()
    for p, (i, j) in enumerate(pairs):
        W, b = _pair_alone(F, idx, i, j, C)
        np.testing.assert_allclose(model.W[:, p], W, rtol=0, atol=1e-8 * np.abs(W).max())
        assert model.b[p] == pytest.approx(b, rel=1e-8, abs=1e-10)
    S = model.column_scores(F)
    hand = _votes_by_hand(S, pairs, 4)
    classes = np.asarray(model.targets.classes, dtype=object)
    np.testing.assert_array_equal(model.predict(F), classes[hand])


def test_primal_stacked_folds_and_pairs_equal_separate_fits(tall):
    """The primal's stacked problem of every (fold, pair) column, masked to the fold's
    training rows of the pair, has the optimum of each solved alone on those rows
    (tolerance as tests/learn/test_selection.py's one-vs-rest test)."""
    from rfcli.learn.selection import augmented_gram, fold_stats_pass
    from rfcli.learn.targets import Targets

    data = StoreData(FeatureStore(tall), normalized=False, chunk_rows=16)
    targets = Targets.fit((y for _, y in data.labels()), None, "int")
    cols = Columns(len(targets.classes), "ovo")
    nf, C, m = 3, 0.5, 32
    (stats,) = fold_stats_pass(data, None, 0, 0)

    def stacked(W32, b, C, delta):
        return selection.svm_pass(data, targets, cols, 0, nf, W32, b, C, "squared_hinge", delta)

    gram = augmented_gram(stats) * (1 - 1 / nf) * 0.5
    W, b, rep = fit_svm(stacked, m, nf * cols.n, C, gram=gram, tol=1e-12, max_iter=5000)
    F, y = decoded(tall)
    idx = targets.index(y)
    fid = fold_ids(0, 0, len(F), nf)
    total = 0.0
    for f in range(nf):
        for i, j in cols.pairs:
            tr = (fid != f) & ((idx == i) | (idx == j))
            Fs = F[tr].astype(np.float32)
            Ys = np.where(idx[tr] == i, 1.0, -1.0)[:, None]
            Fa = np.hstack([F[tr], np.ones((tr.sum(), 1))])

            def alone(W32, b, C, d, Fs=Fs, Ys=Ys):
                return loss_terms([(Fs, Ys)], W32, b, C, "squared_hinge", d)

            _, _, r = fit_svm(alone, m, 1, C, tol=1e-12, max_iter=5000, gram=Fa.T @ Fa)
            total += r["objective"]
    assert rep["objective"] == pytest.approx(total, rel=1e-6)


def test_dual_cv_scores_the_folds_votes(wide):
    """C by cross-validation with one-vs-one: each fold's score at the first two C is the
    accuracy of the votes of the pairs trained alone on the fold's other rows (rows within
    1e-9 of a changed vote may differ)."""
    res = train(wide, None, TrainSettings(multiclass="ovo"))
    cv = res.report["cv"]
    F, y = decoded(wide)
    idx = res.model.targets.index(y)
    pairs = Columns(4, "ovo").pairs
    fid = fold_ids(0, 0, len(F), 5)
    for C in cv["grid"][:2]:
        for f in range(5):
            tr, te = np.flatnonzero(fid != f), np.flatnonzero(fid == f)
            S = np.empty((len(te), len(pairs)))
            for p, (i, j) in enumerate(pairs):
                W, b = _pair_alone(F[tr], idx[tr], i, j, C)
                S[:, p] = F[te] @ W + b
            close = int(np.sum(np.abs(S).min(axis=1) <= 1e-9))
            acc = float(np.mean(_votes_by_hand(S, pairs, 4) == idx[te]))
            assert abs(cv["fold_scores"][C][f] - acc) <= close / len(te) + 1e-12, (C, f)


def test_dual_ovo_does_not_depend_on_its_batches_or_kept_blocks(wide, monkeypatch):
    """The one-vs-one columns' Newton systems solved one column per batch, and the kernel
    blocks gathered anew at every step instead of kept: the same model, bit for bit (a
    column's systems and products are its own whatever the batch)."""
    s = TrainSettings(multiclass="ovo", cv_folds=3)
    kept = train(wide, None, s).model
    monkeypatch.setattr(dual_svm, "BATCH_BYTES", 1)
    one = train(wide, None, s).model
    monkeypatch.setattr(dual_svm, "KEEP_BYTES", 0)
    gathered = train(wide, None, s).model
    for other in (one, gathered):
        assert np.array_equal(kept.W, other.W) and np.array_equal(kept.b, other.b)


def test_dual_ovo_batched_lu_and_cholesky_give_one_model(wide, monkeypatch):
    """The narrow columns' Newton systems solved by the batched LU (the default at this
    size) and one by one by Cholesky (every size above BATCH_MAX = 0): the same model to
    rounding (two factorizations of the same systems: not bit for bit)."""
    s = TrainSettings(multiclass="ovo", cv_folds=3)
    lu = train(wide, None, s)
    monkeypatch.setattr(dual_svm, "BATCH_MAX", 0)
    chol = train(wide, None, s)
    assert lu.report["C"] == chol.report["C"]
    assert lu.report["iterations"] == chol.report["iterations"]
    scale = np.abs(lu.model.W).max()
    np.testing.assert_allclose(chol.model.W, lu.model.W, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(chol.model.b, lu.model.b, rtol=0, atol=1e-9 * max(1.0, scale))


@pytest.mark.parametrize("which", ["wide", "tall"])
def test_ovo_models_do_not_depend_on_the_threads(which, request):
    store = request.getfixturevalue(which)
    s = TrainSettings(multiclass="ovo", cv_folds=3)
    one = train(store, None, s, threads=1).model
    three = train(store, None, s, threads=3).model
    assert np.array_equal(one.W, three.W) and np.array_equal(one.b, three.b)


def test_two_classes_are_one_problem_either_way(tmp_path, letter_small):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(letter_small)
    t = t.filter(pc.is_in(t["label"], value_set=t["label"].unique()[:2]))
    pq.write_table(t, tmp_path / "b.parquet")
    store = os.fspath(tmp_path / "b.zarr")
    encode(os.fspath(tmp_path / "b.parquet"), store, EncodeSettings(n_features=32, bits=2),
           ReadSettings(label="label"))  # fmt: skip
    a = train(store, None, TrainSettings(multiclass="ovr")).model
    b = train(store, None, TrainSettings(multiclass="ovo")).model
    assert a.W.shape[1] == 1 and np.array_equal(a.W, b.W) and np.array_equal(a.b, b.b)


def test_model_files_keep_the_scheme_and_old_files_are_ovr(wide, tmp_path):
    F, _ = decoded(wide)
    res = train(wide, None, TrainSettings(C=1.0, multiclass="ovo"))
    path = os.fspath(tmp_path / "ovo.npz")
    save_model(path, res.model, res.encoder)
    back, _, _ = load_model(path)
    assert back.multiclass == "ovo"
    np.testing.assert_array_equal(back.columns.pairs, res.model.columns.pairs)
    np.testing.assert_array_equal(back.scores(F), res.model.scores(F))
    # a file written before the scheme existed: no multiclass field, no pairs
    ovr = train(wide, None, TrainSettings(C=1.0, multiclass="ovr")).model
    old = os.fspath(tmp_path / "old.npz")
    save_model(old, ovr, res.encoder)
    with np.load(old, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["__meta__"]))
    del meta["model"]["multiclass"]
    arrays["__meta__"] = np.array(json.dumps(meta))
    np.savez(old, **arrays)
    back, _, _ = load_model(old)
    assert back.multiclass == "ovr" and back.W.shape[1] == 4
    np.testing.assert_array_equal(back.predict(F), ovr.predict(F))


def test_auto_is_ovo_in_the_dual_and_ovr_in_the_primal(wide, tall):
    """The default scheme follows the solver: one-vs-one on the store with fewer rows than
    features (the dual), one-vs-rest on the one with more; the same models as asked for."""
    for store, scheme, solver in ((wide, "ovo", "dual"), (tall, "ovr", None)):
        auto = train(store, None, TrainSettings(C=1.0))
        given = train(store, None, TrainSettings(C=1.0, multiclass=scheme))
        assert auto.model.multiclass == scheme and auto.report["multiclass"] == scheme
        assert auto.report.get("solver") == solver
        assert np.array_equal(auto.model.W, given.model.W)


def test_a_bad_scheme_is_refused_naming_it(wide):
    with pytest.raises(UsageError, match="multiclass"):
        TrainSettings(multiclass="ova").validate()
    from rfcli.cli import cli

    r = CliRunner().invoke(cli, ["train", wide, "--multiclass", "ova", "-o", "x.npz"])
    assert r.exit_code == 2 and "--multiclass" in r.output and "Traceback" not in r.output


def test_estimator_ovo(tmp_path):
    """RandomFeatureSVC(multiclass="ovo"): per-class decision values whose arg-max is the
    prediction (the votes), a parameter that round-trips through a model file, and two
    classes unchanged."""
    from sklearn.datasets import make_blobs

    from rfcli.sklearn import RandomFeatureSVC

    X, y = make_blobs(240, n_features=3, centers=4, cluster_std=2.0, random_state=1)
    clf = RandomFeatureSVC(n_features=128, gamma=0.3, multiclass="ovo").fit(X, y)
    assert clf.model_.multiclass == "ovo" and clf.model_.W.shape[1] == 6
    D = clf.decision_function(X)
    assert D.shape == (240, 4)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[D.argmax(axis=1)])
    path = clf.save(os.fspath(tmp_path / "clf.npz"))
    back = RandomFeatureSVC.load(path)
    assert back.get_params()["multiclass"] == "ovo"
    np.testing.assert_array_equal(back.decision_function(X), D)
    assert clf.score(X, y) > 0.8
    yb = (y > 1).astype(int)
    a = RandomFeatureSVC(n_features=64, gamma=0.3).fit(X, yb).decision_function(X)
    b = RandomFeatureSVC(n_features=64, gamma=0.3, multiclass="ovo").fit(X, yb)
    np.testing.assert_array_equal(a, b.decision_function(X))
