# Two commands for a fresh machine (README): `make render` and `make test`. Each creates .venv and
# installs the pinned requirements it needs, once per change of the requirement files.
STACK ?= dev
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

AIPERF_VENV := .venv-aiperf

.PHONY: render test bench schema clean promtool aiperf absorb

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.render-deps: requirements.txt policy/requirements.txt | $(PY)
	$(PY) -m pip install -q -r requirements.txt -r policy/requirements.txt
	touch $@

$(VENV)/.test-deps: requirements.txt policy/requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(VENV)/.render-deps $@

# AIPerf for the benchmark test, in its own venv: its pins conflict with the project's (rich).
$(AIPERF_VENV)/.installed: requirements-aiperf.txt
	$(PYTHON) -m venv $(AIPERF_VENV)
	$(AIPERF_VENV)/bin/python -m pip install -q -r requirements-aiperf.txt
	touch $@

aiperf: $(AIPERF_VENV)/.installed  ## The pinned AIPerf CLI in .venv-aiperf (the benchmark test runs it)

render: $(VENV)/.render-deps  ## Render STACK (default dev) offline into build/$(STACK)/
	$(PY) -m tools.render --stack $(STACK)

# Absorb an upstream recipe revision as data (docs/absorb.md): vendors UPSTREAM into catalog/recipes/,
# rewrites catalog/targets.yaml and prints the report. DATE is needed only when UPSTREAM is not a git checkout.
absorb: $(VENV)/.render-deps  ## make absorb UPSTREAM=<recipes/nemotron-3.5-lightning dir> COMMIT=<sha> [DATE=YYYY-MM-DD] [DRY_RUN=1]
	@test -n "$(UPSTREAM)" -a -n "$(COMMIT)" || { echo "usage: make absorb UPSTREAM=<dir> COMMIT=<sha> [DATE=YYYY-MM-DD] [DRY_RUN=1]" >&2; exit 2; }
	$(PY) -m tools.absorb --upstream "$(UPSTREAM)" --commit "$(COMMIT)" $(if $(DATE),--date "$(DATE)") $(if $(DRY_RUN),--dry-run)

# promtool (Debian package `prometheus`) for the alert-rule tests; installed once when missing.
promtool:  ## Install promtool if missing
	@command -v promtool >/dev/null 2>&1 || { \
		echo "installing promtool (Debian package prometheus)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
	@promtool --version | head -1

test: $(VENV)/.test-deps promtool $(AIPERF_VENV)/.installed  ## Run the whole test suite
	$(PY) -m pytest -q -n 2 --dist loadfile

bench: $(VENV)/.test-deps  ## Benchmarks (not tests): render time/memory and model prewarm
	$(PY) benchmarks/render_bench.py
	$(PY) benchmarks/prewarm_bench.py

schema: $(VENV)/.render-deps  ## Regenerate the outputs-contract JSON Schema from the pydantic model
	$(PY) -m tools.write_outputs_schema

clean:
	rm -rf build .pytest_cache
