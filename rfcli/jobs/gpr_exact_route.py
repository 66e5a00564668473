"""The exact GP route of GP regression's levels (docs/gpr.md, Exact GP): before each level's
pass, whether the exact GP of the rows the first pass kept costs less than the level's rule
(:meth:`ExactRoute._exact_cheaper`), the exact fit itself (:meth:`ExactRoute._exact`;
the numerics: rfcli.learn.gpr_exact), and the route where no coarse rule fits the budget
(:meth:`ExactRoute._rows_only`).  :class:`ExactRoute` is a part of
:class:`rfcli.jobs.gpr_levels.Levels`, which it reads: ``s`` (GPRSettings), ``bounds``,
``n_ell``, ``d``, ``width``, ``budget``, ``xy`` and ``n`` (the first pass's rows),
``report``, ``clock``, ``progress``, ``history``, ``levels``, ``base``, ``passes``, its
passes (``_pass``) and refusals (``_too_large``), and the row sample's features and exact
scan (rfcli.jobs.gpr_sample.SampleChecks).
"""

from __future__ import annotations

import numpy as np

from rfcli.jobs.gpr_learn import Fit, lml_margin, theta_of, timed
from rfcli.learn.gpr import trace_tolerance
from rfcli.learn.gpr_exact import ExactGP, exact_memory_need, max_exact_rows
from rfcli.learn.gpr_factor import box_weights, feature_rank
from rfcli.learn.gpr_optimize import escape, fit_hyperparameters
from rfcli.learn.gpr_search import pick_starts
from rfcli.maps.gauss_legendre import GaussLegendreMap
from rfcli.threads import one_blas_thread

#: the exact GP against a level (Levels._exact_cheaper): a sample rank of at least RANK_FULL
#: x its most is taken as still growing with the rows; a level's pass and LEVEL_FLOPS (its
#: rule design and kernel error checks, about 0.5 s) are spread over LEVEL_STEPS likelihood
#: steps; the exact GP takes EXACT_STEP_RATIO x as many (the whole bounds).  Calibrated on
#: the development set (docs/gpr-report.md): ames' level of 8,686 features (rank 543 on
#: 2,051 rows) took 3.2 s where the exact GP took 5 s
RANK_FULL, LEVEL_STEPS, LEVEL_FLOPS, EXACT_STEP_RATIO = 0.9, 10, 2e10, 1.5
#: the sample's first rows whose rank is taken first (Levels._exact_cheaper): a lower bound
#: of the sample's rank, and (times sample rows / RANK_PROBE) an estimate of its most, at
#: about (RANK_PROBE / sample rows)^2 of its cost
RANK_PROBE = 250


class ExactRoute:
    """The exact GP route of :class:`rfcli.jobs.gpr_levels.Levels` (module docstring)."""

    def _init_exact_route(self, rows: int | None) -> None:
        """``rows``: the fitting pass's row count.  The first pass keeps every row when there
        are at most as many as an exact GP holds in the budget (levels only: not with a
        fixed lengthscale or a rule given by hand)."""
        s = self.s
        levels = s.exact and s.learn and s.nodes is None
        self.exact_rows = max_exact_rows(self.budget, self.d) if levels else 0
        if rows is None or rows > self.exact_rows:
            self.exact_rows = 0
        self._gp: ExactGP | None = None
        self.band_route = True  # a series may take band steps (until their limit is met)
        self.later_starts: list[dict] = []  # the groups after the one being refined
        self.later_done = False  # whether the exact GP started from all of them
        self.held = 0  # bytes of the finished groups' statistics

    def _rows_only(self, e) -> list[dict]:
        """No coarse rule fits the budget (a Matern 1/2 kernel's heavy spectrum: 387,371
        nodes at the box's width on ggplot2::txhousing, 2-D): where the exact GP of the rows
        can run, a pass on a rule of one node pair per input keeps the rows (its features
        serve no fit), and the exact GP's scan on the row sample over the whole bounds gives
        the starts; the levels then find no rule that fits there and hand over to the exact
        GP (:meth:`_refine`).  Else the refusal ``e``."""
        s = self.s
        if not self.exact_rows:
            raise self._too_large(e, "for the coarse scan") from None
        lb = self.bounds[0].tolist() if self.n_ell == 1 else self.bounds.tolist()
        carrier = GaussLegendreMap(kernel=s.kernel, lengthscale_bounds=lb, nodes=[2],
                                   cutoff=[1.0], seed=s.seed)  # fmt: skip
        with one_blas_thread():
            carrier.fit(self.d, box=(np.zeros(self.d), self.width))
        _, st, _, _ = self._pass(carrier, "the rows, for the exact GP", self.bounds)
        if not self._exact_ready():
            raise self._too_large(e, "for the coarse scan") from None
        X, _, _, pts = self._exact_scan(st)
        self.report["coarse_rule"] = f"none fits ({e}): the exact GP of the rows"
        return pick_starts(pts, s.starts, lml_margin(len(X)))

    def _exact_ready(self) -> bool:
        """Whether the first pass kept every row (at most ``exact_rows``) for an exact GP,
        and its matrices fit the budget beside the finished groups' statistics."""
        if self.xy is None or not 1 < self.n == len(self.xy) <= self.exact_rows:
            return False
        return exact_memory_need(self.n, self.d) + self.held <= self.budget

    def _exact_gp(self) -> ExactGP:
        """The exact GP of the rows the first pass kept, once; its targets standardized by
        their own mean and standard deviation, summed in the rows' hash order (the same
        numbers for any chunking: a pass's sums are not)."""
        if self._gp is None:
            ard = self.n_ell > 1
            self._gp = ExactGP.of_targets(self.xy[:, :-1], self.xy[:, -1], self.s.kernel, ard)
        return self._gp

    def _exact_step_flops(self, ranges: np.ndarray) -> float:
        """An exact GP step's flops at the range's longest lengthscale, times
        EXACT_STEP_RATIO (:meth:`_exact_cheaper`)."""
        ell_top = float(ranges[:, 1].max())
        return EXACT_STEP_RATIO * self._exact_gp().step_flops(ell_top, band=self.band_route)

    def _exact_below_any_level(self, ranges: np.ndarray) -> bool:
        """Whether exact GP steps cost less than any level's fixed part, LEVEL_FLOPS shared
        by LEVEL_STEPS steps (a level of no features): then :meth:`_exact_cheaper` holds
        for every rule, and none needs designing (a few hundred rows: 40-60% of a fit's
        time went to designing the level's rule only to count its features)."""
        return self._exact_step_flops(ranges) < LEVEL_FLOPS / LEVEL_STEPS

    def _exact_cheaper(self, fmap: GaussLegendreMap, ranges: np.ndarray, noise=None) -> bool:
        """Whether exact GP steps cost less than a level on ``fmap``'s m features, in flops
        per step.  Exact (:meth:`ExactGP.step_flops`, at the range's longest lengthscale):
        about 4/3 n^3 dense, O(n b^2) for one input in a band of half-width b; times
        EXACT_STEP_RATIO, as its search runs over the whole bounds.  A level: about
        2 r^2 m per step (A = P D P' and the gradient's product, r the features' rank on the
        data), and, shared by LEVEL_STEPS steps, its pass (n m^2; with more features than
        rows the rows' own factor by blocks, 2 n m r for the pivots' columns, and P = Q'V,
        2 n r m: rfcli.learn.gpr_factor; where the exact kernel's basis serves, as it
        usually does since December 2026, the first of them is O(n r d), so the model
        overstates such a level: its calibration predates the basis) and LEVEL_FLOPS for its
        rule design and kernel error checks.  r is estimated on the row sample only when the
        bounds r <= min(n, m) do not decide: its rank there when the sample is every row or
        the rank stops short of the sample's size (smooth features of clustered inputs:
        ggplot2::diamonds' 5,018 features have rank 478 on 3,000 rows), else min(n, m).
        The rank of the sample's first RANK_PROBE rows comes first: a subset's rank is at
        most the whole's, so a level that costs more than the exact GP at that rank costs
        more at the sample's (itsadug::eeg, 18,846 features on 1,052 rows: 0.06 s where the
        sample's rank took 0.44 s); and the sample is k / RANK_PROBE disjoint random parts
        like the probe, a rank at most the sum of its parts', so a level that costs less at
        that many times the probe's rank (short of RANK_FULL x the sample) costs less at the
        sample's (ggplot2::diamonds ARD, 3,000 rows: ranks 109 and 133 on the probe, 152 and
        190 on the sample; its two levels' checks 0.39 -> 0.13 s)."""
        n, m = float(self.n), float(fmap.n_features)
        exact = self._exact_step_flops(ranges)

        def level(r: float) -> float:
            fixed = 2 * n * m * (r + r) if m > n else n * m * m
            return 2 * r * r * m + (fixed + LEVEL_FLOPS) / LEVEL_STEPS

        if exact < level(0.0):
            return True
        if exact >= level(min(n, m)):
            return False
        k = len(self._sample_inputs)
        rank = self._sample_rank
        if rank is None or rank[0] is not fmap:
            with timed(self.clock, "rank on the sample"), one_blas_thread():
                # (only where the probe's largest rank would decide)
                # weighed as the level's factor will be (rfcli.learn.gpr.Reduced)
                # and stopped as it will be for the ``noise`` the level expects, the
                # residual's trace in proportion to the rows
                w, tt = box_weights(fmap, ranges), trace_tolerance(noise) / max(n, 1.0)
                if k > RANK_PROBE:
                    if self._probe_rank is None or self._probe_rank[0] is not fmap:
                        V = self._sample_features(fmap, RANK_PROBE)
                        self._probe_rank = (fmap, feature_rank(V, weights=w, trace_tol=tt * len(V)))
                    probe = self._probe_rank[1]
                    if exact < level(float(probe)):
                        return True
                    # the sample is k / RANK_PROBE disjoint random parts like the probe, and
                    # a rank is at most the sum of its parts' ranks
                    most = probe * k / RANK_PROBE
                    if most < RANK_FULL * min(k, m) and exact >= level(most):
                        return False
                V = self._sample_features(fmap)
                rank = self._sample_rank = (
                    fmap,
                    feature_rank(V, weights=w, trace_tol=tt * len(V)),
                )
        r = rank[1]
        if k < n and r >= RANK_FULL * min(k, m):
            r = min(n, m)
        return exact < level(float(r))

    def _exact_instead(self, thetas: list[np.ndarray], group: int):
        """The exact GP where no rule fits the range the levels head for (:meth:`_exact`;
        where a series' band route stops at its limit, the dense exact GP after it)."""
        out = self._exact(thetas, group)
        return out if out is not None else self._exact(thetas, group)

    def _exact(self, thetas: list[np.ndarray], group: int):
        """The exact GP on the rows the first pass kept, the quasi-Newton search over the
        whole bounds from ``thetas`` and the later groups' starts (which then stop:
        :meth:`_refine_all`), where it costs less than the next level or that level's rule
        is over the budget (rfcli.learn.gpr_exact). A series whose bounds start with band
        steps (the band widens with the lengthscale, so also where the level's range ends
        past it: a Matern kernel's band is about 2.2x the Gaussian's at a lengthscale) stays
        within the lengthscales whose steps are band steps (a dense step of many rows would
        cost more than the levels); when its optimum sits at that limit the levels go on
        instead (None, and no band route again). The group's (state, LML, converged,
        lengthscales), as :meth:`_refine`'s."""
        s = self.s
        self._keep_sample_features(None)  # not kept through the exact fit
        gp = self._exact_gp()
        bounds = self.bounds.copy()
        band = self.band_route and gp.banded(float(self.bounds[0, 0]))
        if band:
            bounds[0, 1] = gp.band_limit(bounds[0, 0], bounds[0, 1])
        box = [s.signal_bounds, *[tuple(b) for b in bounds], s.noise_bounds]
        # the later groups' starts within these bounds (a start beyond a band's limit
        # leaves its group to be refined on its own)
        later = [p for p in self.later_starts if np.all(np.asarray(p["ell"]) <= bounds[:, 1])]
        starts = thetas + [theta_of(p) for p in later]
        title = f"GP quasi-Newton (exact GP, {gp.n} rows)"
        with timed(self.clock, "exact GP"), one_blas_thread():
            res, history = fit_hyperparameters(gp.terms, box, starts,
                                               progress=self.progress, title=title)  # fmt: skip
            if self.n_ell > 1:
                # with one lengthscale the scans evaluated every grid point of its bounds;
                # with several they sweep them by turns, and the search's path picks among the
                # maxima (docs/gpr.md, Exact GP: past the optimum)
                value = lambda th: gp.terms(th, need_grad=False)  # noqa: E731
                res, history = escape(gp.terms, value, box, res, history,
                                      progress=self.progress, title=title)  # fmt: skip
        theta = res.x
        ell = np.exp(theta[1 : 1 + self.n_ell])
        if band and bounds[0, 1] < self.bounds[0, 1] and ell[0] >= bounds[0, 1] * 0.9999:
            self.band_route = False
            self.report.setdefault("band_limit_reached", []).append(float(bounds[0, 1]))
            return None
        self.history += history
        self.later_done = len(later) == len(self.later_starts)
        level = {
            "kind": "exact",
            "rows": gp.n,
            "group": group,
            "lengthscale_range": self.bounds.tolist(),
            "lengthscale": [float(v) for v in ell],
            "noise_to_signal": float(np.exp(theta[-1] - theta[0])),
            "lml": float(-res.fun),
            "iterations": int(sum(h["iterations"] for h in history)),
        }
        self.levels.append(level)
        state = (None, None, None, gp, theta, self.history, level)
        return state, level["lml"], bool(res.success), ell

    def _exact_fit(self, gp, theta, history, level) -> Fit:
        """What learning produced on the exact route: the map of the training rows and the
        model's parts at ``theta`` (rfcli.learn.gpr_exact.ExactGP.model_parts)."""
        self.report["exact_rows"] = level["rows"]
        with timed(self.clock, "exact GP posterior"), one_blas_thread():
            fmap, weights, s2, lam, factor = gp.model_parts(theta)
        parts = {"weights": weights, "s2": s2, "lam": lam, "factor": factor, "mu": gp.mu,
                 "sd": gp.sd, "lml": level["lml"], "rows": level["rows"]}  # fmt: skip
        return Fit(self.base.encoder(fmap), None, None, gp, theta, history, "exact",
                   self.n_ell, [], exact_parts=parts)  # fmt: skip
