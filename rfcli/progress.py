"""The progress protocol the library reports to (the CLI renders it with rich on stderr).

A job opens *tasks*: a data pass counts rows, an optimizer counts iterations, a grid search
its candidates (``unit``).  A task may change its total while it runs and carry values
shown beside its bar (an objective, a log marginal likelihood, the best candidate so far):
:meth:`ProgressTask.update`.  An optimizer's total is an estimate of the iterations it will
need (:class:`Iterations`), so that the renderer's remaining time (iterations left at the
recent rate) is that of convergence, not of the iteration budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol


class ProgressTask(Protocol):
    def advance(self, n: int) -> None: ...

    def update(self, total: int | None = None, **values: float | int | str) -> None:
        """A new (estimated) total when given; ``values`` replace the values shown."""
        ...


class Progress(Protocol):
    def task(
        self, description: str, total: int | None, unit: str = "rows"
    ) -> AbstractContextManager[ProgressTask]: ...


class _NullTask:
    def advance(self, n: int) -> None:
        pass

    def update(self, total: int | None = None, **values) -> None:
        pass


class NullProgress:
    """Reports nothing (library default)."""

    def task(self, description, total, unit="rows"):
        return nullcontext(_NullTask())


#: relative reductions the estimate of :func:`iterations_left` is fitted to
WINDOW = 10


def relative_reduction(previous: float, current: float) -> float:
    """``(f_prev - f) / max(|f_prev|, |f|, 1)``: the quantity L-BFGS-B compares with ftol."""
    return (previous - current) / max(abs(previous), abs(current), 1.0)


def iterations_left(log_reductions: list[float], tol: float, cap: int) -> int:
    """Iterations until the relative objective reduction falls below ``tol``, from the logs of
    the last reductions (at most ``cap``; ``cap`` when they do not fall).

    L-BFGS converges R-linearly on uniformly convex objectives (Liu & Nocedal, "On the
    limited memory BFGS method for large scale optimization", Mathematical Programming 45,
    1989), so ``log r_k`` falls about linearly in k: a least-squares line through the
    values given, extrapolated to ``log tol`` from its value at the last of them."""
    cap = max(int(cap), 0)
    n = len(log_reductions)
    if n < 3:
        return cap
    k = sum(range(n)) / n
    mean = sum(log_reductions) / n
    sxx = sum((i - k) ** 2 for i in range(n))
    slope = sum((i - k) * (v - mean) for i, v in enumerate(log_reductions)) / sxx
    if not slope < 0:
        return cap
    last = mean + slope * (n - 1 - k)
    left = (math.log(tol) - last) / slope
    return int(min(max(math.ceil(left), 0), cap))


class Iterations:
    """An optimizer's iterations as a progress task: each :meth:`step` advances it by one,
    shows the values given and re-estimates the total from the relative objective
    reductions against the stopping tolerance ``tol`` (:func:`iterations_left`), within the
    ``budget`` of iterations per stage; ``stages``: optimizations run one after the other
    (the SVM's smoothed hinges), each expected to take as long as the current one."""

    def __init__(self, task: ProgressTask, budget: int, tol: float, stages: int = 1):
        self.task, self.budget, self.tol, self.stages = task, int(budget), float(tol), stages
        self.done = 0
        self.stage = 0
        self._stage_done = 0
        self._last: float | None = None
        self._logs: list[float] = []

    def next_stage(self) -> None:
        """The next optimization starts (from the current point)."""
        self.stage += 1
        self._stage_done = 0
        self._last = None
        self._logs = []

    def step(self, minimized: float, /, **values: float | int | str) -> None:
        """One iteration done, at the value ``minimized``; ``values`` to show."""
        if self._last is not None:
            r = relative_reduction(self._last, minimized)
            if r > 0:
                self._logs.append(math.log(r))
        self._last = float(minimized)
        self.done += 1
        self._stage_done += 1
        self.task.update(total=self.estimated_total(), **values)
        self.task.advance(1)

    def callback(self, values: Callable[[float], dict]) -> Callable:
        """A callback for ``scipy.optimize.minimize`` (its ``intermediate_result`` form): a
        :meth:`step` per iteration at the objective, showing ``values(objective)``."""

        def callback(intermediate_result):
            f = float(intermediate_result.fun)
            self.step(f, **values(f))

        return callback

    def estimated_total(self) -> int:
        """Iterations done plus those expected: in this stage, and in the stages after it."""
        left = iterations_left(self._logs[-WINDOW:], self.tol, self.budget - self._stage_done)
        later = max(self.stages - self.stage - 1, 0) * (self._stage_done + left)
        return self.done + left + later
