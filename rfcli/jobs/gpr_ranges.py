"""The levels' trust regions (rfcli.jobs.gpr_levels, docs/gpr.md): the range of
lengthscales a level's rule serves around its starts, whether an optimum lies inside its
range, how far the next range reaches beyond an edge the optimum sits on, whether it heads
for another group's optimum, and whether a range's rule fits the budget.  A mixin of
:class:`rfcli.jobs.gpr_levels.Levels`: it uses the levels' ``bounds``, ``d``, ``n_ell``,
their rule designs (``_map``) and the exact route's cost check
(:class:`rfcli.jobs.gpr_exact_route.ExactRoute`)."""

from __future__ import annotations

import numpy as np

from rfcli.maps.glf_rules import RuleTooLarge

#: a level's rule serves lengthscales within a factor F_OUT of its centre; a group stops when
#: its optimum comes within a factor F_IN of a refined group's
F_OUT, F_IN = 1.5, 1.2
#: a level is final when its optimum lies a factor F_FINAL inside the range it was optimized
#: in (the range bounds the search: an optimum it holds sits on the edge; the margin is for a
#: search that stopped while still moving towards it).  It was F_IN, 1.2, until December
#: 2026: ggplot2::diamonds with --ard then ran a third level from an optimum 1.14 inside its
#: range, to move it by 0.07% and the LML by 0.03 nats (3.5 of 14-17 s)
F_FINAL = 1.05
#: a level reaching down beyond a lower edge hit again and again has at most REACH_GROWTH x
#: the nodes of the level before it at the same tolerance (TrustRegions._reach; not the reach to
#: the sample scan's best point, nor a rule refined for the noise): the walk's cost grows
#: geometrically, and the level that finds the optimum overshoots it at most so
REACH_GROWTH = 2.5


class TrustRegions:
    """The trust-region geometry of :class:`rfcli.jobs.gpr_levels.Levels`."""

    def _trust(self, centres: list[np.ndarray]) -> np.ndarray:
        lo = np.min([c / F_OUT for c in centres], axis=0)
        hi = np.max([c * F_OUT for c in centres], axis=0)
        return np.column_stack([np.clip(lo, *self.bounds.T), np.clip(hi, *self.bounds.T)])

    def _inside(self, ell: np.ndarray, ranges: np.ndarray) -> bool:
        """Whether an optimum lies a factor F_FINAL inside the range it was optimized in, or
        on an edge that is the bound itself (it can go no further)."""
        return bool(np.all(
            ((ell / F_FINAL >= ranges[:, 0]) | (ranges[:, 0] <= self.bounds[:, 0]))
            & ((ell * F_FINAL <= ranges[:, 1]) | (ranges[:, 1] >= self.bounds[:, 1]))
        ))  # fmt: skip

    def _heading_for(self, ell: np.ndarray, ranges: np.ndarray, target: np.ndarray) -> bool:
        """Whether an optimum ``ell`` on an edge of its ``ranges`` (not a bound) heads for
        ``target``: beyond each edge it sits on, within the range elsewhere."""
        lo, hi = ranges[:, 0], ranges[:, 1]
        lo_edge = (ell <= lo * 1.0001) & (lo > self.bounds[:, 0] * 1.0001)
        hi_edge = (ell >= hi * 0.9999) & (hi < self.bounds[:, 1] * 0.9999)
        inside = (target >= lo) & (target <= hi)
        beyond = np.where(lo_edge, target < ell, np.where(hi_edge, target > ell, inside))
        return bool(np.any(lo_edge | hi_edge) and np.all(beyond))

    def _fits(self, ranges: np.ndarray) -> bool:
        """Whether a rule for ``ranges`` at the current tolerance fits the node budget."""
        try:
            self._map(ranges)
        except RuleTooLarge:
            return False
        return True

    def _reach(self, nxt, ell, lo_hit, hi_hit, reach: float, nodes: int, noise: float):
        """``nxt`` reaching a factor ``reach`` beyond ``ell`` on the edges it hit: on upper
        edges all of it, on lower edges the longest reach (down by sqrt(F_OUT) a step,
        F_OUT at least) whose rule, at the current tolerance, has at most REACH_GROWTH x
        the current level's ``nodes``.  A rule's nodes grow about as (1 / its smallest
        lengthscale)^d, so a reach down overshoots at that cost, a reach up at little
        (ggplot2::txhousing, 2-D: a reach of 3.4 to 0.10 for an optimum at 0.21 took a level
        of 7,183 nodes, 5.7 of the fit's 10.2 s, and a level of 2,978 nodes around the
        optimum after it).  The whole reach is kept where its rule fits the budget and the
        exact GP, which could run, costs less than it: the exact route then takes the rows
        at once, as it did before the cut.  A whole reach over the budget is cut to one
        that fits, where the exact GP took over before the cut: ggplot2::txhousing, a reach
        to 0.067, then a level of 2,241 nodes that holds the optimum (4.4-5.3 s in all,
        where the exact GP took 13.4 s); with Matern 5/2 a level of 6,011 nodes that does
        not, and the exact GP after it (17.7-19.0 s where 14.7 s).  Shorter reaches are
        designed only from the longest one predicted to fit (the whole reach's nodes scaled
        by the ratios of the smallest lengthscales, to the power d with one lengthscale):
        each design of a rule of thousands of nodes takes 0.05-0.15 s (txhousing: six
        designs, 0.6 of its 3.1 s, where two serve)."""
        far = nxt.copy()
        far[:, 1] = np.where(hi_hit, np.minimum(ell * reach, self.bounds[:, 1]), nxt[:, 1])

        def at(r: float) -> np.ndarray:
            out = far.copy()
            out[:, 0] = np.where(lo_hit, np.maximum(ell / r, self.bounds[:, 0]), nxt[:, 0])
            return out

        whole, cap = at(reach), REACH_GROWTH * nodes
        if reach <= F_OUT or not np.any(lo_hit):
            return whole
        try:
            fmap = self._map(whole)
            if len(fmap.w_) <= cap:
                return whole
            if self._exact_ready() and self._exact_cheaper(fmap, whole, noise):
                return whole
            known = len(fmap.w_)
        except RuleTooLarge as e:
            known = e.nodes  # (before pruning where it was too large to prune: more)
        power = self.d if self.n_ell == 1 else 1
        while True:
            reach = max(reach / np.sqrt(F_OUT), F_OUT)
            cand = at(reach)
            if reach <= F_OUT:
                return cand
            if known * np.prod((whole[:, 0] / cand[:, 0]) ** power) > cap:
                continue  # predicted over: not designed
            try:
                if len(self._map(cand).w_) <= cap:
                    return cand
            except RuleTooLarge:
                pass


def walk_reach(streak: list[tuple[np.ndarray, float]]) -> float:
    """How far beyond its optimum the next level of a walk should reach (a factor of the
    lengthscales), from the walk's last three levels on an edge (log lengthscales, LML), in
    order: where the LML's rise per unit of step (the largest change of a log lengthscale)
    slowed from the first step to the second, the slope, linear in the walk between the
    steps' midpoints, reaches 0 at a predicted optimum a distance D beyond the last level;
    the reach is F_OUT x e^D (F_OUT where the optimum is predicted behind it).  inf (no
    limit) where the rise did not slow, the LML fell, a step did not move, or fewer than
    three levels are known.  The levels may differ in their rules' tolerances (a walk
    refines them for the noise), and with ARD the step counts every input: the prediction
    is rough, and it only ever cuts the reach, so a wrong one costs levels, not the optimum.
    ggplot2::txhousing with --ard: the lengthscale of the date walked 1.80, 1.20, 0.654 with
    LML -3311.1, -3276.3, -3260.4 (the rise 86 then 26 per unit); the growing reach went
    to 0.194 (a rule of 4,517 nodes), where the optimum was 0.459, inside the plain step's
    range."""
    if len(streak) < 3:
        return np.inf
    (x0, l0), (x1, l1), (x2, l2) = streak[-3:]
    h1 = float(np.max(np.abs(x1 - x0)))
    h2 = float(np.max(np.abs(x2 - x1)))
    if not (h1 > 0 and h2 > 0):
        return np.inf
    s1, s2 = (l1 - l0) / h1, (l2 - l1) / h2
    if not (0 < s2 < s1):
        return np.inf
    # midpoints of the steps at h1 / 2 and h1 + h2 / 2; the slope's zero beyond the last level
    ahead = s2 * (h1 + h2) / 2 / (s1 - s2) - h2 / 2
    if ahead > 50.0:  # a rise that barely slowed: no limit (e^50, and no overflow)
        return np.inf
    return float(F_OUT * np.exp(max(ahead, 0.0)))
