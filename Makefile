# Two commands for a fresh machine (README): `make render` and `make test`. Each creates .venv and
# installs the pinned requirements it needs, once per change of the requirement files.
STACK ?= dev
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: render test bench schema clean plan

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.render-deps: requirements.txt policy/requirements.txt | $(PY)
	$(PY) -m pip install -q -r requirements.txt -r policy/requirements.txt
	touch $@

$(VENV)/.test-deps: requirements.txt policy/requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(VENV)/.render-deps $@

render: $(VENV)/.render-deps  ## Render STACK (default dev) offline into build/$(STACK)/
	$(PY) -m nemotron.render --stack $(STACK)

test: $(VENV)/.test-deps  ## Run the whole test suite
	$(PY) -m pytest -q -n 2 --dist loadfile

bench: $(VENV)/.test-deps  ## Benchmarks (not tests): render time/memory, model prewarm vs vmtouch/fio, capacity planner vs brute force
	$(PY) benchmarks/render_bench.py
	$(PY) benchmarks/prewarm_bench.py
	$(PY) benchmarks/planner_bench.py

schema: $(VENV)/.render-deps  ## Regenerate the outputs-contract JSON Schema from the pydantic model
	$(PY) -m tools.write_outputs_schema

clean:
	rm -rf build .pytest_cache

plan: $(VENV)/.render-deps  ## Size STACK from its `demand:` block: targets, replicas, pools, $/h, runner-ups
	$(PY) -m tools.plan_capacity --stack $(STACK)
