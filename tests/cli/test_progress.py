"""Training progress on stderr: the SVM's iterations and objective per C, KRR's passes and
alpha grid, the GP's passes, scans and quasi-Newton iterations with the log marginal
likelihood; the estimated iterations behind the remaining time; -q silences all of it.

The CLI runs are recorded: stderr is taken for a terminal and rfcli.cli.console's rich
renderer is replaced by a recorder of the tasks the jobs open (what rich would draw); the
rich renderer itself is checked on a console forced to be a terminal."""

from __future__ import annotations

import io
import json
import math
import re
from contextlib import contextmanager

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from rfcli.cli import cli, console
from rfcli.progress import Iterations, iterations_left, relative_reduction
from tests.helpers import LETTER, SAMPLE

QUAKES = SAMPLE / "quakes.train.parquet"


class RecordedTask:
    def __init__(self, description, total, unit):
        self.description, self.totals, self.unit = description, [total], unit
        self.advanced = 0
        self.values: list[dict] = []

    def advance(self, n):
        self.advanced += n

    def update(self, total=None, **values):
        if total is not None:
            assert total >= self.advanced  # a total below what is done: no sense
            self.totals.append(total)
        self.values.append(values)


class Recorder:
    def __init__(self):
        self.tasks: list[RecordedTask] = []

    @contextmanager
    def task(self, description, total, unit="rows"):
        t = RecordedTask(description, total, unit)
        self.tasks.append(t)
        yield t

    def named(self, prefix: str) -> list[RecordedTask]:
        return [t for t in self.tasks if t.description.startswith(prefix)]


@pytest.fixture
def recorded(monkeypatch):
    """The recorders of the CLI's progress, stderr taken for a terminal."""
    made: list[Recorder] = []

    def renderer(ui):
        made.append(Recorder())
        return made[-1]

    monkeypatch.setattr(console, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(console, "RichProgress", renderer)
    return made


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("progress")
    src = d / "small.parquet"
    pq.write_table(pq.read_table(LETTER).slice(0, 1200), src)
    out = d / "s.zarr"
    r = invoke("encode", src, "-o", out, "--label", "label", "-m", "64", "--normalize-rows", "-q")
    assert r.exit_code == 0, r.output
    return out


def test_svm_iterations_objective_and_passes(store, tmp_path, recorded):
    r = invoke("train", store, "--model", "svm", "-C", "1", "-o", tmp_path / "m.npz", "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)  # stdout holds the result only
    (rec,) = recorded
    (fit,) = rec.named("svm C=1 (all rows)")
    assert fit.unit == "iterations" and fit.totals[0] == 1000  # the budget, at first
    assert fit.advanced == rep["iterations"] > 5
    objectives = [v["objective"] for v in fit.values]
    assert len(objectives) == rep["iterations"]
    # the quasi-Newton search's accepted iterates decrease the objective; the last is the model's
    assert all(b <= a for a, b in zip(objectives, objectives[1:], strict=False))
    assert objectives[-1] == pytest.approx(rep["objective"], rel=1e-12)
    passes = [v["passes"] for v in fit.values]
    assert passes == sorted(passes) and passes[-1] < rep["passes"]  # + the final evaluation
    # converged well within the budget: the estimate ended near the iterations needed
    assert fit.totals[-1] < 3 * rep["iterations"]
    assert rec.named("svm: pass 1, Gram matrix")[0].advanced == rep["rows"]


def test_svm_cross_validation_shows_every_C(store, tmp_path, recorded):
    r = invoke("train", store, "--model", "svm", "--cv-folds", "3", "-o", tmp_path / "m.npz",
               "--json", "--max-iter", "50")  # fmt: skip
    assert r.exit_code == 0, r.output
    cv = json.loads(r.stdout)["cv"]
    (rec,) = recorded
    (grid,) = rec.named("svm: 3-fold cross-validation of C")
    assert grid.unit == "values" and grid.advanced == len(cv["grid"])
    assert grid.values[-1]["best"] == f"{cv['chosen']:.4g}"
    assert grid.values[-1]["accuracy"] == pytest.approx(cv["mean"][str(cv["chosen"])])
    fits = rec.named("svm C=")
    assert sorted(t.description for t in fits[:-1]) == sorted(
        f"svm C={c:g} (3-fold cross-validation)" for c in cv["grid"]
    )
    assert fits[-1].description == f"svm C={cv['chosen']:g} (all rows)"
    for t in fits:
        assert t.advanced == len(t.values) and all("objective" in v for v in t.values)


def test_krr_passes_and_alpha_grid(store, tmp_path, recorded):
    r = invoke("train", store, "--model", "krr", "-o", tmp_path / "k.npz", "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    (rec,) = recorded
    (stats,) = rec.named("krr: pass 1, Phi'Phi of 5 folds")
    assert stats.unit == "rows" and stats.advanced == stats.totals[0] == rep["rows"]
    (grid,) = rec.named("krr: 5-fold cross-validation of alpha")
    assert grid.advanced == len(rep["cv"]["grid"]) and grid.totals[-1] == grid.advanced
    assert grid.values[-1]["best"] == f"{rep['alpha']:.4g}"
    scoring = rec.named("krr: pass 2, scoring")
    assert len(scoring) == 1 and scoring[0].advanced == rep["rows"]
    assert rec.named("krr: eigendecomposition per fold")[0].advanced == 5


def test_gpr_passes_scan_and_lbfgs_with_the_log_marginal_likelihood(tmp_path, recorded):
    r = invoke("train", QUAKES, "--model", "gpr", "--label", "y", "--lengthscale-bounds",
               "0.5,1", "--nodes", "16,16", "-o", tmp_path / "g.npz", "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    (rec,) = recorded
    n = rep["rows"]
    (stats,) = rec.named("data pass 2: GP statistics")
    assert stats.advanced == n
    (scan,) = rec.named("GP scan")
    # (a scan may pass over grid points: its total ends at the points evaluated)
    assert scan.unit == "points" and scan.advanced == scan.totals[-1] == rep["scan"]["points"]
    # the quasi-Newton search, or the profiled search on a level with many features per rank
    fits = rec.named("GP quasi-Newton") + rec.named("GP profile search")
    assert fits and sum(t.advanced for t in fits) == rep["iterations"]
    key = "LML (standardized y)"
    for t in fits:
        lml = [v[key] for v in t.values]
        assert all(b >= a for a, b in zip(lml, lml[1:], strict=False))  # ascent
        assert len(lml) >= t.advanced
    # the best is the model's: the LML of y itself is that of (y - mean)/sd minus n log sd
    # (a start already at the optimum takes no iteration: then the scan's best is the model)
    y = pq.read_table(QUAKES)["y"].to_numpy()
    best = max(v[key] for t in [*fits, scan] for v in t.values if key in v)
    assert best - n * math.log(y.std()) == pytest.approx(rep["log_marginal_likelihood"],
                                                         rel=1e-9)  # fmt: skip


def test_quiet_silences_progress(store, tmp_path, recorded):
    r = invoke("train", store, "--model", "svm", "-C", "1", "-o", tmp_path / "m.npz", "-q")
    assert r.exit_code == 0 and r.stderr == "" and r.stdout == ""
    r = invoke("-q", "train", QUAKES, "--model", "gpr", "--label", "y", "--nodes", "16,16",
               "--lengthscale-bounds", "0.5,1", "-o", tmp_path / "g.npz")  # fmt: skip
    assert r.exit_code == 0 and r.stderr == "" and r.stdout == ""
    assert recorded == []  # no renderer was even made
    invoke("train", store, "--model", "svm", "-C", "1", "-o", tmp_path / "n.npz")
    assert len(recorded) == 1 and recorded[0].tasks  # without -q: the same run reports


def test_not_a_terminal_means_no_progress(store, tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr(console, "RichProgress", lambda ui: made.append(ui))
    r = invoke("train", store, "--model", "svm", "-C", "1", "-o", tmp_path / "m.npz")
    assert r.exit_code == 0 and made == []  # CliRunner's stderr is not a terminal


# -- the estimate of the iterations ---------------------------------------------------------
def _geometric_run(r0: float, q: float, tol: float):
    """Objectives whose relative reductions are r0 q^k (k >= 1) exactly, up to the first
    below tol (where the search stops)."""
    f = [1e6]
    while len(f) < 2 or relative_reduction(f[-2], f[-1]) > tol:
        r = r0 * q ** (len(f) - 1)
        f.append(f[-1] * (1 - r))  # |f| >= 1: r = (f_prev - f) / f_prev
    return f


@pytest.mark.parametrize("q", [0.5, 0.8])
def test_iterations_left_extrapolates_a_linear_convergence(q):
    tol = 1e-7
    f = _geometric_run(1e-2, q, tol)
    n = len(f)
    rec = RecordedTask("fit", None, "iterations")
    it = Iterations(rec, 1000, tol)
    for k, v in enumerate(f):
        it.step(v)
        if k >= 4:  # three reductions and more: the exact number of iterations left
            assert it.estimated_total() == n, (k, n)
    assert rec.advanced == n


def test_iterations_left_without_a_trend_is_the_budget():
    assert iterations_left([], 1e-7, 100) == 100
    assert iterations_left([-3.0, -3.5], 1e-7, 100) == 100  # too few reductions
    assert iterations_left([-3.0, -3.0, -3.0, -2.0], 1e-7, 100) == 100  # not falling
    assert iterations_left([-3.0, -5.0, -7.0], 1e-7, 5) == 5  # capped by what is left
    assert iterations_left([-10.0, -15.0, -20.0], 1e-7, 50) == 0  # already below tol


def test_later_stages_are_expected_to_take_as_long():
    rec = RecordedTask("fit", None, "iterations")
    f = _geometric_run(1e-2, 0.5, 1e-7)
    it = Iterations(rec, 1000, 1e-7, stages=3)
    for v in f[:8]:
        it.step(v)
    left = it.estimated_total() - it.done
    per_stage = (len(f) - 8) + 8
    assert left == (len(f) - 8) + 2 * per_stage
    it.next_stage()
    it.step(f[-1])  # a new stage: no trend yet, the budget
    assert it.estimated_total() == it.done + 999 + 1 * (1 + 999)


# -- the rich renderer -------------------------------------------------------------------------
def test_rich_renderer_nests_tasks_and_shows_values_and_eta():
    from rich.console import Console

    buf = io.StringIO()
    ui = console.UI()
    ui.__dict__["err"] = Console(file=buf, force_terminal=True, width=220, color_system=None)
    rp = console.RichProgress(ui)
    with rp.task("svm C=1 (all rows)", 1000, unit="iterations") as fit:
        fit.update(total=40, objective=12.5, passes=3)
        fit.advance(1)
        fit.advance(1)
        with rp.task("pass 4", 300) as p:  # drawn below the fit, in the same display
            p.advance(100)
            rp._prog.refresh()
        assert rp._prog is not None
    assert rp._prog is None  # the display ends with its last task
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    frame = [line for line in text.splitlines() if "pass 4" in line and "100/300" in line]
    assert frame, text
    assert any("2/40 it " in line and "objective 12.5, passes 3" in line
               for line in text.splitlines())  # fmt: skip
    assert "eta " in text


def test_count_values_eta_and_rate_texts():
    assert console.count_text(1234, 10000, "rows", 5678.2) == "1,234/10,000 rows (5,678 rows/s)"
    assert console.count_text(12, 40, "iterations", 3.0) == "12/40 it"
    assert console.count_text(7, None, "rows", None) == "7 rows"
    assert console.values_text({"objective": 50699.123456, "passes": 1200}) == (
        "objective 50699.1, passes 1,200"
    )
    assert console.eta_text(None) == "eta -:--:--" and console.eta_text(3723) == "eta 1:02:03"
    t = iter([0.0, 1.0, 2.0, 40.0])
    rate = console.Rate(period=30, clock=lambda: next(t))
    assert rate.add(10) == 10.0 and rate.add(30) == 15.0
    assert rate.add(60) == pytest.approx((60 - 30) / (40 - 2))  # the older samples dropped
