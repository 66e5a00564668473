"""The SVM's binary problems for K classes, and the class each row's scores decide
(docs/learning.md, Multi-class).

* ``"ovr"`` (one-vs-rest): K problems, class c (+1) against all others (-1); the class of
  the largest score wins.
* ``"ovo"`` (one-vs-one, Knerr, Personnaz & Dreyfus, "Single-layer learning revisited: a
  stepwise procedure for building and training a neural network", Neurocomputing, 1990;
  compared with one-vs-rest by Hsu & Lin, "A comparison of methods for multiclass support
  vector machines", IEEE Trans. Neural Networks, 2002): K (K - 1) / 2 problems, one per
  pair (i, j), i < j, class i (+1) against class j (-1) on the rows of these two classes
  only.  Each pair votes for the class its score favours (a score of exactly 0 votes for
  j); the class with the most votes wins, a tie goes to the tied class of the largest
  summed decision value (the sum over its pairs of the scores in its favour: s for i,
  -s for j), and a tie of those to the first class.

Two classes are one problem either way: class 1 (+1) against class 0 (-1).

``"auto"`` (the default of training) is one-vs-one where the SVM trains in the dual (fewer
rows than features, rfcli.learn.dual: a pair's problem has about 2/K of the rows, so the K
(K - 1) / 2 problems cost less than K one-vs-rest ones on all rows) and one-vs-rest in the
primal (each problem passes over the features' m x m statistics: one-vs-one would cost
about K / 2 times more there).  A model holds the scheme it was trained with.

The per-class scores of one-vs-one (what a model's ``scores`` returns, and the estimators'
``decision_function``) are ``votes + t / (3 (1 + |t|))`` with t the summed decision value:
the second term lies in (-1/3, 1/3) and grows with t, so their arg-max is the rule above.
"""

from __future__ import annotations

import numpy as np

#: the schemes a model holds
SCHEMES = ("ovr", "ovo")
#: the schemes training takes
TRAIN_SCHEMES = ("auto", *SCHEMES)


def resolve(scheme: str, dual: bool) -> str:
    """The scheme trained: ``"auto"`` is one-vs-one in the dual and one-vs-rest in the
    primal (the module); the others as given."""
    if scheme == "auto":
        return "ovo" if dual else "ovr"
    return scheme


class Columns:
    """The binary problems (columns) of ``scheme`` for ``n_classes`` classes: column j is
    class ``pos[j]`` (+1) against class ``neg[j]`` (-1), or against all other classes
    where ``neg[j]`` is -1."""

    def __init__(self, n_classes: int, scheme: str = "ovr"):
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
        K = int(n_classes)
        self.n_classes, self.scheme = K, scheme
        if K == 2:
            self.pos, self.neg = np.array([1]), np.array([0])
        elif scheme == "ovr":
            self.pos, self.neg = np.arange(K), np.full(K, -1)
        else:
            i, j = np.triu_indices(K, 1)
            self.pos, self.neg = i.astype(np.int64), j.astype(np.int64)

    @classmethod
    def from_pairs(cls, n_classes: int, pairs: np.ndarray) -> Columns:
        """One-vs-one columns of the given pairs ((P, 2) class indices, a model file's)."""
        c = cls(n_classes, "ovo")
        c.pos, c.neg = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
        return c

    @property
    def n(self) -> int:
        return len(self.pos)

    @property
    def pairwise(self) -> bool:
        """Whether each column has its own rows (one-vs-one of more than two classes)."""
        return self.scheme == "ovo" and self.n_classes > 2

    @property
    def pairs(self) -> np.ndarray:
        """(P, 2) class indices of the one-vs-one columns."""
        return np.column_stack([self.pos, self.neg])

    def targets(self, idx: np.ndarray, cols: np.ndarray | None = None):
        """(Y, in_problem) of rows of class indices ``idx`` for the columns ``cols`` (all by
        default): Y +-1 (n, c), and whether each row belongs to each column's problem
        (bool (n, c)), None where every row does (one-vs-rest, two classes)."""
        pos = self.pos if cols is None else self.pos[cols]
        Y = np.where(idx[:, None] == pos[None, :], 1.0, -1.0)
        if not self.pairwise:
            return Y, None
        neg = self.neg if cols is None else self.neg[cols]
        return Y, (idx[:, None] == pos[None, :]) | (idx[:, None] == neg[None, :])

    def of_class(self, c: int) -> np.ndarray:
        """The columns whose problem holds the rows of class c (one-vs-one)."""
        return np.flatnonzero((self.pos == c) | (self.neg == c))

    def class_scores(self, S: np.ndarray) -> np.ndarray:
        """Per-class scores (..., K) of column scores ``S`` (..., n): one-vs-rest's as they
        are (two classes: [-s, s]), one-vs-one's votes + t / (3 (1 + |t|)) (the module)."""
        if self.n_classes == 2:
            return np.stack([-S[..., 0], S[..., 0]], axis=-1)
        if not self.pairwise:
            return S
        Epos = np.zeros((self.n, self.n_classes))
        Epos[np.arange(self.n), self.pos] = 1.0
        Eneg = np.zeros((self.n, self.n_classes))
        Eneg[np.arange(self.n), self.neg] = 1.0
        win = (S > 0).astype(np.float64)
        votes = win @ Epos + (1.0 - win) @ Eneg
        t = S @ Epos - S @ Eneg
        return votes + t / (3.0 * (1.0 + np.abs(t)))

    def decide(self, S: np.ndarray) -> np.ndarray:
        """The class index of each row of column scores ``S`` (..., n)."""
        if self.n_classes == 2:
            return (S[..., 0] > 0).astype(np.int64)
        return self.class_scores(S).argmax(axis=-1)
