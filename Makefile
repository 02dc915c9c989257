# Two commands for a fresh machine (README): `make render` and `make test`. Each creates .venv and
# installs the pinned requirements it needs, once per change of the requirement files.
STACK ?= dev
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: render test bench bench-gateway gateway-venv schema clean

# The real LiteLLM proxy for the gateway failover tests, in its own venv: its pins conflict with pulumi's.
GATEWAY_VENV := .venv-gateway
GATEWAY_PY := $(GATEWAY_VENV)/bin/python

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.render-deps: requirements.txt policy/requirements.txt | $(PY)
	$(PY) -m pip install -q -r requirements.txt -r policy/requirements.txt
	touch $@

$(VENV)/.test-deps: requirements.txt policy/requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(VENV)/.render-deps $@

$(GATEWAY_VENV)/.deps: requirements-gateway.txt constraints-gateway.txt
	test -x $(GATEWAY_PY) || $(PYTHON) -m venv $(GATEWAY_VENV)
	$(GATEWAY_PY) -m pip install -q --upgrade pip
	$(GATEWAY_PY) -m pip install -q -r requirements-gateway.txt -c constraints-gateway.txt
	touch $@

gateway-venv: $(GATEWAY_VENV)/.deps  ## The pinned LiteLLM proxy (gateway tests, benchmark, example app)

render: $(VENV)/.render-deps  ## Render STACK (default dev) offline into build/$(STACK)/
	$(PY) -m nemotron.render --stack $(STACK)

test: $(VENV)/.test-deps $(GATEWAY_VENV)/.deps  ## Run the whole test suite
	$(PY) -m pytest -q -n 2 --dist loadfile

bench: $(VENV)/.test-deps  ## Benchmarks (not tests): render time/memory and model prewarm
	$(PY) benchmarks/render_bench.py
	$(PY) benchmarks/prewarm_bench.py

bench-gateway: $(VENV)/.test-deps $(GATEWAY_VENV)/.deps  ## Gateway failover figures with the real LiteLLM proxy on loopback
	$(PY) benchmarks/gateway_failover.py

schema: $(VENV)/.render-deps  ## Regenerate the outputs-contract JSON Schema from the pydantic model
	$(PY) -m tools.write_outputs_schema

clean:
	rm -rf build .pytest_cache
