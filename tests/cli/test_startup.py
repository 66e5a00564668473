"""Start-up: ``rfcli --help``, ``--version`` and usage errors import no numeric library;
the group's command list (written out for that) matches the commands themselves."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import rfcli
from rfcli.cli import COMMANDS, cli
from tests.helpers import run, write_parquet

HEAVY = ("numpy", "scipy", "pyarrow", "zarr", "rich", "dask", "fsspec")


#: modules an encode with the default map and quantizer does not need (rich: its progress
#: and final line on a terminal only; numcodecs: zstd comes from pyarrow)
OTHER_COMPONENTS = (
    "scipy",
    "zarr",
    "numcodecs",
    "rich",
    "rfcli.learn.svm",
    "rfcli.learn.ridge",
    "rfcli.learn.gpr",
    "rfcli.maps.activation",
    "rfcli.maps.arccos",
    "rfcli.maps.gauss_legendre",
    "rfcli.maps.glf_rules",
    "rfcli.maps.ntk",
    "rfcli.maps.positive",
    "rfcli.quantize.empirical",
    "rfcli.quantize.grid",
    "rfcli.quantize.trits",
    "rfcli.quantize.floats",
)


def _modules_after(*args: str, watch: tuple[str, ...] = HEAVY) -> set[str]:
    """The modules of ``watch`` imported by ``rfcli ARGS`` (run in a fresh interpreter)."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(m for m in "
        f"{watch!r} if m in sys.modules)) + '\\n'))\n"
        f"sys.argv = ['rfcli', *{list(args)!r}]\n"
        "from rfcli.cli import main\n"
        "main()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    line = [x for x in r.stderr.splitlines() if x.startswith("MODULES")][-1]
    return set(line.split()[1:])


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("--help",),
        (),
        ("bogus",),
        ("train", "--bogus"),
        ("train", "-h"),
        ("encode", "--help"),
        ("encode", "--bogus"),
    ],  # fmt: skip
)
def test_fast_paths_import_no_numeric_library(args):
    assert _modules_after(*args) == set()


def test_a_command_imports_what_it_uses():  # the check above can see an import
    assert "numpy" in _modules_after("fit-quantizer", "--kind", "lm", "-b", "1")


def test_an_encode_imports_only_the_components_it_runs(tmp_path):
    import numpy as np

    src = tmp_path / "x.csv"
    np.savetxt(src, np.random.default_rng(0).normal(size=(50, 3)), delimiter=",",
               header="a,b,c", comments="")  # fmt: skip
    # the default gamma (the median heuristic) and a given one; no learner's module either
    # (only -b auto sizes the default train: rfcli.learn.footprint)
    watch = (*OTHER_COMPONENTS, "rfcli.learn.linear", "rfcli.learn.footprint", "scipy")
    for i, more in enumerate([(), ("--gamma", "1")]):
        args = ("encode", str(src), "-o", str(tmp_path / f"s{i}.zarr"), "-m", "8", *more)
        assert _modules_after(*args, watch=watch) == set()
    # ...and one that needs another map loads its module
    args2 = ("encode", str(src), "-o", str(tmp_path / "t.zarr"), "-m", "8", "--kernel", "arccos0")
    assert "rfcli.maps.arccos" in _modules_after(*args2, watch=OTHER_COMPONENTS)


def test_a_prediction_imports_no_learner_scipy_or_pandas(tmp_path):
    """Predicting from a model file needs its scores alone: no solver (scipy), and the
    output's columns are wrapped without pa.array (which imports pandas); a local store
    is read without zarr."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    cols = {f"x{j}": X[:, j] for j in range(3)}
    src = write_parquet(tmp_path / "x.parquet", **cols, y=(X[:, 0] > 0).astype(np.int64))
    store, model = tmp_path / "s.zarr", tmp_path / "m.npz"
    run(src, store, label="y", n_features=16)
    rfcli.train(os.fspath(store), os.fspath(model), rfcli.TrainSettings(model="svm", C=1.0))
    out = tmp_path / "p.parquet"
    args = ("predict", os.fspath(model), src, "-o", os.fspath(out))
    watch = ("scipy", "pandas", "zarr", "numcodecs", "rfcli.learn.ridge", "rfcli.learn.gpr")
    assert _modules_after(*args, watch=watch) == set()
    assert len(pq.read_table(out)) == 200
    # ...nor zarr to read a local store (rfcli.io.store.local_read)
    assert _modules_after("evaluate", os.fspath(model), os.fspath(store), watch=watch) == set()


def test_a_gaussian_gp_fit_imports_no_scipy_optimize_special_or_sparse(tmp_path):
    """A Gaussian GP's ARD fit searches by rfcli.learn.boxqn: scipy.optimize, whose package
    loads linear programming and through it scipy.fft and scipy.special (0.2-0.36 s), is not
    imported, nor scipy.sparse (ARPACK: the kernel error's spectral norm is rfcli's own
    Lanczos); the fit does go through the search (its report counts the iterations)."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(1500, 2))  # rows enough for levels (below ~900: exact)
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=1500)
    src = write_parquet(tmp_path / "x.parquet", a=X[:, 0], b=X[:, 1], y=y)
    model = tmp_path / "m.npz"
    args = ("train", src, "--model", "gpr", "--label", "y", "--ard", "-o", os.fspath(model))
    watch = ("scipy.optimize", "scipy.special", "scipy.fft", "scipy.sparse")
    assert _modules_after(*args, watch=watch) == set()
    from rfcli.learn.model_file import load_model

    info = load_model(os.fspath(model))[2]["model"]["info"]
    assert info["timing"].get("quasi-Newton", 0) + info["timing"].get("exact GP", 0) > 0


def test_lazily_imported_components_are_all_registered():
    from rfcli.maps import KERNELS, MAPS, TARGET_NAMES, FeatureMap
    from rfcli.maps.activation import TARGETS
    from rfcli.quantize import QUANTIZERS, Quantizer

    assert tuple(TARGETS) == TARGET_NAMES
    # the names the command line offers (rfcli.names: its help imports no numeric library)
    # are the components'
    from rfcli.maps.fourier import MATERN_NU
    from rfcli.maps.glf_rules import GLF_KERNELS
    from rfcli.names import (
        BANDWIDTH_KERNELS,
        DESIGNABLE,
        FOURIER_KERNELS,
        GP_KERNELS,
        MODEL_MAPS,
        QUANTIZER_KINDS,
    )

    assert GP_KERNELS == GLF_KERNELS
    assert FOURIER_KERNELS == ("gaussian", "laplacian", *MATERN_NU)
    assert set(QUANTIZER_KINDS) == set(QUANTIZERS.kinds())
    assert set(DESIGNABLE) <= set(QUANTIZER_KINDS)
    assert set(BANDWIDTH_KERNELS) == {k for k in KERNELS if "gamma" in _init_args(MAPS.get(k))}
    assert set(MAPS.kinds()) == set(KERNELS) | set(MODEL_MAPS)
    assert not set(KERNELS) & set(MODEL_MAPS)
    # each lazy kind is registered by the module it names (else get() raises)
    assert all(issubclass(MAPS.get(k), FeatureMap) for k in MAPS.kinds())
    assert all(issubclass(QUANTIZERS.get(k), Quantizer) for k in QUANTIZERS.kinds())


def _init_args(cls) -> set[str]:
    import inspect

    return set(inspect.signature(cls.__init__).parameters)


def test_command_list_matches_the_commands():
    for name, (_, short_help) in COMMANDS.items():
        cmd = cli.get_command(None, name)
        assert cmd is not None and cmd.name == name
        assert cmd.get_short_help_str(limit=1000) == short_help
    assert sorted(cli.list_commands(None)) == sorted(COMMANDS)


def test_sweep_models_are_the_train_models():
    from rfcli.jobs.train import MODELS

    sweep = cli.get_command(None, "sweep")
    (opt,) = [p for p in sweep.params if p.name == "model"]
    assert tuple(opt.type.choices) == MODELS


@pytest.mark.parametrize("args, status", [(["--version"], 0), (["train", "--bogus"], 2)])
def test_the_fast_exit_keeps_status_handlers_and_output(tmp_path, args, status):
    """main() ends the process without the interpreter's teardown, after the exit
    handlers and with the standard streams flushed."""
    mark = tmp_path / "handler-ran"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(mark)!r}, 'w').close())\n"
        f"sys.argv = ['rfcli', *{args!r}]\n"
        "sys.stdout.write('buffered line\\n')\n"  # still in the buffer at the exit
        "from rfcli.cli import main\n"
        "main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # a buffered stdout
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env)  # fmt: skip
    assert r.returncode == status
    assert r.stdout.startswith("buffered line\n")
    assert mark.exists()


def _settings_after(*args: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    """NumPy's huge-page choice (the setter returns the value it replaces) and OpenBLAS's
    spin timeout in the environment it loaded with, at the end of ``rfcli ARGS`` in a fresh
    interpreter."""
    code = (
        "import atexit, os, sys\n"
        "atexit.register(lambda: sys.stderr.write('\\nSETTINGS ' + str(__import__("
        "'numpy._core.multiarray', fromlist=['x'])._set_madvise_hugepage(True)) + ' ' + "
        "os.environ.get('OPENBLAS_THREAD_TIMEOUT', '-') + '\\n'))\n"
        f"sys.argv = ['rfcli', *{list(args)!r}]\n"
        "from rfcli.cli import main\n"
        "main()\n"
    )
    drop = ("NUMPY_MADVISE_HUGEPAGE", "OPENBLAS_THREAD_TIMEOUT")
    full = {k: v for k, v in os.environ.items() if k not in drop}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**full, **(env or {})})  # fmt: skip
    huge, timeout = [x for x in r.stderr.splitlines() if x.startswith("SETTINGS")][-1].split()[1:]
    return huge, timeout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge pages: Linux")
def test_the_cli_sets_numpys_and_openblass_defaults_unless_the_user_chose():
    """rfcli.memory.small_pages (system time of the GP fits, docs/gpr.md) and
    rfcli.threads.sleeping_blas_pool (docs/cli.md): before NumPy loads, a user's value kept."""
    args = ("fit-quantizer", "--kind", "lm", "-b", "1")
    assert _settings_after(*args) == ("False", "4")
    mine = {"NUMPY_MADVISE_HUGEPAGE": "1", "OPENBLAS_THREAD_TIMEOUT": "20"}
    assert _settings_after(*args, env=mine) == ("True", "20")


def test_human_byte_counts_reach_exbibytes():
    """Sizes in binary units up to EiB; beyond 1e5 of the largest, two significant digits
    (a refused rule's memory once read 43107102607.6 TiB)."""
    from rfcli.memory import human

    assert human(512) == "512 B"
    assert human(3 * 2**30) == "3.0 GiB"
    assert human(5 * 2**50) == "5.0 PiB"
    assert human(7 * 2**60) == "7.0 EiB"
    assert human(2e5 * 2**60) == "2e+05 EiB"
