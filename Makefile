# rfcli: `make demo` and `make test` are all a newcomer needs (both set up .venv first).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RFCLI  := $(VENV)/bin/rfcli
DEMO   := build/demo

.PHONY: install demo test lint bench bench-all clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: install
	@mkdir -p $(DEMO)
	$(RFCLI) encode sample_data/letter.train.parquet -o $(DEMO)/letter.train.rff.zarr \
	    --label label --normalize-rows -m 1024 -b 2 --overwrite
	$(RFCLI) encode sample_data/letter.test.parquet -o $(DEMO)/letter.test.rff.zarr \
	    --like $(DEMO)/letter.train.rff.zarr --overwrite
	$(RFCLI) inspect $(DEMO)/letter.train.rff.zarr

test: install
	$(PY) -m pytest -q

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
