"""The levels' design tolerance (rfcli.jobs.gpr_levels, docs/gpr.md): the tolerance a
level's rule is designed at follows the learned noise.  The kernel matrix's error on the data
at an optimum (rfcli.jobs.gpr_sample) must be at most NOISE_SHARE x the learned noise/signal;
where it is not, the tolerance is lowered until the error meets NOISE_REFINE x the ratio
(:meth:`DesignTolerance._finer_tol`), before a group's first level from the scans' noise
(:meth:`DesignTolerance._tol_for_prior`); a level that shrinks the rule around an inside
optimum raises it again to the coarsest that meets the same target there
(:meth:`DesignTolerance._coarser_tol`); where the finer rule does not fit the budget, the
finest coarser one that does (:meth:`DesignTolerance._coarser_fit`).  A mixin of
:class:`rfcli.jobs.gpr_levels.Levels`: it uses the levels' ``tol``, ``s`` (the settings),
``n``, ``report``, their rule designs (``_map``, at a tolerance given), the data error
(:meth:`rfcli.jobs.gpr_sample.SampleChecks._data_error`) and ``_full``."""

from __future__ import annotations

import numpy as np

from rfcli.maps.gauss_legendre import GaussLegendreMap
from rfcli.maps.glf_rules import RuleTooLarge

#: the kernel error at the optimum must be at most NOISE_SHARE x noise/signal; when it is
#: not, the rules are refined to NOISE_REFINE x noise/signal (room for the noise to move)
NOISE_SHARE, NOISE_REFINE = 0.1, 0.03
#: a refinement for the noise tries design tolerances tol / REFINE_FACTOR^k, k = 1 ..
#: REFINE_TRIES, and keeps the coarsest whose rule's error on the data meets the target
REFINE_FACTOR, REFINE_TRIES = 3.0, 8


class DesignTolerance:
    """The design tolerance of :class:`rfcli.jobs.gpr_levels.Levels`' rules."""

    def _tol_for_prior(self, ranges: np.ndarray, start: dict) -> float | None:
        """Before a group's first level: the design tolerance lowered (by REFINE_FACTOR at a
        time, at most REFINE_TRIES times, while the rule fits the budget) until the rule's
        error on the data at the start's lengthscales is at most NOISE_REFINE x the start's
        noise/signal, the target a refinement for the noise would set after the level.  The
        scans' profiled noise at their best point is close to the optimum's (the development
        set's first levels moved it by at most 2%: docs/gpr.md), so the first level usually
        meets its noise check at once, where it otherwise took a second level of the same
        lengthscales with a finer rule: a pass and a quasi-Newton run.  A prior too large (a
        coarse rule's own error learned as noise) only leaves that check to the level.
        Returns the tolerance before, when it was lowered (else None)."""
        prior = float(np.exp(start["log_lam"] - start["log_s2"]))
        target = NOISE_REFINE * prior
        ell = self._full(np.asarray(start["ell"], dtype=float))
        try:
            if not self._data_error(self._map(ranges), ell, self.n) > target:
                return None
        except RuleTooLarge:
            return None
        chosen, _ = self._finer_tol(ranges, ell, self.n, target)
        if chosen is None:
            return None
        old, self.tol = self.tol, chosen
        self.report.setdefault("prior_refine", []).append(
            {"noise_to_signal": prior, "kernel_tol": self.tol}
        )
        return old

    def _coarser_tol(self, ranges: np.ndarray, ell: np.ndarray, n: int, target: float):
        """The coarsest of the tolerances ``tol x REFINE_FACTOR^k`` (k = 1, 2, .., up to the
        fit's own tolerance) whose rule for ``ranges`` errs on the data at ``ell`` by at most
        ``target``, taken in turn until one does not; None when k = 1 does not (or the
        tolerance is the fit's own).  The current tolerance stays."""
        tol, chosen = self.tol, None
        while tol < self.s.tol * (1 - 1e-9):
            tol = min(tol * REFINE_FACTOR, float(self.s.tol))
            try:
                if self._data_error(self._map(ranges, tol), ell, n) > target:
                    break
            except RuleTooLarge:
                break
            chosen = tol
        return chosen

    def _finer_tol(self, ranges: np.ndarray, ell: np.ndarray, n: int, target: float):
        """The design tolerances ``tol / REFINE_FACTOR^k``, k = 1 .. REFINE_TRIES, in turn: the
        first whose rule for ``ranges`` has an error on the data at ``ell`` of at most
        ``target``, else the finest that fits the budget; (that tolerance, or None when not
        even k = 1 fits; the RuleTooLarge met, or None).  The current tolerance stays."""
        chosen, too_large = None, None
        for k in range(1, REFINE_TRIES + 1):
            tol = self.tol / REFINE_FACTOR**k
            try:
                cand = self._map(ranges, tol)
            except RuleTooLarge as e:
                too_large = e
                break
            chosen = tol
            if self._data_error(cand, ell, n) <= target:
                break
        return chosen, too_large

    def _coarser_fit(self, ranges: np.ndarray, limit: float) -> GaussLegendreMap:
        """The rule for ``ranges`` at the finest tolerance ``tol * REFINE_FACTOR^k`` that
        fits the budget (``limit`` at most); RuleTooLarge when not even ``limit`` fits."""
        tol = self.tol
        while True:
            tol = min(tol * REFINE_FACTOR, limit)
            try:
                fmap = self._map(ranges, tol)
            except RuleTooLarge:
                if tol < limit:
                    continue
                self.tol = tol  # (the limit, as the levels go on from it)
                raise
            self.tol = tol
            return fmap
