# rfcli: `make demo` and `make test` are all a newcomer needs (both set up .venv first).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RFCLI  := $(VENV)/bin/rfcli
DEMO   := build/demo
DEMO_M ?= 1024
DEMO_SVM ?=

.PHONY: install runtime demo test lint bench bench-all clean

# installs rfcli editable with the given extras into .venv: with uv (pip-installed into .venv
# first; it fetches in parallel), else with pip; the venv's own pip (>= 21.3) is enough for an
# editable pyproject install, so it is not upgraded.  Then the dependencies' bytecode, on every
# core and without their own test suites (pip compiles everything on one core: 2 min of the
# 2 min 10 s set-up on 2 cores, against about 50 s now).  Bytecode matters where
# PYTHONDONTWRITEBYTECODE is set: every process would compile what it imports again
define pip_install
	$(PY) -m pip install --quiet --no-compile uv && $(PY) -m uv pip install --quiet \
	    --python $(PY) -e '$(1)' \
	  || { echo "make: uv failed; installing with pip instead"; \
	       $(PY) -m pip install --quiet --no-compile -e '$(1)'; }
	$(PY) -m compileall -q -j 0 -x '/tests/|/site-packages/(pip|setuptools|uv)/' \
	    $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') > /dev/null
endef

# the runtime alone (`pip install -e .`, no extras): what `make demo` needs
runtime: $(VENV)/.runtime

# an editable install leaves rfcli's bytecode to the first imports (which write none where
# PYTHONDONTWRITEBYTECODE is set, compiling every module at every start): compile it, as
# pip does for an installed package
$(VENV)/.runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call pip_install,.)
	$(PY) -m compileall -q rfcli
	touch $@

# the runtime and the test extras (pytest, pytest-xdist, hypothesis, dask, s3fs, moto): `make test`
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call pip_install,.[test])
	$(PY) -m compileall -q rfcli
	touch $@ $(VENV)/.runtime

# the whole job on sample_data/letter (12,000 training rows, 8,000 test rows, 26 classes):
# encode train and test into 2-bit stores (z-scored columns, gamma chosen by validation on
# a sample), train a linear SVM (C by cross-validation),
# evaluate it; then the same with float32 features of the same m (--quantizer none), and
# the size and accuracy of the two side by side.  DEMO_SVM: more train options, e.g.
# `make demo DEMO_SVM="-C 10"` (no cross-validation of C: faster)
demo: runtime
	@mkdir -p $(DEMO)
	@echo "== 1. encode: Gaussian kernel (gamma chosen by validation on a sample), m = $(DEMO_M), 2 bits"
	$(RFCLI) encode sample_data/letter.train.parquet -o $(DEMO)/train.zarr \
	    --label label --standardize --gamma search -m $(DEMO_M) -b 2 --overwrite
	$(RFCLI) encode sample_data/letter.test.parquet -o $(DEMO)/test.zarr \
	    --like $(DEMO)/train.zarr --overwrite
	$(RFCLI) inspect $(DEMO)/train.zarr
	@echo "== 2. train a linear SVM on the 2-bit store, evaluate it on the test store"
	$(RFCLI) train $(DEMO)/train.zarr --model svm -o $(DEMO)/svm.npz --overwrite $(DEMO_SVM)
	$(RFCLI) evaluate $(DEMO)/svm.npz $(DEMO)/test.zarr
	@echo "== 3. the same with float32 features of the same m (--quantizer none)"
	$(RFCLI) -q encode sample_data/letter.train.parquet -o $(DEMO)/train.f32.zarr \
	    --label label --standardize --gamma search -m $(DEMO_M) --quantizer none --overwrite
	$(RFCLI) -q encode sample_data/letter.test.parquet -o $(DEMO)/test.f32.zarr \
	    --like $(DEMO)/train.f32.zarr --overwrite
	$(RFCLI) -q train $(DEMO)/train.f32.zarr --model svm -o $(DEMO)/svm.f32.npz --overwrite \
	    $(DEMO_SVM)
	@echo "== 4. 2-bit codes against float32 features (m = $(DEMO_M))"
	@$(RFCLI) inspect $(DEMO)/train.zarr --json > $(DEMO)/train.json
	@$(RFCLI) inspect $(DEMO)/train.f32.zarr --json > $(DEMO)/train.f32.json
	@$(RFCLI) evaluate $(DEMO)/svm.npz $(DEMO)/test.zarr --json > $(DEMO)/eval.json
	@$(RFCLI) evaluate $(DEMO)/svm.f32.npz $(DEMO)/test.f32.zarr --json > $(DEMO)/eval.f32.json
	@$(PY) bench/demo_summary.py $(DEMO)

# two pytest workers (pytest-xdist), each taking whole test files, so that a file's module
# fixtures are built once: the suite's wall time on 2 cores.  Each worker's BLAS starts with
# one thread: two workers' BLAS threads on 2 cores spin against each other (the suite took
# 326 s with the default threads, 277 s with one, on a 2-core AVX2 EPYC); rfcli's own
# threads, and tests that set BLAS threads through threadpoolctl, are unaffected
test: install
	OPENBLAS_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadfile

lint: install
	$(PY) -m pip install --quiet -e '.[dev]'
	$(VENV)/bin/ruff check rfcli tests bench
	$(VENV)/bin/ruff format --check rfcli tests bench

# benchmarks (about 30 minutes on 2 cores): rfcli vs scikit-learn and memory as rows grow
# (docs/benchmarks.md), profiles (docs/profile.md), the encode report
bench: install
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) bench/benchmarks.py
	$(PY) bench/profile_report.py
	$(PY) bench/encode_report.py

# everything, including the accuracy-vs-bits sweeps (about an hour on 2 cores) and GPR
bench-all: bench
	$(PY) bench/sweep_report.py
	$(PY) bench/gp_report.py
	$(PY) bench/train_memory.py
	$(PY) bench/families_report.py
	$(PY) -m pip install --quiet -e '.[dask]'
	$(PY) bench/dask_report.py

clean:
	rm -rf $(VENV) build .pytest_cache
