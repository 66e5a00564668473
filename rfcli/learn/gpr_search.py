"""Where GP regression looks for its lengthscales: bounds from a row sample, and global scans
of the log marginal likelihood (LML) with the signal and noise variances profiled out.

Bounds (standardized inputs, :func:`data_bounds`): below the nearest-neighbour spacing of the
sample the data cannot tell a lengthscale from white noise, above a few times the data's
extent the kernel is flat over the data (every larger lengthscale gives the same fit).

Scans (:func:`scan`): for a lengthscale (vector) ``ell`` the kernel matrix is
``s2 M(ell) + lambda I`` on an r-dimensional space (plus ``lambda`` alone on the other
``n - r`` dimensions); one eigendecomposition ``M = Q diag(mu) Q'`` makes the LML a cheap
function of (s2, lambda) for that ``ell``:

    LML = -1/2 sum_i [z_i^2 / (s2 mu_i + lambda) + log(s2 mu_i + lambda)]
          - 1/2 [rest / lambda + (n - r) log lambda] - n/2 log 2 pi,     z = Q' z0,

maximized over a grid of (s2, lambda) and then by L-BFGS-B (:func:`profile`).  Two sources
of ``M``: the exact kernel on a bounded row sample (:func:`exact_profile`, any lengthscale,
O(k^3) for k sample rows) and the Gauss-Legendre statistics of the full data
(:func:`glf_profile`, ``M = P W(ell) P'`` in the eigenbasis of G, valid where the quadrature
rule meets its tolerance).  The same grid scan and its restarts are what Hilbert-space and
quadrature GPs allow because their features are fixed and only diagonal weights change
(Solin & Sarkka 2020; Riutort-Mayol et al. 2023).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rfcli.learn.boxqn import FTOL
from rfcli.learn.gpr_optimize import LOG2PI
from rfcli.learn.tiles import weighted_gram
from rfcli.maps.bandwidth import distances
from rfcli.progress import NullProgress, Progress
from rfcli.threads import tiled

#: upper lengthscale bound = HI_FACTOR x the sample's extent (per dimension with ARD)
HI_FACTOR = 3.0
#: scan grid density (lengthscales per decade) and size limits
PER_DECADE = 6
MIN_GRID, MAX_GRID = 7, 31
#: :func:`profile`'s grids in log(lambda / s2): the first one's points, each finer grid's
#: refinement of the spacing (2 x ETA_ZOOM + 1 points around the best), the spacing
#: at which it stops
ETA_GRID, ETA_ZOOM, ETA_STEP = 65, 8, 1e-4


def data_bounds(X: np.ndarray, ard: bool) -> np.ndarray:
    """Lengthscale bounds from a row sample X (k, d) of the (standardized) inputs: (d, 2) with
    ``ard`` (per dimension), else (1, 2).

    Isotropic: lo = the median over sample rows of the Euclidean distance to the nearest other
    distinct row, hi = HI_FACTOR x the largest column range.  ARD, dimension j: lo = the median
    over rows of the gap to the nearest other distinct value of column j (with the other
    lengthscales large, points that differ in x_j only are the ones that inform l_j),
    hi = HI_FACTOR x the range of column j.  A constant column gets (1, 1)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or len(X) < 2:
        raise ValueError("data_bounds needs at least 2 sample rows")
    width = X.max(0) - X.min(0)
    if not ard:
        hi = HI_FACTOR * float(width.max())
        lo = _median_nn(X)
        return np.array([_ordered(lo, hi)])
    out = []
    for j in range(X.shape[1]):
        hi = HI_FACTOR * float(width[j])
        out.append(_ordered(_median_gap(X[:, j]), hi))
    return np.array(out)


def _ordered(lo: float, hi: float) -> tuple[float, float]:
    if not hi > 0:  # constant input: its lengthscale does not matter
        return 1.0, 1.0
    if not lo > 0:  # cannot happen with two distinct values; keep a sane range anyway
        lo = hi / 100
    return float(min(lo, hi / 2)), float(hi)


def _median_nn(X: np.ndarray) -> float:
    U = np.unique(X, axis=0)
    if len(U) < 2:
        return 0.0
    D2 = distances(U)  # squared, from the centred rows (as the encoder's heuristics)
    np.fill_diagonal(D2, np.inf)
    D2[D2 == 0] = np.inf
    nn = np.sqrt(D2.min(1))
    # rows of X share the distance of their distinct value
    _, inv = np.unique(X, axis=0, return_inverse=True)
    return float(np.median(nn[inv.ravel()]))


def _median_gap(x: np.ndarray) -> float:
    u, inv = np.unique(x, return_inverse=True)
    if len(u) < 2:
        return 0.0
    gaps = np.diff(u)
    nn = np.minimum(np.r_[np.inf, gaps], np.r_[gaps, np.inf])
    return float(np.median(nn[inv.ravel()]))


def lengthscale_grid(lo: float, hi: float, per_decade: int = PER_DECADE) -> np.ndarray:
    """Log-spaced lengthscales from lo to hi (both included)."""
    if hi <= lo:
        return np.array([lo])
    k = int(np.clip(np.ceil(per_decade * np.log10(hi / lo)) + 1, MIN_GRID, MAX_GRID))
    return np.geomspace(lo, hi, k)


def profile(mu, z2, rest: float, n: int, s2_bounds, lam_bounds):
    """max over (log s2, log lambda) in bounds of the LML above: (lml, log s2, log lambda).
    With ``eta = lambda / s2`` the LML is ``g = -(q0 / s2 + n log s2 + l0 + n log 2 pi) / 2``
    for ``q0 = sum z_i^2 / (mu_i + eta) + rest / eta`` and ``l0 = sum log(mu_i + eta) +
    (n - r) log eta``: concave in log s2, largest at ``s2 = q0 / n`` within the interval that
    keeps s2 and lambda in their bounds (as rfcli.learn.gpr_optimize's signal_profile).
    What is left is a function of ``u = log eta`` alone: its largest value on a grid of
    ETA_GRID points, then on finer grids around the best point (ETA_ZOOM x finer each, down
    to a spacing of ETA_STEP), then the root of its slope ``dg/du = -(q0' / s2 + (n - q0 /
    s2) dlog s2/du + l0') / 2`` in that last bracket by regula falsi (the values alone
    locate a flat maximum only to about the square root of their rounding).  All in array
    operations: 0.4-1.4 ms for 500 eigenvalues, where L-BFGS-B over (log s2, log lambda)
    from a 9 x 13 grid took 4-8 ms holding the GIL (60 of them in a 3-input scan)."""
    mu = np.maximum(np.asarray(mu, dtype=np.float64), 0.0)
    z2 = np.asarray(z2, dtype=np.float64)
    r = len(mu)
    s2_lo, s2_hi = (float(v) for v in s2_bounds)
    lam_lo, lam_hi = (float(v) for v in lam_bounds)

    def at(u: np.ndarray):
        """(g, s2, dg/du) at the points u."""
        eta = np.exp(u)
        e = mu + eta[:, None]
        q0 = np.sum(z2 / e, axis=1) + rest / eta
        l0 = np.sum(np.log(e), axis=1) + (n - r) * u
        lo_s2 = np.maximum(s2_lo, lam_lo / eta)
        hi_s2 = np.minimum(s2_hi, lam_hi / eta)
        s2 = np.clip(q0 / n, lo_s2, hi_s2)
        # d log s2 / du: 0 inside or on an s2 bound, -1 on a lambda bound (s2 = lambda / eta)
        on_lam = ((s2 == lo_s2) & (lam_lo / eta > s2_lo)) | ((s2 == hi_s2) & (lam_hi / eta < s2_hi))
        dq = -eta * np.sum(z2 / (e * e), axis=1) - rest / eta
        dl = eta * np.sum(1.0 / e, axis=1) + (n - r)
        slope = -0.5 * (dq / s2 - np.where(on_lam, n - q0 / s2, 0.0) + dl)
        return -0.5 * (q0 / s2 + n * np.log(s2) + l0 + n * LOG2PI), s2, slope

    lo, hi = np.log(lam_lo / s2_hi), np.log(lam_hi / s2_lo)
    u = np.linspace(lo, hi, ETA_GRID)
    step = (hi - lo) / (ETA_GRID - 1)
    while True:
        vals, s2, slope = at(u)
        i = int(np.argmax(vals))
        best = (float(vals[i]), float(u[i]), float(s2[i]))
        if not step > ETA_STEP:
            break
        u = np.linspace(max(best[1] - step, lo), min(best[1] + step, hi), 2 * ETA_ZOOM + 1)
        step /= ETA_ZOOM
    # the slope's root between the best point's neighbours, where it changes sign
    j = [k for k in (i - 1, i) if 0 <= k < len(u) - 1 and slope[k] > 0 > slope[k + 1]]
    if j:
        a, b = u[j[0]], u[j[0] + 1]
        fa, fb = slope[j[0]], slope[j[0] + 1]
        side, last = 0, None
        for _ in range(50):
            c = (a * fb - b * fa) / (fb - fa)
            if not a < c < b or c == last:
                break
            last = c
            vc, s2c, fc = (float(x[0]) for x in at(np.array([c])))
            if vc > best[0]:
                best = (vc, c, s2c)
            if fc == 0:
                break
            if fc > 0:  # the maximum lies above c (Illinois: halve a stale end's slope)
                a, fa = c, fc
                fb = fb / 2 if side > 0 else fb
                side = 1
            else:
                b, fb = c, fc
                fa = fa / 2 if side < 0 else fa
                side = -1
    lml, u_best, s2_best = best
    return lml, float(np.log(s2_best)), float(np.log(s2_best) + u_best)


def eig_projection(M: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues ``mu`` of the symmetric matrix M and the projections ``z = U' y`` of y on
    its eigenvectors U, without forming U: M is reduced to a tridiagonal T = Q' M Q by
    Householder reflections (LAPACK dsytrd), the reflections are applied to y, and
    z = W' Q' y for T's eigenvectors W.  About 4/3 r^3 flops where ``eigh`` with vectors
    takes about twice that (8 against 15 ms at r = 500 on one thread; SciPy's wrappers of
    dsytrd and of the tridiagonal solver hold the GIL, so points evaluated at once on
    several threads take ``eigh`` instead: :func:`_eig_sums`).  Eigenvectors of a repeated
    eigenvalue are not unique, and neither are their z_i; sums of z_i^2 over the
    eigenspace (what the LML uses) are."""
    from scipy.linalg import eigh_tridiagonal
    from scipy.linalg.lapack import dormqr, dsytrd, dsytrd_lwork

    M = np.asarray(M, dtype=np.float64)
    v = np.array(y, dtype=np.float64)
    n = len(v)
    if n < 3:
        mu, U = np.linalg.eigh(M)
        return mu, U.T @ v
    lwork, _ = dsytrd_lwork(n, lower=1)
    c, d, e, tau, info = dsytrd(M, lower=1, lwork=int(lwork))
    if info != 0:
        raise np.linalg.LinAlgError(f"dsytrd failed (info {info})")
    # Q = H_0 H_1 ... H_{n-2}, H_i = I - tau_i h h', h = (0.., 1 at i+1, c[i+2:, i]): on
    # rows 1.. these are the reflectors of a QR factorization of c[1:, :-1] as dgeqrf stores
    # them, so Q'v is one dormqr call (0.3 against 2-4 ms for the reflectors one at a time
    # in Python at n = 563)
    out, _, info = dormqr("L", "T", c[1:, :-1], tau, v[1:, None], lwork=n)
    if info != 0:
        raise np.linalg.LinAlgError(f"dormqr failed (info {info})")
    v[1:] = out[:, 0]
    mu, W = eigh_tridiagonal(d, e)
    return mu, W.T @ v


def _eig_sums(M: np.ndarray, z: np.ndarray, concurrent: bool):
    """(eigenvalues of M, projections of z on its eigenvectors): by NumPy's ``eigh`` where
    points are evaluated ``concurrent``-ly (a scan's line on the tile threads: NumPy's
    LAPACK calls release the GIL, SciPy's hold it), else by :func:`eig_projection` (half
    the flops).  Which one follows from the caller, never from the thread count."""
    if concurrent:
        mu, U = np.linalg.eigh(M)
        return mu, U.T @ z
    return eig_projection(M, z)


#: the most the exact profile's squared differences may take (:func:`exact_profile`): 500
#: rows of 3 inputs take 6 MB
DIFFERENCES_BYTES = 1 << 27


def exact_profile(X, y, kernel: str, s2_bounds, lam_bounds, concurrent: bool = True) -> Callable:
    """LML profile of the exact GP on rows X, standardized targets y: ``ell -> (lml, log s2,
    log lambda)`` (ell: one value, or one per input); ``concurrent``: see :func:`_eig_sums`."""
    from rfcli.maps.exact import correlation, scaled_sq_dists, scaled_sum, squared_differences

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    # the squared differences formed once (per input for points with a lengthscale per input,
    # summed for points with one), where they take at most DIFFERENCES_BYTES: a point then
    # scales them, 32 against 38 ms a point at 500 rows of 3 inputs (Matern 5/2, one
    # thread: the kernel 3 against 7 ms, beside eigh's 30)
    kept: dict[bool, list[np.ndarray]] = {}

    def evaluate(ell):
        ell = np.asarray(ell, dtype=np.float64).reshape(-1)
        per_input = len(ell) > 1
        if per_input not in kept and X.size * len(X) * 8 <= DIFFERENCES_BYTES:
            kept[per_input] = squared_differences(X, per_input)
        R2 = scaled_sum(kept[per_input], ell) if per_input in kept else scaled_sq_dists(X, X, ell)
        mu, z = _eig_sums(correlation(kernel, R2), y, concurrent)
        return profile(mu, z**2, 0.0, len(y), s2_bounds, lam_bounds)

    return evaluate


def glf_profile(red, spectral, s2_bounds, lam_bounds, concurrent: bool = True,
                keep_best: bool = False) -> Callable:  # fmt: skip
    """LML profile from Gauss-Legendre statistics (:class:`rfcli.learn.gpr.Reduced`):
    ``M = P W(ell) P'`` with W the quadrature weights times spectral density;
    ``concurrent``: see :func:`_eig_sums`.  ``keep_best`` (points evaluated one at a
    time): the evaluator's ``best`` holds (ell, M) of the highest LML so far, so that the
    optimum's factor ``s2 M + lambda I`` needs no product of its own
    (:func:`rfcli.learn.gpr.keep_factor`)."""
    best = {"lml": -np.inf, "ell": None, "M": None}

    def evaluate(ell):
        ell = np.asarray(ell, dtype=np.float64)
        wp, _ = spectral.fn(ell)
        M = weighted_gram(red.P, wp)  # symmetric by construction
        mu, z = _eig_sums(M, red.z, concurrent)
        out = profile(mu, z**2, red.yty - red.zz, red.n, s2_bounds, lam_bounds)
        if keep_best and out[0] > best["lml"]:
            best.update(lml=out[0], ell=ell.copy(), M=M)
        return out

    evaluate.best = best

    # points evaluated at once (scan): each holds about 3 r^2 + 1,024 r float64 (M, the
    # eigenvectors, a product tile); together at most 4 m^2,
    # room the fit's budget keeps for its learning matrices (rfcli.learn.gpr.GP_MATRICES),
    # not yet alive during a scan
    r, m = red.P.shape
    evaluate.max_parallel = max(1, (4 * m * m) // max(3 * r * r + 1024 * r, 1))
    return evaluate


def scan(
    evaluate: Callable,
    grids: list[np.ndarray],
    sweeps: int = 2,
    progress: Progress | None = None,
    title: str = "GP scan",
) -> list[dict]:
    """Evaluate the profiled LML on lengthscale grids (one per lengthscale parameter).  One
    parameter: every other grid point, then those beside their maxima (:func:`_halves`).
    Several (ARD): the diagonal (the same relative position in every grid; as one
    lengthscale's grid), then ``sweeps`` rounds of coordinate scans through the best point
    so far, each walking out from it while the LML rises (:func:`_walk`).
    Returns every evaluated point: {"ell", "lml", "log_s2", "log_lam"}.  ``progress``: a
    task ``title`` counts the points planned (those a sweep meets again are not evaluated
    again), with the best lengthscale and LML so far."""
    seen: dict[tuple, dict] = {}
    cap = int(getattr(evaluate, "max_parallel", 1 << 30))
    k = max(len(g) for g in grids)
    planned = k if len(grids) == 1 else k + sweeps * sum(len(g) for g in grids)
    progress = progress or NullProgress()
    advanced = 0  # the points the task has counted (a line's points met again included)
    with progress.task(title, planned, unit="points") as task:

        def line(ells) -> None:
            """Evaluate a line of points (independent of each other: on the tile threads
            of an enclosing rfcli.threads.tile_threads block), recorded in order."""
            nonlocal advanced
            ells = [np.asarray(e, dtype=np.float64) for e in ells]
            keys = [_key(e) for e in ells]
            new: dict[tuple, np.ndarray] = {}
            for kk, e in zip(keys, ells, strict=True):
                if kk not in seen and kk not in new:
                    new[kk] = e
            todo, done = list(new.items()), {}
            for i0 in range(0, len(todo), cap):  # at most cap points alive at once
                part = todo[i0 : i0 + cap]
                outs = list(tiled(evaluate, [e for _, e in part]))
                done.update(zip([kk for kk, _ in part], outs, strict=True))
            for kk in keys:
                if kk in done and kk not in seen:
                    seen[kk] = _point(new[kk], done[kk])
                    best = max(seen.values(), key=lambda p: p["lml"])
                    task.update(best_lengthscale=", ".join(f"{v:.4g}" for v in best["ell"]),
                                **{"LML (standardized y)": best["lml"]})  # fmt: skip
                task.advance(1)
                advanced += 1

        if len(grids) == 1:
            _halves(line, seen, [[x] for x in grids[0]])
            task.update(total=advanced)  # (the points it passed over)
            return list(seen.values())
        diagonal = [[g[0] * (g[-1] / g[0]) ** t for g in grids] for t in np.linspace(0.0, 1.0, k)]
        _halves(line, seen, diagonal)
        lines_left = planned - k
        task.update(total=advanced + lines_left)
        for _ in range(sweeps):
            for j, g in enumerate(grids):
                _walk(line, seen, j, g, max(seen.values(), key=lambda p: p["lml"]))
                lines_left -= len(g)  # the walk stopped short of its line: the total falls
                task.update(total=advanced + lines_left)
        return list(seen.values())


#: one lengthscale: grids of at least HALVES_MIN points are scanned at every other point
#: first (:func:`_halves`)
HALVES_MIN = 9


def _halves(line: Callable, seen: dict, ells: list) -> None:
    """The points ``ells`` of a line in lengthscale space (one lengthscale's grid, or ARD's
    diagonal): every other point (both ends among them), then the points
    beside each of their local maxima.  Where the LML has one maximum along the line, that
    finds the same best point, and the same neighbours of it for :func:`polish`, as every
    point, at a little more than half of them; a second maximum narrower than two grid
    steps, between lower points of the first round, can be passed over.  The lower points
    between are not evaluated, so fewer of them are there to pick starts from
    (:func:`pick_starts`).  On the 82 fits of the development and check sets (December
    2026) every route and LML stayed the same but datasets::treering's, whose second start
    changed and took a level of 125 nodes more to the same LML; the scans took 0.1-0.25 s
    less (DAAG::edcT 3.0 -> 2.5 s).  A grid shorter than HALVES_MIN: every point."""
    if len(ells) < HALVES_MIN:
        line(ells)
        return
    first = sorted({*range(0, len(ells), 2), len(ells) - 1})
    line([ells[i] for i in first])
    lml = [seen[_key(np.asarray(ells[i], dtype=np.float64))]["lml"] for i in first]
    beside = set()
    for a, i in enumerate(first):
        left = lml[a - 1] if a else -np.inf
        right = lml[a + 1] if a + 1 < len(first) else -np.inf
        if lml[a] >= left and lml[a] >= right:
            beside |= {i - 1, i + 1}
    line([ells[i] for i in sorted(beside - set(first)) if 0 <= i < len(ells)])


def _walk(line: Callable, seen: dict, j: int, grid: np.ndarray, base: dict) -> None:
    """A coordinate scan of parameter ``j`` through the point ``base``: from it, each side's
    grid points outward while the LML rises (a side ends at its first point lower than the
    one before it, the base first), two points at a time (one a side, or two ahead on the
    side left).  On a line with one maximum that is the line's maximum, at a few points a
    side where the whole grid took all of them (the exact GP on 500 sample rows with ARD:
    ggplot2::diamonds 35 points in all where 60, txhousing 32 where 58, faithfuld 20 where
    34, each with the same best point; a line with two maxima may keep the one nearer)."""
    v = base["ell"][j]
    sides = [
        [x for x in grid[::-1] if x < v * (1 - 1e-9)],  # downward
        [x for x in grid if x > v * (1 + 1e-9)],  # upward
    ]
    last = [base["lml"], base["lml"]]

    def at(x):
        ell = base["ell"].copy()
        ell[j] = x
        return ell

    while any(sides):
        batch = [(s, seq.pop(0)) for s, seq in enumerate(sides) if seq]
        if len(batch) == 1 and sides[batch[0][0]]:
            batch.append((batch[0][0], sides[batch[0][0]].pop(0)))
        ells = [at(x) for _, x in batch]
        line(ells)
        for (s, _), ell in zip(batch, ells, strict=True):
            p = seen[_key(ell)]
            if p["lml"] < last[s]:
                sides[s] = []  # falling: this side is done (a point taken ahead is kept)
            else:
                last[s] = p["lml"]


def pick_starts(points: list[dict], k: int, delta: float, ratio: float = 2.0) -> list[dict]:
    """Up to k points, best first, each with LML within ``delta`` of the best and at least a
    factor ``ratio`` away (in some lengthscale) from those already picked."""
    order = sorted(points, key=lambda p: -p["lml"])
    picked: list[dict] = []
    for p in order:
        if p["lml"] < order[0]["lml"] - delta or len(picked) >= k:
            break
        far = all(np.max(np.abs(np.log(p["ell"] / q["ell"]))) > np.log(ratio) for q in picked)
        if far:
            picked.append(p)
    return picked


def polish(evaluate: Callable, points: list[dict], grids: list[np.ndarray], steps: int = 2) -> dict:
    """The best scan point moved towards the LML's maximum between its grid neighbours: per
    lengthscale parameter in turn, ``steps`` of successive parabolic interpolation in log
    lengthscale through the best point and its two neighbours along that parameter (the scan
    evaluated them, or they are evaluated now; a grid edge is left as it is).  A step is
    taken only while the middle of the three is the highest (the parabola's vertex is then
    its maximum, between the other two); with several parameters a neighbour along one the
    sweep did not visit may be higher, and the search goes on from it.  Returns the best
    point evaluated; the new points are appended to ``points``."""
    best = max(points, key=lambda p: p["lml"])
    for j, g in enumerate(grids):
        i = int(np.argmin(np.abs(np.log(g / best["ell"][j]))))
        if len(g) < 3 or i == 0 or i == len(g) - 1:
            continue
        trio = []
        for v in (g[i - 1], best["ell"][j], g[i + 1]):
            ell = best["ell"].copy()
            ell[j] = v
            trio.append(_at(evaluate, points, ell))
        for _ in range(steps):
            (u0, f0), (u1, f1), (u2, f2) = [(np.log(p["ell"][j]), p["lml"]) for p in trio]
            if not (f1 >= f0 and f1 >= f2):
                break  # a neighbour is higher: no maximum bracketed here
            u = _vertex(u0, f0, u1, f1, u2, f2)
            if not u0 < u < u2 or abs(u - u1) < 1e-3:
                break  # flat (no vertex), or no step left
            ell = trio[1]["ell"].copy()
            ell[j] = np.exp(u)
            p = _at(evaluate, points, ell)
            trio = _narrowed(trio, p, u < u1, p["lml"] > trio[1]["lml"])
        best = max(trio, key=lambda p: p["lml"])
    return max(points, key=lambda p: p["lml"])


def _key(ell) -> tuple:
    """A scan point's identity: its log lengthscales to 9 decimals."""
    return tuple(np.round(np.log(ell), 9))


def _point(ell, out: tuple) -> dict:
    """A scan point from its lengthscales and a profile's ``(lml, log s2, log lambda)``."""
    lml, a, b = out
    return {"ell": np.asarray(ell, dtype=np.float64), "lml": lml, "log_s2": a, "log_lam": b}


def _at(evaluate: Callable, points: list[dict], ell: np.ndarray) -> dict:
    """The point of ``points`` at ``ell``, else ``ell`` evaluated and appended."""
    key = _key(ell)
    for p in points:
        if _key(p["ell"]) == key:
            return p
    points.append(_point(ell, evaluate(ell)))
    return points[-1]


#: the profiled search's tolerance on log lengthscale (a relative 3e-4 in the lengthscale:
#: ggplot2::txhousing's last level 8 evaluations where 1e-4 took 9, the same LML to 1e-5
#: nats; 1e-3 took 7, but ggplot2::faithfuld, nearly noise-free, lost 4.7e-3 nats there)
PROFILE_XATOL = 3e-4
#: it also stops when, after a step of less than PROFILE_CONVERGED, the parabola through its
#: bracket promises less than PROFILE_GAIN nats more at its vertex (ggplot2::txhousing's last
#: level: 7 evaluations where the step tolerance alone took 8, 3.6e-5 nats lower; a nearly
#: noise-free set's sharp maximum keeps the step tolerance's evaluations)
PROFILE_GAIN = 1e-4
#: the profiled search from a start first tries the start's neighbours this far off in log
#: lengthscale (a factor 1.105)
PROFILE_STEP = 0.1
#: it stops when a vertex moves less than PROFILE_XATOL after a step of less than this
#: (near a smooth maximum each step about squares the error; a vertex on the best point
#: after a long step is no sign of convergence: a kink, or a symmetric bracket)
PROFILE_CONVERGED = 1e-2


def _parabolic_maximum(f: Callable, u0: float, lo: float, hi: float) -> float | None:
    """The maximum of ``f`` near ``u0`` by successive parabolic interpolation. u0 and its
    neighbours at +-PROFILE_STEP bracket it when u0 is the highest of them; where a
    neighbour is higher, steps go on uphill, each twice the last, until the middle point is
    the highest, or to the range's end (``lo`` or ``hi`` itself, returned when it is the
    highest and a point min(PROFILE_STEP, half the gap) inside it is not higher: else that
    point is the middle of a bracket whose maximum the step jumped over; a maximum between
    the end and that point is left to the end). Then the vertex of the parabola through the
    bracket's three points is evaluated and the bracket narrowed to the best three around
    the best, until the vertex moves less than PROFILE_XATOL from the best point, or the
    parabola promises less than PROFILE_GAIN nats more there (:func:`_vertex_gain`), after a
    step below PROFILE_CONVERGED, or the bracket is narrower than 2 PROFILE_XATOL. A
    golden-section step replaces the vertex where it falls outside the bracket, sits on the
    best point before the steps converged, or would move at least half as far as the step
    before last (Brent's safeguard). None where u0's neighbours leave the range (Brent's
    search over it then). Near a smooth maximum each vertex about squares the error:
    DAAG::edcT's level, 7 evaluations where Brent's bounded search over the level's range
    (golden section with parabolic steps, which starts from the range's golden point, not
    from the start) took 11; ggplot2::diamonds, whose start lies a factor 1.17 above the
    maximum, 8 where it took 9."""
    a, b = u0 - PROFILE_STEP, u0 + PROFILE_STEP
    if not lo < a < b < hi:
        return None
    trio = [(a, f(a)), (u0, f(u0)), (b, f(b))]
    step = PROFILE_STEP
    while not (trio[1][1] >= trio[0][1] and trio[1][1] >= trio[2][1]):  # walk uphill,
        step *= 2  # steps doubling, until bracketed
        if trio[0][1] > trio[1][1]:
            u = max(trio[0][0] - step, lo)
            trio = [(u, f(u)), *trio[:2]]
            if u == lo and trio[0][1] >= trio[1][1]:
                inner = _inside_end(f, trio[0], trio[1][0])
                if inner is None:
                    return lo  # still rising at the range's end: the maximum is there
                trio = [trio[0], inner, trio[1]]
        else:
            u = min(trio[2][0] + step, hi)
            trio = [*trio[1:], (u, f(u))]
            if u == hi and trio[2][1] >= trio[1][1]:
                inner = _inside_end(f, trio[2], trio[1][0])
                if inner is None:
                    return hi
                trio = [trio[1], inner, trio[2]]
    moves = [np.inf, np.inf]
    for _ in range(100):
        (x1, f1), (x2, f2), (x3, f3) = trio
        if x3 - x1 < 2 * PROFILE_XATOL:
            break
        v = _vertex(x1, f1, x2, f2, x3, f3)
        if moves[-1] < PROFILE_CONVERGED and (
            abs(v - x2) < PROFILE_XATOL or _vertex_gain(x1, f1, x2, f2, x3, f3, v) < PROFILE_GAIN
        ):
            break  # the parabolas converge on x2, or promise less than PROFILE_GAIN more
        # golden section into the wider side where the vertex leaves the bracket, sits on
        # x2 before the steps converged (a kink), or moves at least half as far as the step
        # before last (Brent's safeguard against parabolas that stall)
        if not x1 < v < x3 or abs(v - x2) < PROFILE_XATOL or abs(v - x2) >= moves[-2] / 2:
            v = x2 + 0.381966 * ((x3 - x2) if x3 - x2 > x2 - x1 else (x1 - x2))
        moves.append(abs(v - x2))
        # a point too near the bracket's ends moves inward by the tolerance
        v = min(max(v, x1 + PROFILE_XATOL), x3 - PROFILE_XATOL)
        fv = f(v)
        trio = _narrowed(trio, (v, fv), v < x2, fv > f2)
    return float(trio[1][0])


def _inside_end(f: Callable, end: tuple, towards: float) -> tuple | None:
    """A range's ``end`` (u, f(u)), reached by an uphill step from ``towards`` and higher
    than it: the point min(PROFILE_STEP, half the gap) inside it, (v, f(v)), where that is
    higher (the step jumped over a maximum, which the three points now bracket); None where
    it is not (still rising at the end: the maximum is there)."""
    u, fu = end
    v = u + np.sign(towards - u) * min(PROFILE_STEP, abs(towards - u) / 2)
    fv = f(v)
    return (v, fv) if fv > fu else None


def _vertex_gain(x1, f1, x2, f2, x3, f3, v: float) -> float:
    """How far the parabola through the bracket's points (x2 the best) rises from f2 at
    ``v`` (its vertex; Newton's form on x1, x2): inf where it does not open downwards or
    ``v`` leaves the bracket (no promise to stop on)."""
    d12 = (f2 - f1) / (x2 - x1)
    a = ((f3 - f2) / (x3 - x2) - d12) / (x3 - x1)
    if not (a < 0 and x1 < v < x3):
        return np.inf
    return (v - x2) * (d12 + a * (v - x1))


def _vertex(u0: float, f0: float, u1: float, f1: float, u2: float, f2: float) -> float:
    """The abscissa of the parabola's vertex through (u0, f0), (u1, f1), (u2, f2)
    (docs/methods.md); NaN where they lie on a line."""
    den = (u1 - u0) * (f1 - f2) - (u1 - u2) * (f1 - f0)
    if not den < 0 and not den > 0:
        return float("nan")
    return u1 - 0.5 * ((u1 - u0) ** 2 * (f1 - f2) - (u1 - u2) ** 2 * (f1 - f0)) / den


def _narrowed(trio: list, new, left: bool, better: bool) -> list:
    """A bracket of three points (the best in the middle) after ``new`` was evaluated
    ``left`` of the middle or right of it: the new middle when it is ``better``, the old
    one then bounding its side; else ``new`` bounds its side."""
    a, b, c = trio
    if better:
        return [a, new, b] if left else [b, new, c]
    return [new, b, c] if left else [a, b, new]


def profile_maximum(evaluate: Callable, lo: float, hi: float, start: float | None = None,
                    progress: Progress | None = None,
                    title: str = "GP profile search") -> tuple[dict, int]:  # fmt: skip
    """The maximum of a profiled LML ``evaluate`` (one lengthscale; the signal and noise
    variances maximized exactly for each, :func:`glf_profile`) over lengthscales in [lo, hi],
    to PROFILE_XATOL in log lengthscale: from a ``start``, successive parabolic
    interpolation around it (:func:`_parabolic_maximum`); else, or where the start's
    neighbours leave the range, Brent's method over the range (golden section with
    parabolic steps; SciPy's bounded ``minimize_scalar``).  Brent never evaluates the ends,
    so a maximum within 10 PROFILE_XATOL of one is compared with the end itself, ``lo`` or
    ``hi`` exactly (an optimum held by its range's edge is then there, as the quasi-Newton
    search's is).  ``start``: a lengthscale evaluated first and kept unless the search beats
    it by more than the quasi-Newton search's relative stop (on a flat likelihood the points
    wander; that search would not leave its start).  Returns (the point {ell, lml, log_s2,
    log_lam}, the evaluations)."""
    seen: dict[float, dict] = {}
    exact: dict[float, float] = {}  # log lengthscales evaluated at their lengthscale exactly
    progress = progress or NullProgress()
    with progress.task(title, None, unit="evaluations") as task:

        def at(u: float) -> dict:
            if u not in seen:
                ell = exact.get(u, float(np.exp(u)))
                seen[u] = _point([ell], evaluate(np.array([ell])))
                top = max(seen.values(), key=lambda p: p["lml"])
                task.update(lengthscale=f"{top['ell'][0]:.4g}",
                            **{"LML (standardized y)": top["lml"]})  # fmt: skip
                task.advance(1)
            return seen[u]

        ends = (float(np.log(lo)), float(np.log(hi)))
        exact.update(zip(ends, (float(lo), float(hi)), strict=True))
        if ends[1] - ends[0] <= PROFILE_XATOL:
            return at(ends[0]), len(seen)
        first = top = None
        if start is not None:
            s0 = float(np.clip(start, lo, hi))
            exact[float(np.log(s0))] = s0
            first = at(float(np.log(s0)))
            top = _parabolic_maximum(lambda u: at(u)["lml"], float(np.log(s0)), *ends)
        if top is None:
            from scipy.optimize import minimize_scalar  # lazily: a start's search needs none

            res = minimize_scalar(lambda u: -at(float(u))["lml"], bounds=ends, method="bounded",
                                  options={"xatol": PROFILE_XATOL})  # fmt: skip
            top = float(res.x)
        best = at(top)
        for end in ends:
            if abs(top - end) <= 10 * PROFILE_XATOL and at(end)["lml"] > best["lml"]:
                best = at(end)
        if first is not None and best["lml"] - first["lml"] <= FTOL * max(
            abs(best["lml"]), abs(first["lml"]), 1.0
        ):
            best = first
    return best, len(seen)
