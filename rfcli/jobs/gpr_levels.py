"""GLF on raw input: levels of Gauss-Legendre rules that follow the lengthscales reached
(docs/gpr.md).  A *coarse* quadrature rule (at most ``coarse_nodes`` nodes) serves the
lengthscales from the smallest it can afford up to the box width; its pass also returns
the exact input box and the (x, y) row sample.  The LML is scanned on a lengthscale grid
(signal and noise profiled) where that rule resolves it; when it does not resolve all of
the bounds, the exact GP on the row sample scans all of them, and its best point becomes a
start when it lies outside the resolved range and beats the best point inside.  Then
*levels*: a rule valid on a trust region around the best scan points (x/ F_OUT), one pass,
a quasi-Newton search (rfcli.learn.boxqn) within the trust region; recentred on the optimum
(a new pass) until the optimum lies inside the region (x/ F_FINAL), the kernel error at the
optimum meets the tolerance and a rule for the optimum would not be much smaller -- so the
nodes follow the lengthscales reached, not the worst case of the bounds.

The tolerance follows the learned noise: the kernel error at the optimum must be at most
``tol`` on the probe differences, and the error of the kernel *matrix* on the data at most
NOISE_SHARE x the learned noise/signal ratio (a quadrature error as large as the noise would
be learned as extra noise).  The matrix error is what the likelihood sees: its spectral norm
grows with n even where every entry is small (on the ggplot2 seals set, 808 rows: entries
within 1.2e-5 of the signal, spectral norm 3.4e-4, half the noise/signal ratio), so it is
estimated on the row sample, ``(n / k) ||K~_k - K_k||_2`` for k sample rows
(rfcli.jobs.gpr_sample).  When it is too large the tolerance is scaled down to reach
NOISE_REFINE x the ratio and the levels go on with finer rules.  A level's rows' factor
stops for the noise its starts expect, and is made again where the likelihood it lost at the
optimum is too large (REFACTOR_NATS; rfcli.learn.gpr.factor_nats).  Rules are sized by their
pruned node count against the memory budget (``memory``; default the machine's physical
memory: :func:`rfcli.learn.gpr.max_gp_nodes`).  The shared learning steps are
:mod:`rfcli.jobs.gpr_learn`; where the exact GP of the rows costs less than a level, the
levels hand over to it (:mod:`rfcli.jobs.gpr_exact_route`).
"""

from __future__ import annotations

import numpy as np

from rfcli.encoder_fit import BottomK
from rfcli.errors import UsageError
from rfcli.jobs.gpr_exact_route import ExactRoute
from rfcli.jobs.gpr_learn import (
    Fit,
    GPInputs,
    learn_fixed,
    lml_margin,
    scan_grids,
    scan_report,
    theta_of,
    timed,
)
from rfcli.jobs.gpr_ranges import F_IN, F_OUT, TrustRegions, walk_reach
from rfcli.jobs.gpr_sample import SampleChecks
from rfcli.jobs.gpr_tolerance import NOISE_REFINE, NOISE_SHARE, DesignTolerance
from rfcli.learn.gpr import (
    GPStats,
    glf_objective,
    glf_spectral,
    gp_memory_need,
    keep_factor,
    lml_and_grad,
    max_gp_nodes,
    trace_tolerance,
)
from rfcli.learn.gpr_factor import box_weights
from rfcli.learn.gpr_optimize import fit_hyperparameters
from rfcli.learn.gpr_search import (
    glf_profile,
    pick_starts,
    profile_maximum,
    scan,
)
from rfcli.maps import glf_rules
from rfcli.maps.gauss_legendre import GaussLegendreMap
from rfcli.maps.glf_rules import RuleTooLarge
from rfcli.memory import human, physical_memory
from rfcli.threads import one_blas_thread

#: the range of a level refined for the noise around an optimum found inside its range: the
#: rule's nodes grow about as (1 / its smallest lengthscale)^d (ggplot2::diamonds, 3-D:
#: 5,305 nodes at F_OUT)
F_NOISE = 1.3
#: a new level is run when its rule would have fewer than SHRINK x the current nodes
SHRINK = 0.8
#: starts whose trust regions fit in a factor GROUP_RATIO share a rule; groups refined apart
GROUP_RATIO, MAX_GROUPS = 6.0, 2
#: an isotropic level with at least PROFILE_RATIO features per rank of its factor learns by
#: the profiled search (Levels._profiled)
PROFILE_RATIO = 2
#: a level whose rows' factor (stopped for the starts' noise: rfcli.learn.gpr.FACTOR_NATS)
#: lost more than REFACTOR_NATS of the likelihood at its optimum (rfcli.learn.gpr.factor_nats)
#: is factored again, its trace tolerance REFACTOR_FACTOR x below the loss's share of
#: REFACTOR_NATS, and learned on, at most REFACTOR_TRIES times
REFACTOR_NATS, REFACTOR_FACTOR, REFACTOR_TRIES = 0.05, 3.0, 3


def _noise(thetas: list[np.ndarray]) -> float:
    """The least noise/signal ratio of starts (theta's values: s2, ell..., lambda)."""
    return min(float(t[-1] / t[0]) for t in thetas)


class PassExtras:
    """Additive extras of a statistics pass: the inputs' box and a hash row sample of (x, y)."""

    def __init__(self, d: int, k: int, seed: int):
        self.lo, self.hi = np.full(d, np.inf), np.full(d, -np.inf)
        self.sample = BottomK(k, seed) if k else None

    def update(self, row0: int, X: np.ndarray, y: np.ndarray) -> None:
        if len(X):
            np.minimum(self.lo, X.min(0), out=self.lo)
            np.maximum(self.hi, X.max(0), out=self.hi)
            if self.sample is not None:
                self.sample.update(row0, np.column_stack([X, y]))

    def __add__(self, other: PassExtras) -> PassExtras:
        out = PassExtras(len(self.lo), 0, 0)
        out.lo, out.hi = np.minimum(self.lo, other.lo), np.maximum(self.hi, other.hi)
        if self.sample is not None:
            out.sample = BottomK(self.sample.k, self.sample.seed)
            out.sample.merge(self.sample).merge(other.sample)
        return out


def _glf_pass(data, d: int, k: int, seed: int, shift: float = 0.0, keep_rows: bool = True):
    """GP statistics of the GLF features and :class:`PassExtras` of the preprocessed inputs
    (a pass function over data read ``with_inputs``; ``keep_rows``: see GPStats)."""
    st = GPStats(data.encoder.n_features, shift, keep_rows)
    ext = PassExtras(d, k, seed)
    for b in data.batches():
        y = np.asarray(b.y, dtype=np.float64)
        st.update(b.F, y, copy=False, inputs=b.X)  # the map's new output
        ext.update(b.row0, b.X, y)
    return st, ext


class Levels(TrustRegions, DesignTolerance, ExactRoute, SampleChecks):
    """GLF on raw input: the coarse rule and its scans, then levels of rules around the
    optimum (module docstring).  ``stats(encoder, title, fn, args)`` makes one pass."""

    def __init__(
        self, stats, base: GPInputs, sample, bounds, s, report, clock, *, progress=None,
        memory: int | None = None, rows: int | None = None,
    ):  # fmt: skip
        self.stats, self.base, self.s, self.report, self.clock = stats, base, s, report, clock
        self.progress = progress
        self.d = len(base.columns)
        self.bounds = np.asarray(bounds, dtype=float)  # (n_ell, 2)
        self.n_ell = len(self.bounds)
        self.width = np.maximum(sample.max(0) - sample.min(0), 1e-12)  # exact after a pass
        self.xy: np.ndarray | None = None  # (x, y) row sample from the first pass
        self.sample_best: np.ndarray | None = None  # the sample scan's best lengthscales
        self.passes = 0
        self.n = 0  # rows seen by the passes
        self.levels: list[dict] = []
        self.history: list[dict] = []
        self._designs: dict = {}
        self._init_sample_checks()
        self.tol = float(s.tol)  # lowered when the learned noise asks for it
        # the tolerance before a shrinking level coarsened it (Levels._coarser_tol): the
        # next group starts from the finer one, as from every tolerance a group refined
        self._before_coarsening: float | None = None
        self.memory = memory  # the job's budget (None: physical memory)
        self.budget = memory if memory is not None else physical_memory()
        # sized for one pass thread: the rule (and the model) never depend on the core count;
        # passes then run on as many threads as the budget allows (pass_threads)
        self.max_nodes = max_gp_nodes(self.budget)
        self._init_exact_route(rows)

    # -- rules and passes -------------------------------------------------------------------
    def _map(self, ranges: np.ndarray, tol: float | None = None) -> GaussLegendreMap:
        """A rule valid on ``ranges`` (n_ell, 2) over the current box, at the design
        tolerance ``tol`` (default: the current one; designs are cached, RuleTooLarge too)."""
        s = self.s
        tol = self.tol if tol is None else float(tol)
        key = (ranges.round(12).tobytes(), self.width.round(12).tobytes(), tol)
        if key not in self._designs:
            lb = ranges[0].tolist() if self.n_ell == 1 else ranges.tolist()
            fmap = GaussLegendreMap(
                kernel=s.kernel,
                lengthscale_bounds=lb,
                tol=tol,
                nodes=s.nodes,
                cutoff=s.cutoff,
                seed=s.seed,
                max_nodes=self.max_nodes,
            )
            with timed(self.clock, "rule design"), one_blas_thread():
                try:
                    self._designs[key] = fmap.fit(self.d, box=(np.zeros(self.d), self.width))
                    if len(fmap.w_) > self.max_nodes:  # nodes given by hand
                        q = fmap.q_
                        raise RuleTooLarge(
                            f"GLF nodes={q} make {len(fmap.w_)} nodes, more than "
                            f"{self.max_nodes}", len(fmap.w_), q, fmap.L_)  # fmt: skip
                except RuleTooLarge as e:
                    self._designs[key] = e
        out = self._designs[key]
        if isinstance(out, RuleTooLarge):
            raise out
        return out

    def _pass(self, fmap: GaussLegendreMap, what: str, ranges: np.ndarray, noise=None):
        """One statistics pass on ``fmap``'s features and their factor, weighed by their
        largest weights over the lengthscales ``ranges`` that the level explores, for the
        noise/signal ratio ``noise`` the level expects (:class:`rfcli.learn.gpr.Reduced`)."""
        # the hash sample's first rows are the smaller samples (BottomK: sorted by hash)
        k = 0 if self.xy is not None else max(self.s.sample_rows, self.exact_rows)
        enc = self.base.encoder(fmap)
        st, ext = self.stats(enc, what, _glf_pass, (self.d, k, self.s.seed), inputs=True)
        self.passes += 1
        self.width = np.maximum(ext.hi - ext.lo, 1e-12)
        if ext.sample is not None:
            self.xy = ext.sample.rows
        self.n = st.n
        with timed(self.clock, "factor of G"), one_blas_thread():
            red = st.reduced(weights=box_weights(fmap, ranges), noise=noise,
                             kernel=self._basis_kernel(ranges))  # fmt: skip
        return enc, st, red, glf_spectral(fmap, self.s.ard)

    def _basis_kernel(self, ranges: np.ndarray) -> tuple | None:
        """The exact kernel whose factor on the kept rows is their factor's first basis
        (:meth:`rfcli.learn.gpr.Reduced.from_rows`): the Gaussian kernel at the level's
        smallest lengthscales, whose spectrum reaches furthest out.  None (the rows' own
        factor) for Matern kernels: their exact kernel's heavy spectrum reaches past the
        rule's cutoff, and its basis needed more columns than the rows' own factor has
        (ggplot2::txhousing, Matern 5/2: 708 and 1,007 against 511 and 741, the fit 15 ->
        19 s)."""
        if self.s.kernel != "gaussian":
            return None
        return self.s.kernel, self._full(ranges[:, 0])

    def _full(self, ell: np.ndarray) -> np.ndarray:
        """Lengthscale parameters -> one lengthscale per input."""
        return np.broadcast_to(np.asarray(ell, float), (self.d,)) if self.n_ell == 1 else ell

    def _too_large(self, e: RuleTooLarge, what: str):
        need = gp_memory_need(2 * e.nodes, 1)
        whose = "memory" if self.memory is not None else "this machine's physical memory"
        # (a tensor too large to prune: its count before pruning, which pruning lowers)
        about = "about" if e.pruned else "up to"
        return UsageError(
            f"{e}, {what}: {2 * e.nodes} features need {about} {human(need)} of memory for "
            f"the GP's {2 * e.nodes} x {2 * e.nodes} matrices, over the budget of "
            f"{human(self.budget)} ({whose}; {self.max_nodes} nodes fit): raise memory, "
            "loosen tol, give narrower lengthscale_bounds, or set nodes/cutoff by hand"
        )

    # -- the whole search -------------------------------------------------------------------
    def run(self):
        s = self.s
        if not s.learn:
            return self._fixed_lengthscale()
        if s.nodes is not None:  # a rule given by hand: one pass over the bounds
            fmap = self._map(self.bounds)
            enc, st, red, spectral = self._pass(fmap, "GP statistics", self.bounds)
            theta, history = learn_fixed(red, spectral, self.bounds, s, self.report,
                                          self.progress)  # fmt: skip
            self._record("fixed", fmap, self.bounds, theta, red, spectral, history)
            return self._done(enc, st, red, spectral, theta, history)
        return self._refine_all(self._coarse())

    def _fixed_lengthscale(self):
        s = self.s
        lo, hi = self.bounds[:, 0], self.bounds[:, 1]
        ell = np.full(self.n_ell, s.lengthscale) if s.lengthscale else np.sqrt(lo * hi)
        ranges = np.column_stack([ell, ell])
        try:
            fmap = self._map(ranges) if s.nodes is None else self._map(self.bounds)
        except RuleTooLarge as e:
            raise self._too_large(e, "the lengthscale given") from None
        enc, st, red, spectral = self._pass(fmap, "GP statistics", ranges)
        theta = np.log([1.0, *ell, 0.1])
        self._record("fixed", fmap, ranges, theta, red, spectral, [])
        return self._done(enc, st, red, spectral, theta, [])

    def _coarse_ranges(self) -> np.ndarray:
        """Ranges [lo0, hi0] of the coarse rule: hi0 the upper bound but at most the box width
        (larger lengthscales are reached by the levels, whose rules for them are small), lo0
        the smallest lengthscales (the lower bounds scaled up together) whose rule has at most
        coarse_nodes nodes."""
        budget = self.s.coarse_nodes
        top = self.width.max() if self.n_ell == 1 else self.width
        hi0 = np.maximum(np.minimum(self.bounds[:, 1], top), self.bounds[:, 0])
        ranges = np.column_stack([self.bounds[:, 0], hi0])
        full = ranges if self.n_ell > 1 else np.tile(ranges, (self.d, 1))
        for _ in range(60):  # first on the quick estimate, then on real designs
            est = glf_rules.estimate_nodes(self.s.kernel, self.width, full, self.s.tol)
            if est <= budget or np.all(ranges[:, 0] >= ranges[:, 1]):
                break
            ranges[:, 0] = np.minimum(
                ranges[:, 0] * (est / budget) ** (1.0 / self.d) * 1.02, ranges[:, 1]
            )
            full = ranges if self.n_ell > 1 else np.tile(ranges, (self.d, 1))
        for _ in range(40):
            try:
                nodes = len(self._map(ranges).w_)
            except RuleTooLarge as e:
                nodes = e.nodes
            if nodes <= budget or np.all(ranges[:, 0] >= ranges[:, 1]):
                break
            # nodes grow about as prod_j 1/lo_j: scale every lower end up together
            k = (nodes / budget) ** (1.0 / self.d) * 1.05
            ranges[:, 0] = np.minimum(ranges[:, 0] * k, ranges[:, 1])
        return ranges

    def _coarse(self) -> list[dict]:
        """The coarse rule, its pass and scans: the L-BFGS starts (scan points, best first)."""
        s = self.s
        ranges = self._coarse_ranges()
        try:
            fmap = self._map(ranges)
        except RuleTooLarge as e:
            return self._rows_only(e)
        # (weighted over the grids' reach: their points may pass the ranges by 1e-4)
        reach = ranges * np.array([0.9999, 1.0001])
        enc, st, red, spectral = self._pass(
            fmap, f"GP statistics (coarse rule, {len(fmap.w_)} nodes)", reach
        )
        grids = [
            g[(g >= r[0] * 0.9999) & (g <= r[1] * 1.0001)]
            for g, r in zip(
                scan_grids(self.bounds, ranges[:, 0], ranges[:, 1]), ranges, strict=True
            )
        ]
        with timed(self.clock, "GLF scan"), one_blas_thread():
            pts = scan(glf_profile(red, spectral, s.signal_bounds, s.noise_bounds), grids, sweeps=1,
                       progress=self.progress, title="GP scan (coarse rule)")  # fmt: skip
        self._record(
            "coarse",
            fmap,
            ranges,
            None,
            red,
            spectral,
            [],
            scan_best=max(pts, key=lambda p: p["lml"]),
        )
        self.report["scan"] = scan_report(pts, "GLF statistics (coarse rule)")
        starts = pick_starts(pts, s.starts, lml_margin(red.n))
        resolved = (ranges[:, 0] <= self.bounds[:, 0] * 1.0001) & (
            ranges[:, 1] >= self.bounds[:, 1] * 0.9999
        )
        if not np.all(resolved):
            extra = self._sample_scan(ranges, st)
            if extra is not None:
                # scan points at an unresolved edge only said "further out"; the sample says where
                lo_edge = ~resolved & np.array([p["ell"] <= ranges[:, 0] * 1.0001 for p in starts])
                hi_edge = ~resolved & np.array([p["ell"] >= ranges[:, 1] * 0.9999 for p in starts])
                starts = [
                    p
                    for p, e in zip(starts, np.any(lo_edge | hi_edge, axis=1), strict=True)
                    if not e
                ] + [extra]
        return starts

    def _groups(self, starts: list[dict]) -> list[list[dict]]:
        """Starts whose trust regions span at most a factor GROUP_RATIO share one rule (best
        first); at most MAX_GROUPS groups, each refined on its own."""
        groups: list[list[dict]] = []
        for p in starts:
            for g in groups:
                r = self._trust([q["ell"] for q in [*g, p]])
                if np.all(r[:, 1] <= GROUP_RATIO * r[:, 0]):
                    g.append(p)
                    break
            else:
                groups.append([p])
        return groups[:MAX_GROUPS]

    def _refine_all(self, starts: list[dict]):
        """Refine every group; the best final LML wins.  A group whose rule would exceed the
        budget is skipped (and reported) when another one fits; refused when none does."""
        results, refused = [], []
        groups = self._groups(starts)
        for i, g in enumerate(groups):
            self.later_starts = [p for later in groups[i + 1 :] for p in later]
            try:
                results.append(self._refine(g, i, [(r[3], r[2], r[1]) for r in results]))
            except UsageError as e:
                refused.append(e)
            finally:
                if self._before_coarsening is not None:  # the group's shrinking level's own
                    self.tol = min(self.tol, self._before_coarsening)
                    self._before_coarsening = None
            # a finished group's statistics stay alive (its model may win): the exact GP of
            # a later group fits beside them
            kept = [r[0][1:3] for r in results if r[0][1] is not None]  # (GPStats, Reduced)
            self.held = sum(st.nbytes + red.nbytes for st, red in kept)
            if results and results[-1][0][-1]["kind"] == "exact" and self.later_done:
                break  # the exact GP started from every later group's starts too
        self.later_starts = []
        if not results:
            raise refused[0]
        if refused:
            self.report["skipped_groups"] = [str(e) for e in refused]
        best = max(results, key=lambda r: r[1])
        self.report["converged"] = best[2]
        return self._done(*best[0])

    def _refine(self, starts: list[dict], group: int, finished: list[tuple]):
        """Levels from ``starts``: (final state, its LML, converged, final lengthscales).  A
        group stops when its optimum comes within F_IN of a ``finished`` group's (final
        lengthscales, converged, LML), or sits on its range's edge heading for a finished
        group's optimum of a higher LML: from there it would refine to the same optimum
        (datasets::treering: a second group chased the first one's lengthscale down four
        levels, to 2,702 nodes, a third of the fit's time), and it counts as converged when
        that group did."""
        s = self.s
        ranges = self._trust([p["ell"] for p in starts])
        thetas = [theta_of(p) for p in starts]
        if self._exact_first(ranges, _noise(thetas)):
            # the exact GP costs less than a level of the current rule, and so of any finer
            # one: the prior's finer tolerance would not be used (itsadug::eeg: its kernel
            # error checks took 0.8 s of a 1.8 s fit)
            out = self._exact(thetas, group)
            if out is not None:
                return out
        before_prior = self._tol_for_prior(ranges, starts[0])
        prev, count = None, 0
        # the levels whose optimum sat on an edge, in a row: (log lengthscales, LML)
        streak: list[tuple[np.ndarray, float]] = []
        while True:
            count += 1
            try:
                try:
                    fmap = self._map(ranges)
                except RuleTooLarge:
                    if before_prior is None or self.tol >= before_prior:
                        raise
                    # the prior's finer rule does not fit where the levels went: the finest
                    # coarser tolerance that fits, up to the one before the prior (the
                    # levels' noise checks refine from there if they can)
                    fmap = self._coarser_fit(ranges, before_prior)
                    before_prior = None
            except RuleTooLarge as e:
                # the previous level's arrays are not kept alive through the exact fit
                enc = st = red = spectral = state = None
                if self._exact_ready():
                    return self._exact_instead(thetas, group)  # no rule fits
                raise self._too_large(e, "around the lengthscales the search reached") from None
            noise = _noise(thetas)
            if self._exact_ready() and self._exact_cheaper(fmap, ranges, noise):
                enc = st = red = spectral = state = None
                out = self._exact(thetas, group)
                if out is not None:
                    return out
            where = f"level {len(self.levels)}, {len(fmap.w_)} nodes"
            # the previous level's arrays go before this level's pass makes its own: peak
            # memory holds one level, and the new arrays get the pages just freed
            enc = st = red = spectral = state = None
            self._keep_sample_features(fmap)  # another map's are not kept through the pass
            enc, st, red, spectral = self._pass(fmap, f"GP statistics ({where})", ranges, noise)
            theta, history = self._learn(red, spectral, ranges, thetas, where)
            red, theta, lost = self._refactored(fmap, ranges, st, red, spectral, theta,
                                                noise, history, where)  # fmt: skip
            self.history += history
            level = self._record("level", fmap, ranges, theta, red, spectral, history)
            level["group"] = group
            if lost is not None:
                level["factor_nats"] = float(lost)
            ell = np.exp(theta[1 : 1 + self.n_ell])
            if prev is not None:
                level["moved"] = float(np.max(np.abs(theta - prev[0])))
                level["lml_change"] = float(level["lml"] - prev[1])
            inside = self._inside(ell, ranges)
            state = (enc, st, red, spectral, theta, self.history, level)
            joined = [
                c
                for f, c, lml in finished
                if np.all(np.abs(np.log(ell / f)) <= np.log(F_IN))
                or (lml > level["lml"] and self._heading_for(ell, ranges, f))
            ]
            if joined:
                level["joined"] = True  # the optimum of a group already refined
                return state, level["lml"], joined[0], ell
            nxt = self._trust([ell])
            # an optimum on its range's edge again and again (lengthscales running to a bound
            # level after level): the next range reaches up to F_OUT^(levels in the streak)
            # beyond it (_reach), less where the streak's slowing rise says (walk_reach)
            lo_hit = (ell <= ranges[:, 0] * 1.0001) & (ranges[:, 0] > self.bounds[:, 0] * 1.0001)
            hi_hit = (ell >= ranges[:, 1] * 0.9999) & (ranges[:, 1] < self.bounds[:, 1] * 0.9999)
            streak = [*streak, (np.log(ell), level["lml"])] if np.any(lo_hit | hi_hit) else []
            if len(streak) > 1:
                # (the noise: the next level's start's)
                reach = min(F_OUT ** len(streak), walk_reach(streak))
                nxt = self._reach(nxt, ell, lo_hit, hi_hit, reach, len(fmap.w_),
                                  _noise([np.exp(theta)]))  # fmt: skip
            if self.sample_best is not None:
                # an optimum on its edge heading for the sample scan's best point: the next
                # range reaches it at once (datasets::treering: the lengthscale ran to its
                # lower bound, where the sample scan had put it, over four levels)
                # (when that range's rule fits the budget: else the steps above go on)
                sb, far = self.sample_best, nxt.copy()
                far[:, 0] = np.where(lo_hit & (sb < ell), np.minimum(nxt[:, 0], sb), nxt[:, 0])
                far[:, 1] = np.where(hi_hit & (sb > ell), np.maximum(nxt[:, 1], sb), nxt[:, 1])
                if not np.array_equal(far, nxt) and self._fits(far):
                    nxt = far
            noise_tol = NOISE_SHARE * level["noise_to_signal"]
            on_data = level["kernel_error_data"]
            # also when the optimum left the range: an error above the noise moves the optimum
            # (Matern 5/2 on ggplot2 faithfuld: levels alternating between two lengthscales,
            # errors on the data 0.006-0.12 against a noise/signal of 1e-7)
            if level["probe_error"] <= self.tol and on_data > noise_tol:
                # the quadrature error would be learned as noise: finer rules from here.  The
                # error falls much faster than the design tolerance (Gauss-Legendre converges
                # exponentially: tol / 19 took diamonds' error on the data from 0.10 to 1.6e-8
                # with 3.3x the nodes), so candidate tolerances tol / 3^k are designed in turn
                # and the coarsest whose rule's error on the data at this optimum is at most
                # NOISE_REFINE x noise/signal is kept (the finest that fits the budget when
                # none is); the next level checks it again at its own optimum
                target = NOISE_REFINE * level["noise_to_signal"]
                if not np.any(lo_hit | hi_hit):
                    # the optimum is within its range (no edge held it): the finer rule
                    # serves a narrower range around it
                    nxt = np.column_stack([np.maximum(nxt[:, 0], ell / F_NOISE),
                                           np.minimum(nxt[:, 1], ell * F_NOISE)])  # fmt: skip
                chosen, too_large = self._finer_tol(nxt, self._full(ell), red.n, target)
                if chosen is not None:
                    self.tol = chosen
                    level["refine_for_noise"] = self.tol
                elif inside or not self._fits(nxt):
                    if not inside and self._exact_ready():
                        # the optimum sits on its range's edge and no rule fits the range it
                        # heads for: the dense exact GP from it, as where a level's own rule is
                        # over the budget (survival::flchain, Matern 5/2 with --ard: the levels
                        # stopped there unconverged, 1.15x the exact GP's test MSE)
                        enc = st = red = spectral = state = None
                        return self._exact_instead([np.exp(theta)], group)
                    self.report["kernel_error_note"] = (
                        f"the kernel error on the data at the optimum ({on_data:.2g}) "
                        f"exceeds {NOISE_SHARE} x the learned noise/signal "
                        f"({noise_tol:.2g}); a finer rule does not fit: "
                        f"{self._too_large(too_large, 'for that tolerance')}"
                    )
                    return state, level["lml"], bool(inside), ell
                # else the optimum is on its region's edge: the next level moves there at
                # this tolerance, and refines for the noise from there (ames, 3-D ARD)
            elif inside and level["probe_error"] <= self.tol:
                try:
                    smaller = len(self._map(nxt).w_) < SHRINK * len(fmap.w_)
                except RuleTooLarge:
                    smaller = False
                if not smaller:
                    return state, level["lml"], True, ell
                coarser = self._coarser_tol(nxt, self._full(ell), red.n,
                                            NOISE_REFINE * level["noise_to_signal"])  # fmt: skip
                if coarser is not None:
                    if self._before_coarsening is None:
                        self._before_coarsening = self.tol
                    self.tol = coarser
                    level["coarsen_for_noise"] = coarser
            if count >= s.max_levels:
                return state, level["lml"], False, ell
            prev = (theta, level["lml"])
            start = np.exp(theta)
            if self.n_ell == 1:
                # an optimum on its range's edge lies beyond it: the next level's profiled
                # search starts halfway (in log) to the next range's end that way, not at
                # the edge, from which it spent evaluations on steps uphill
                # (ggplot2::txhousing's walk, at a search tolerance of 1e-4: 6, 6, 6, 6 and
                # 10 evaluations -> 6, 5, 5, 5 and 9, the same optimum; ARD's quasi-Newton search,
                # started so, ended up to 1.7e-3 nats lower on two sets: it keeps the edge)
                if lo_hit[0] or hi_hit[0]:
                    start[1] = np.sqrt(nxt[0, 0 if lo_hit[0] else 1] * ell[0])
            ranges, thetas = nxt, [start]

    def _learn(self, red, spectral, ranges: np.ndarray, thetas: list[np.ndarray], where: str):
        """A level's optimum within ``ranges`` from ``thetas``: (log theta, history), by the
        profiled search (:meth:`_profiled`) or the quasi-Newton search."""
        s = self.s
        if self._profiled(red, thetas):
            with timed(self.clock, "profile search"), one_blas_thread():
                return self._profile_fit(red, spectral, ranges, thetas[0], where)
        box = [s.signal_bounds, *[tuple(r) for r in ranges], s.noise_bounds]
        with timed(self.clock, "quasi-Newton"), one_blas_thread():
            res, history = fit_hyperparameters(glf_objective(red, spectral), box, thetas,
                                               progress=self.progress,
                                               title=f"GP quasi-Newton ({where})")  # fmt: skip
        return res.x, history

    def _refactored(self, fmap, ranges, st, red, spectral, theta, noise, history, where):
        """A level's factor stopped for its starts' ``noise``: at the optimum ``theta`` the
        likelihood it lost (estimated: rfcli.learn.gpr.factor_nats); above REFACTOR_NATS
        it is made again for a smaller noise (the estimate's share of REFACTOR_NATS) and
        the level learns on (``history`` grows) -- where the trace stop cut it (else it
        stopped at the rounding threshold, and no noise changes it) and while the new
        factor differs.  (the factor, theta, the estimate of the factor kept)"""
        with one_blas_thread():
            lost = st.factor_nats(theta, red, spectral)
        for _ in range(REFACTOR_TRIES):
            if lost is None or lost <= REFACTOR_NATS:
                break
            if not red.trace_left <= trace_tolerance(noise) * (1 + 1e-6):
                break
            noise *= REFACTOR_NATS / lost / REFACTOR_FACTOR
            with timed(self.clock, "factor of G"), one_blas_thread():
                finer = st.reduced(weights=box_weights(fmap, ranges), noise=noise,
                                   kernel=self._basis_kernel(ranges))  # fmt: skip
            if finer.r == red.r:
                break
            red = finer
            theta, more = self._learn(red, spectral, ranges, [np.exp(theta)], where)
            history += more
            with one_blas_thread():
                lost = st.factor_nats(theta, red, spectral)
        return red, theta, lost

    def _exact_first(self, ranges: np.ndarray, noise: float) -> bool:
        """Before a group's first level: whether the exact GP costs less than a level of the
        rule for ``ranges`` at the current tolerance (no rule designed where it costs less
        than any level; a rule over the budget is left to the levels, which handle it)."""
        if not self._exact_ready():
            return False
        if self._exact_below_any_level(ranges):
            return True
        try:
            fmap = self._map(ranges)
        except RuleTooLarge:
            return False
        return self._exact_cheaper(fmap, ranges, noise)

    def _profiled(self, red, thetas: list[np.ndarray]) -> bool:
        """Whether a level learns by the profiled search (:meth:`_profile_fit`) rather than
        L-BFGS-B: one lengthscale, one start, and at least PROFILE_RATIO features per rank
        of the factor.  A profile evaluation is the weighted Gram product (r^2 m flops) and
        an r x r tridiagonal reduction (4/3 r^3, half of it matrix-vector work); an L-BFGS-B
        evaluation adds the gradient's product of the factor's size (about 1.2 r^2 m) to the
        Gram product and A's Cholesky factor and inverse (2/3 r^3).  From m = 2 r on the
        profile's evaluation costs no more, and the search takes fewer (ggplot2::diamonds,
        m = 14 r: 8 evaluations in 0.23-0.31 s against L-BFGS-B's 15 in 0.68-0.85 s;
        DAAG::edcT, m = 2.5 r: 10 in 0.46 s against 13 in 0.47-0.59 s)."""
        return self.n_ell == 1 and len(thetas) == 1 and red.P.shape[1] >= PROFILE_RATIO * red.r

    def _profile_fit(self, red, spectral, ranges: np.ndarray, theta0: np.ndarray, where: str):
        """The level's maximum by :func:`rfcli.learn.gpr_search.profile_maximum` over its
        range (the signal and noise variances exact for each lengthscale): (log theta, the
        history entry).  ggplot2::diamonds (3,000 rows, 6,310 features of rank 455): 8
        evaluations, 0.27 s, where L-BFGS-B took 15 evaluations, 0.68-0.85 s, to the same
        LML within 1e-8."""
        s = self.s
        evaluate = glf_profile(red, spectral, s.signal_bounds, s.noise_bounds,
                               concurrent=False, keep_best=True)  # fmt: skip
        best, evals = profile_maximum(
            evaluate, *ranges[0], start=float(theta0[1]),
            progress=self.progress, title=f"GP profile search ({where})",
        )  # fmt: skip
        theta = np.array([best["log_s2"], np.log(best["ell"][0]), best["log_lam"]])
        kept = evaluate.best
        if kept["M"] is not None and kept["ell"][0] == best["ell"][0]:
            keep_factor(theta, red, spectral, kept["M"])  # the optimum's A without a product
        entry = {"start": [float(v) for v in theta0], "lml": float(best["lml"]),
                 "iterations": int(evals), "method": "profile"}  # fmt: skip
        return theta, [entry]

    def _record(self, kind, fmap, ranges, theta, red, spectral, history, scan_best=None):
        level = {
            "kind": kind,
            "nodes": len(fmap.w_),
            "features": fmap.n_features,
            "q": fmap.q_,
            "rules": fmap.rules_,
            "lengthscale_range": ranges.tolist(),
        }
        if theta is not None:
            ell = np.exp(theta[1 : 1 + self.n_ell])
            with one_blas_thread():
                lml, _ = lml_and_grad(theta, red, spectral, need_grad=False)
            level.update(
                lengthscale=[float(v) for v in ell],
                noise_to_signal=float(np.exp(theta[-1] - theta[0])),
                kernel_tol=self.tol,
                lml=float(lml),
                iterations=int(sum(h["iterations"] for h in history)),
                probe_error=fmap.probe_error(self.width, self._full(ell)),
                kernel_error_data=self._data_error(fmap, self._full(ell), red.n),
            )
        if scan_best is not None:
            level["scan_best"] = [float(v) for v in scan_best["ell"]]
        self.levels.append(level)
        return level

    def _done(self, enc, st, red, spectral, theta, history, level=None):
        level = level or self.levels[-1]
        self.report["levels"] = self.levels
        self.report["probe_error"] = level.get("probe_error")
        self.report["node_budget"] = self.max_nodes
        if "noise_to_signal" in level:  # the kernel error at the optimum beside the noise
            self.report["noise_to_signal"] = level["noise_to_signal"]
        if level["kind"] == "exact":  # spectral: the ExactGP
            return self._exact_fit(spectral, theta, history, level), self.passes
        if "noise_to_signal" in level:
            self.report["kernel_error_data"] = level["kernel_error_data"]
            self.report["kernel_tol"] = level["kernel_tol"]
        fit = Fit(enc, st, red, spectral, theta, history, "glf", self.n_ell, [])
        return fit, self.passes
