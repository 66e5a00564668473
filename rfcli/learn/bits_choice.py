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
:data:`CHOICE_FEATURES`) features, at m'/2 and at m'/4 (nested: one Cholesky factor
gives all three), and its score at m_b is extrapolated along s(m) = s_inf + c m^-a
through the two largest:

    s(m_b) = s(m') + (s(m') - s(m'/2)) (1 - (m'/m_b)^a) / (2^a - 1),

a from the ratio 2^-a of the last two doublings' gains, within [:data:`MIN_DECAY`, 1]
(:func:`decay_exponent`): a = 1 the kernel estimate's variance, proportional to 1/m at a
fixed b (Li & Li 2021), a = 1/2 the slowest rate of a random-feature approximation
(Rahimi & Recht, NIPS 2008), where the features are too few for a narrow kernel's
function space.  a is fitted only to gains above :data:`GAIN_SE` of their standard
errors, else 1, from their ratio moved :data:`MOVE_SE` standard errors towards the
faster decay;
beyond the validation's training rows the curve is 1/m (more features span no new
functions on the sample); a loss from m'/2 to m' counts as no gain (:func:`extrapolate`).
phoneme at 2 KiB per row, whose 1/m law chose b = 4 (88.01% on test) over b = 1,
measured on the sample at m_b 0.8826 against 0.8746: the fitted curve chooses b = 1
(91.04%).  The quantization noise's part of the score, which no m
removes, is what the measurement at m' already holds.

Gamma and b are chosen together: every b is scored at the searched gamma (or only at the
given one), then the :data:`REFINE` best of them at gamma * 2^k, k = -1, 0, 1, the grid
widened by up to :data:`MAX_EXTRA` steps while a b's best sits at its edge; the (gamma, b)
pair of the best extrapolated score is kept (a tie: the larger b, fewer features to train
on).  The cost: about 5 + 3 x 2 scores at m' = 512 features of the search's sample (the
nested 256 and 128 from the same factors: triangular solves), each about a quarter of
one bandwidth candidate at 1024 features, independent of the input's size.

Tried and not kept (docs/defaults-report.md's benchmark, 26 sets at 1 and 2 KiB per
row): a = 1/2 always (it changed 21 of the 52 choices) and the fitted a without the
noise and rows bounds both took vehicle at 1 KiB to b = 3 (82.08% against 85.38%); with
them but a from the gains' ratio itself, banana at 2 KiB went to b = 3 (89.96% against
90.57%);
scoring at m_b itself in the dual where that costs at most two search candidates
(samples up to about 1,000 rows) took australian and wisconsin at 1 KiB 1.2 points down.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rfcli.errors import UsageError
from rfcli.names import BIT_CANDIDATES
from rfcli.threads import one_blas_thread

#: features a candidate is scored at, at most (and at a half and a quarter of it)
CHOICE_FEATURES = 512
#: the slowest decay m^-a of a score's gain with the features (:func:`decay_exponent`)
MIN_DECAY = 0.5
#: the standard errors by which both gains must exceed their noise for the curve's fit
GAIN_SE = 2.0
#: the standard errors by which the gains' ratio is moved towards the faster decay
MOVE_SE = 1.5
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
    at_quarter: list[float] = field(default_factory=list)
    decay: list[float] = field(default_factory=list)  # the fitted a of s_inf + c m^-a

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
                    "measured_quarter": vals(c.at_quarter),
                    "decay": c.decay,
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


def decay_exponent(s_full: float, s_half: float, s_quarter: float | None,
                   se: tuple[float, float] = (0.0, 0.0)) -> float:  # fmt: skip
    """The exponent a of the score's curve s(m) = s_inf + c m^-a through the three nested
    measurements at m, m/2 and m/4: the ratio of the last doubling's gain to the one
    before is 2^-a, a held within [:data:`MIN_DECAY`, 1].  a = 1 is the variance of the
    kernel estimate (Li & Li 2021), the regime of many features; a = 1/2 the slowest rate
    of a random-feature approximation of a kernel machine (Rahimi & Recht, "Weighted Sums
    of Random Kitchen Sinks", NIPS 2008), where the features are still too few for the
    kernel's function space (a narrow kernel: phoneme at 2 KiB, b = 1, scored 0.7863,
    0.8041 and 0.8335 at 128, 256 and 512 features, a = 1/2, and 0.8826 at its m_b =
    16384, where the 1/m law gives 0.8620 and a = 1/2 0.8842).  ``se``: the standard
    errors of the two gains (m/2 to m, m/4 to m/2; paired over the sample's rows): the
    curve is fitted only where both gains exceed :data:`GAIN_SE` of them, else a = 1
    (the noise of a small sample's gains is no curve), and from their ratio moved
    :data:`MOVE_SE` standard errors (its relative SE, to first order) towards the faster
    decay: the slow curve is taken only as far as the measurements show it (banana at
    2 KiB, whose b = 3 gained 0.0078 then 0.0107, 2.1 and 3.4 SEs, took a = 1/2 from the
    ratio itself and lost 0.61 test points; moved by one SE, twonorm at 512 B lost 0.59
    points).  Without the quarter, a = 1."""
    g1 = s_full - s_half
    if s_quarter is None:
        return 1.0
    g2 = s_half - s_quarter
    if g1 <= GAIN_SE * se[0] or g2 <= GAIN_SE * se[1] or g1 <= 0 or g2 <= 0:
        return 1.0
    # the ratio MOVE_SE standard errors towards the faster decay (its relative SE, to first
    # order)
    rel = MOVE_SE * float(np.hypot(se[0] / g1, se[1] / g2))
    if rel >= 1.0:
        return 1.0
    return float(min(max(-np.log2(g1 / g2 * (1.0 - rel)), MIN_DECAY), 1.0))


def extrapolate(s_full: float, s_half: float, measured: int, target: int,
                perfect: float = 1.0, s_quarter: float | None = None,
                se: tuple[float, float] = (0.0, 0.0),
                rows: int | None = None) -> float:  # fmt: skip
    """The score at ``target`` features from those at ``measured``, ``measured/2`` and
    (``s_quarter``) ``measured/4``: score = s_inf + c m^-a, a from :func:`decay_exponent`
    (1 without ``s_quarter``; ``se`` the gains' standard errors), through the two largest,
    so that

        s(target) = s(m) + (s(m) - s(m/2)) (1 - (m/target)^a) / (2^a - 1)

    (a loss from half to full counts as no gain).  ``rows``: the validation's training
    rows; beyond them more features span no new functions on the sample and only the
    kernel estimate's variance falls: from ``rows`` on the curve is 1/m (a = 1), its
    doubling's gain there continuing the m^-a one's (and a = 1 throughout where
    ``measured`` reaches ``rows``).  ``perfect``: the score of no loss (accuracy 1, minus
    the MSE 0): the loss ``perfect - score`` falls at most as 1/m (s_inf at ``perfect``,
    no quantization floor), where the curve through two noisy scores that fall faster
    would pass beyond it (faithfuld's MSE fell 3.2x from 256 to 512 features, and the line
    gave b = 1 a negative MSE at 16384)."""
    if target <= measured:
        return s_full
    g = max(s_full - s_half, 0.0)
    knee = target if rows is None else max(rows, measured)
    a = decay_exponent(s_full, s_half, s_quarter, se) if knee > measured else 1.0
    upto = min(target, knee)
    gain = g * (1.0 - (measured / upto) ** a) / (2.0**a - 1.0)
    if target > upto:  # the 1/m law from the knee, with the doubling's gain it has there
        gain += g * (measured / upto) ** a * (1.0 - upto / target)
    return min(s_full + gain, perfect - (perfect - s_full) * measured / target)


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
    score, measured, losses = scored[0], scored[1], scored[-1]
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
                  folds: np.ndarray) -> tuple[tuple, tuple, np.ndarray]:  # fmt: skip
    """The validation scores of :func:`rfcli.learn.bandwidth._score` on all m features of
    ``F``, on its first m/2 and on its first m/4, from one Cholesky factor per fold and
    alpha: with the intercept first, the factor of a leading block of the penalized Gram
    matrix is the leading block of its factor.  All use the penalty ``alpha trace(G)/m``
    of all m features (the features are alike: a block's own trace per feature differs by
    noise).  A sample of fewer rows than features: the dual scores of ``_score``, three
    times.  Returns the three scores, the standard errors of the two gains (m/2 to m, m/4
    to m/2: :func:`paired_se` of the rows' held-out losses, each size at its best alpha)
    and each row's held-out loss on all m features at their best alpha (for the paired
    SEs of :meth:`BitsChoice.to_dict`)."""
    import scipy.linalg as sla

    from rfcli.learn.bandwidth import ALPHAS, FOLDS, _score, row_losses

    n, m = F.shape
    sizes = (m, max(m // 2, 1), max(m // 4, 1))
    if n < m:
        out = [_score(F[:, :k], Y, task, truth, folds, losses=True) for k in sizes]
        rows = [o[2] for o in out]
        return (tuple(o[0] for o in out), (paired_se(rows[1], rows[0]),
                paired_se(rows[2], rows[1])), rows[0])  # fmt: skip
    per_row = np.zeros((len(sizes), len(ALPHAS), n))
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
    best = np.zeros((len(sizes), len(ALPHAS)))
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
            for i, k in enumerate(sizes):
                Lk = L[: k + 1, : k + 1]
                Z = sla.solve_triangular(Lk, Rt[: k + 1], lower=True, check_finite=False)
                W = sla.solve_triangular(Lk.T, Z, lower=False, check_finite=False)
                S = V[:, : k + 1] @ W
                if task == "regression":
                    best[i, j] += -float(np.mean((S[:, 0] - Y[folds == f, 0]) ** 2))
                else:
                    best[i, j] += float(np.mean(S.argmax(axis=1) == truth[folds == f]))
                val = folds == f
                per_row[i, j, val] = row_losses(S, Y[val], task, truth[val])
    js = [int(np.argmax(best[i])) for i in range(len(sizes))]
    rows = [per_row[i, j] for i, j in enumerate(js)]
    scores = tuple(float(best[i, j] / FOLDS) for i, j in enumerate(js))
    return scores, (paired_se(rows[1], rows[0]), paired_se(rows[2], rows[1])), rows[0]


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
    from rfcli.learn.bandwidth import FOLDS, STEP, validation_folds

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
    fit_rows = len(y) * (FOLDS - 1) // FOLDS  # a fold's training rows, about
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
            (s1, s2, s4), se, losses = _score_nested(F, Y, task, truth, folds)
            s2, s4 = (s1, s1) if m1 == m_b else (s2, s4)
            ex = extrapolate(s1, s2, m1, m_b, perfect, s_quarter=s4, se=se, rows=fit_rows)
            a = decay_exponent(s1, s2, s4, se) if m1 < min(m_b, fit_rows) else 1.0
            scored[b][k] = (ex, s1, s2, s4, a, losses)
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
            c.at_quarter.append(scored[b][k][3])
            c.decay.append(scored[b][k][4])
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
