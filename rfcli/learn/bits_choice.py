"""Bits per feature chosen for a storage budget (``bits='auto'`` with ``row_bytes=N``;
docs/methods.md, Bits for a budget).

At N bytes per row a quantizer of b bits holds m_b = floor(8N / b) features: more
features (lower variance of the kernel estimate) or more bits (less quantization noise,
which acts as a ridge the learners cannot take away).  Which split wins depends on the
data (Li & Li, "Quantization Algorithms for Random Fourier Features", ICML 2021, compare
(m, b) at equal bits per row), so it is chosen by the validation the bandwidth search
uses (:mod:`rfcli.learn.bandwidth`): the same labelled row sample, folds and ridge
learner, on the values the store would hold (quantized at b bits, decoded).

The candidates' m_b run to 8N features, far beyond what a search can afford (the ridge's
cost grows as m^2 per row, m^3 per solve), so each b is scored at m' = min(m_b,
:data:`CHOICE_FEATURES`) features and at m'/2, and its score at m_b is extrapolated with
the kernel estimate's variance, proportional to 1/m at a fixed b (Li & Li 2021): a score
s(m) = s_inf + c/m through the two measurements gives

    s(m_b) = s(m') + (s(m') - s(m'/2)) (1 - m'/m_b),

at most one more doubling's gain (a loss from m'/2 to m', noise, counts as none).  The
quantization noise's part of the score, which no m removes, is what the measurement at m'
already holds.

Gamma and b are chosen together: every b is scored at the searched gamma (or only at the
given one), then the :data:`REFINE` best of them at gamma * 2^k, k = -1, 0, 1, the grid
widened by up to :data:`MAX_EXTRA` steps while a b's best sits at its edge; the (gamma, b)
pair of the best extrapolated score is kept (a tie: the larger b, fewer features to train
on).  The cost: about 5 + 3 x 2 scores at m' = 512 and 256 features of the search's
sample, each about a quarter of one bandwidth candidate at 1024 features, independent of
the input's size.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rfcli.errors import UsageError
from rfcli.threads import one_blas_thread

#: the bit widths compared (those the quantizer takes)
BIT_CANDIDATES = (1, 2, 3, 4, 8)
#: features a candidate is scored at, at most (and at half of it)
CHOICE_FEATURES = 512
#: gamma steps either side of the searched gamma scored for every b
NEIGHBOURS = 1
#: steps added beyond an edge of a b's gamma grid, at most, on each side
MAX_EXTRA = 2
#: bit widths scored around the searched gamma: the best ones at it
REFINE = 3


def features_for(row_bytes: int, bits: float) -> int:
    """The features m = floor(8 N / b) that ``row_bytes`` N hold at ``bits`` per feature."""
    return int(8 * row_bytes // bits)


@dataclass
class Candidate:
    """One bit width: its features at the budget, the gammas scored, the measured scores
    (at ``measured_features`` and half of it; equal when m_b is at most CHOICE_FEATURES)
    and the extrapolated score at m_b (``scores``: per gamma; higher is better)."""

    bits: int
    features: int
    measured_features: int
    gammas: list[float | None] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)  # k of gamma * 2^k
    scores: list[float] = field(default_factory=list)  # extrapolated to `features`
    at_measured: list[float] = field(default_factory=list)
    at_half: list[float] = field(default_factory=list)

    #: each sample row's held-out loss at the best gamma (measured at measured_features,
    #: scaled to the extrapolated score: :func:`at_budget`)
    losses: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def best(self) -> int:
        """The index of the best gamma (a tie: the one nearest the searched gamma)."""
        return max(range(len(self.scores)), key=lambda i: (self.scores[i], -abs(self.steps[i])))

    @property
    def score(self) -> float:
        """The extrapolated score at the best gamma."""
        return self.scores[self.best]

    @property
    def se(self) -> float:
        """The standard error of the score (its rows' losses' SE of the mean)."""
        n = len(self.losses)
        return float(self.losses.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0


@dataclass
class BitsChoice:
    bits: int
    features: int
    gamma: float | None
    metric: str  # accuracy or mse
    row_bytes: int
    candidates: list[Candidate]
    rows: int
    seconds: float
    #: bit widths not scored: {"bits", "features", "reason"} (the default train would not
    #: fit their m in the memory budget)
    left_out: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The choice as the store's metadata keeps it (MSE as a positive number), with each
        candidate's standard error (``se``) and the paired SE of its difference to the
        chosen one (``diff_se``, :func:`best_choice`)."""
        sign = 1.0 if self.metric == "accuracy" else -1.0
        chosen = next(c for c in self.candidates if c.bits == self.bits)

        def vals(v):
            return [sign * x for x in v]

        return {
            "row_bytes": self.row_bytes,
            "bits": self.bits,
            "features": self.features,
            "gamma": self.gamma,
            "metric": self.metric,
            "sample_rows": self.rows,
            "search_features": CHOICE_FEATURES,
            "rule": "best_score",
            "candidates": [
                {
                    "bits": c.bits,
                    "features": c.features,
                    "gamma": c.gammas[c.best],
                    "score": sign * c.score,
                    "se": c.se,
                    "diff_se": paired_se(c.losses, chosen.losses),
                    "measured_features": c.measured_features,
                    "gammas": c.gammas,
                    "scores": vals(c.scores),
                    "measured": vals(c.at_measured),
                    "measured_half": vals(c.at_half),
                }
                for c in self.candidates
            ],
            "left_out": self.left_out,
        }  # no timings: the store's metadata is the same on every run


def candidate_bits(row_bytes: int, allowed: Callable[[int], bool]) -> list[int]:
    """The bit widths of :data:`BIT_CANDIDATES` the quantizer takes (``allowed``) that
    leave at least one feature in ``row_bytes``."""
    out = [b for b in BIT_CANDIDATES if allowed(b) and features_for(row_bytes, b) >= 1]
    if not out:
        raise UsageError(f"row_bytes={row_bytes}: no bit width of {BIT_CANDIDATES} fits")
    return out


def extrapolate(s_full: float, s_half: float, measured: int, target: int,
                perfect: float = 1.0) -> float:  # fmt: skip
    """The score at ``target`` features from those at ``measured`` and ``measured/2``
    (score = s_inf + c/m; a loss from half to full counts as no gain).  ``perfect``: the
    score of no loss (accuracy 1, minus the MSE 0): the loss ``perfect - score`` falls at
    most as 1/m (s_inf at ``perfect``, no quantization floor), where the line through two
    noisy scores that fall faster would pass beyond it (faithfuld's MSE fell 3.2x from 256
    to 512 features, and the line gave b = 1 a negative MSE at 16384)."""
    if target <= measured:
        return s_full
    out = s_full + max(s_full - s_half, 0.0) * (1.0 - measured / target)
    return min(out, perfect - (perfect - s_full) * measured / target)


def paired_se(a: np.ndarray, b: np.ndarray) -> float:
    """The standard error of the mean of ``a - b``: the rows' held-out losses of two
    candidates on the same rows and folds (their difference's noise, which the rows they
    share do not add to)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0


def at_budget(scored: tuple, perfect: float) -> np.ndarray:
    """The rows' held-out losses of a scored (extrapolated score, measured score, half,
    losses at the measured m), scaled to the extrapolated score: by the ratio of its loss
    ``perfect - score`` to the measured one, so that their mean is the loss at m_b and the
    standard errors compared with the extrapolated scores are on their scale (faithfuld at
    2 KiB: b = 1's MSE extrapolated 32x below the measured one, whose SE dwarfed the
    differences at m_b)."""
    score, measured, _, losses = scored
    gap = perfect - measured
    return losses * ((perfect - score) / gap) if gap > 0 else losses


def best_choice(cands: list[Candidate]) -> Candidate:
    """The candidate kept: the best validation score at the budget (ties: more bits).  Each
    candidate's SE and the paired SE of its difference to this one are reported beside it
    (:meth:`BitsChoice.to_dict`).  A one-standard-error rule leaning to more features (the
    smallest b no larger b beats by more than the paired SE) was tried and not kept: on
    the benchmark of docs/defaults-report.md it moved mammographic by +0.96 / -0.48 pt at
    1 / 2 KiB per row and vehicle by -3.30 / +0.47 pt (median about 0, one set hurt by
    more than 0.3 pt)."""
    return max(cands, key=lambda c: (c.score, c.bits))


def _score_nested(F: np.ndarray, Y: np.ndarray, task: str, truth: np.ndarray,
                  folds: np.ndarray) -> tuple[float, float, np.ndarray]:  # fmt: skip
    """The validation scores of :func:`rfcli.learn.bandwidth._score` on all m features of
    ``F`` and on its first m/2, from one Cholesky factor per fold and alpha: with the
    intercept first, the factor of a leading block of the penalized Gram matrix is the
    leading block of its factor.  Both use the penalty ``alpha trace(G)/m`` of all m
    features (the features are alike: the half's own trace per feature differs by noise).
    A sample of fewer rows than features: the dual scores of ``_score``, twice.  Also each
    row's held-out loss on all m features at their best alpha (for the paired SEs of
    :meth:`BitsChoice.to_dict`)."""
    import scipy.linalg as sla

    from rfcli.learn.bandwidth import ALPHAS, FOLDS, _score, row_losses

    n, m = F.shape
    h = max(m // 2, 1)
    if n < m:
        s1, _, losses = _score(F, Y, task, truth, folds, losses=True)
        return s1, _score(F[:, :h], Y, task, truth, folds)[0], losses
    per_row = np.zeros((len(ALPHAS), n))
    Fa = np.column_stack([np.ones(n), F]).astype(np.float32)  # the unpenalized intercept first
    parts = []
    for f in range(FOLDS):  # float32 products, as _score
        A, B = Fa[folds == f], Y[folds == f]
        parts.append(
            ((A.T @ A).astype(np.float64), (A.T @ B.astype(np.float32)).astype(np.float64))
        )
    G = sum(p[0] for p in parts)
    R = sum(p[1] for p in parts)
    scale = max(np.trace(G[1:, 1:]) / m, 1e-12)
    best = np.zeros((2, len(ALPHAS)))
    diag = np.arange(1, m + 1)
    for f in range(FOLDS):
        Gt, Rt = G - parts[f][0], R - parts[f][1]
        V = Fa[folds == f].astype(np.float64)
        for j, a in enumerate(ALPHAS):
            H = Gt.copy()
            H[diag, diag] += a * scale
            H[0, 0] += 1e-9 * max(H[0, 0], 1.0)
            try:
                L = sla.cholesky(H, lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                best[:, j] += -np.inf
                continue
            for i, k in enumerate((m + 1, h + 1)):
                Lk = L[:k, :k]
                Z = sla.solve_triangular(Lk, Rt[:k], lower=True, check_finite=False)
                W = sla.solve_triangular(Lk.T, Z, lower=False, check_finite=False)
                S = V[:, :k] @ W
                if task == "regression":
                    best[i, j] += -float(np.mean((S[:, 0] - Y[folds == f, 0]) ** 2))
                else:
                    best[i, j] += float(np.mean(S.argmax(axis=1) == truth[folds == f]))
                if i == 0:
                    val = folds == f
                    per_row[j, val] = row_losses(S, Y[val], task, truth[val])
    j = int(np.argmax(best[0]))
    return float(best[0, j] / FOLDS), float(best[1].max() / FOLDS), per_row[j]


def choose_bits(
    features: Callable[[float, int, int], np.ndarray],
    y: np.ndarray,
    gamma: float | None,
    row_bytes: int,
    bits: list[int],
    seed: int,
    widen: bool = True,
    fits: Callable[[int, str, int], str | None] | None = None,
) -> BitsChoice:
    """Choose (gamma, b) on the labelled sample: ``features(gamma, b, m)`` gives the
    sample's m features at ``gamma`` quantized at b bits and decoded, ``y`` its labels
    (float: regression; else classes); ``gamma`` the searched (``widen``) or given one
    (then only it is scored; None: a map without a bandwidth).  ``fits(m, task, k)``: None
    when the default learner of the task trains m features (k outputs) in the memory
    budget, else why not; the bit widths whose m does not fit are left out (before any
    scoring), and refused when none is left."""
    from rfcli.learn.bandwidth import STEP, validation_folds

    t0 = time.perf_counter()
    Y, task, truth, folds = validation_folds(y, seed, "bits='auto'")
    left_out = []
    if fits is not None:
        k = 1 if task == "regression" or Y.shape[1] == 2 else Y.shape[1]
        keep = []
        for b in bits:
            why = fits(features_for(row_bytes, b), task, k)
            if why is None:
                keep.append(b)
            else:
                left_out.append({"bits": b, "features": features_for(row_bytes, b),
                                 "reason": why})  # fmt: skip
        if not keep:
            raise UsageError(
                f"row_bytes={row_bytes}: no bit width of {tuple(bits)} leaves features the "
                f"default learner fits in memory ({left_out[-1]['reason']}); lower row_bytes "
                "or raise memory"
            )
        bits = keep
    perfect = 1.0 if task == "classification" else 0.0
    cands = []
    widen = widen and gamma is not None

    scored: dict[int, dict[int, tuple]] = {b: {} for b in bits}

    def score(b: int, k: int) -> float:
        """The extrapolated score of b at gamma * 2^k (kept with the two measured)."""
        if k not in scored[b]:
            m_b = features_for(row_bytes, b)
            m1 = min(m_b, CHOICE_FEATURES)
            g = None if gamma is None else gamma * STEP**k
            F = np.asarray(features(g, b, m1), dtype=np.float64)
            s1, s2, losses = _score_nested(F, Y, task, truth, folds)
            s2 = s1 if m1 == m_b else s2
            scored[b][k] = (extrapolate(s1, s2, m1, m_b, perfect), s1, s2, losses)
        return scored[b][k][0]

    def refine(b: int) -> None:
        """b's gammas around the searched one, the grid widened while its best is at an edge."""
        lo, hi = -NEIGHBOURS, NEIGHBOURS
        for k in range(lo, hi + 1):
            score(b, k)
        while True:
            best = max(scored[b], key=lambda k: (scored[b][k][0], -abs(k)))
            if best == lo and lo > -NEIGHBOURS - MAX_EXTRA:
                lo -= 1
                score(b, lo)
            elif best == hi and hi < NEIGHBOURS + MAX_EXTRA:
                hi += 1
                score(b, hi)
            else:
                return

    with one_blas_thread():  # the same floating-point sums whatever the threads or engine
        for b in bits:  # every b at the searched gamma, then the best REFINE around it
            score(b, 0)
        if widen:
            ranked = sorted(bits, key=lambda b: (scored[b][0][0], b), reverse=True)
            for b in ranked[:REFINE]:
                refine(b)
    for b in bits:
        m_b = features_for(row_bytes, b)
        c = Candidate(b, m_b, min(m_b, CHOICE_FEATURES))
        for k in sorted(scored[b]):
            c.gammas.append(None if gamma is None else float(gamma * STEP**k))
            c.steps.append(k)
            c.scores.append(scored[b][k][0])
            c.at_measured.append(scored[b][k][1])
            c.at_half.append(scored[b][k][2])
        c.losses = at_budget(scored[b][c.steps[c.best]], perfect)
        cands.append(c)
    win = best_choice(cands)
    return BitsChoice(
        bits=win.bits,
        features=win.features,
        gamma=win.gammas[win.best],
        metric="accuracy" if task == "classification" else "mse",
        row_bytes=int(row_bytes),
        candidates=cands,
        rows=len(y),
        seconds=time.perf_counter() - t0,
        left_out=left_out,
    )
