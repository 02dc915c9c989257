# Two commands for a fresh machine (README): `make render` and `make test`. Each creates .venv and
# installs the pinned requirements it needs, once per change of the requirement files.
STACK ?= dev
RESOURCES ?= build/$(STACK)/resources.json
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

AIPERF_VENV := .venv-aiperf

.PHONY: render policy test bench schema clean promtool aiperf diff lint

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

policy: $(VENV)/.render-deps  ## Run the policy pack on a rendered resources.json (RESOURCES, default build/$(STACK)/)
	$(PY) -m policy.nemotron_policies.cli --stack $(STACK) $(RESOURCES)

aiperf: $(AIPERF_VENV)/.installed  ## The pinned AIPerf CLI in .venv-aiperf (the benchmark test runs it)

render: $(VENV)/.render-deps  ## Render STACK (default dev) offline into build/$(STACK)/
	$(PY) -m tools.render --stack $(STACK)

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

schema: $(VENV)/.render-deps  ## Regenerate the JSON Schemas (outputs contract, stack files) from the pydantic models
	$(PY) -m tools.write_outputs_schema
	$(PY) -m tools.write_config_schema

clean:
	rm -rf build .pytest_cache

BASE ?= origin/main

diff: $(VENV)/.render-deps  ## Markdown diff of STACK between BASE (a git ref) and the working tree, for a PR comment
	@$(PY) -m tools.diff --stack $(STACK) --base $(BASE) --venv $(abspath $(VENV)) --out build/pr-diff/$(STACK).md

# Static checks. Files rendered from the upstream recipes (named below) are scanned with their own
# checkov config; everything else the stack writes with .checkov/stack.yaml.
LINT_STACKS := dev prod
CHECKOV_VENV := .venv-checkov
UPSTREAM_MANIFESTS := model-download

$(VENV)/.lint-deps: requirements-lint.txt | $(PY)
	$(PY) -m pip install -q -r requirements-lint.txt
	touch $@

$(CHECKOV_VENV)/.deps: requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -q -r requirements-checkov.txt
	touch $@

lint: $(VENV)/.lint-deps $(CHECKOV_VENV)/.deps  ## Static checks: code, workflows, stack files, rendered manifests
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/actionlint -shellcheck=$(abspath $(VENV))/bin/shellcheck
	$(VENV)/bin/zizmor --offline --persona auditor .github/workflows
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(VENV)/bin/check-jsonschema --schemafile schemas/stack-config.schema.json Pulumi.*.yaml
	$(foreach stack,$(LINT_STACKS),$(MAKE) --no-print-directory render STACK=$(stack) &&) true
	$(CHECKOV_VENV)/bin/checkov --config-file .checkov/stack.yaml \
		$(foreach stack,$(LINT_STACKS),-d build/$(stack)/manifests) --skip-path '$(UPSTREAM_MANIFESTS)\.yaml$$'
	$(CHECKOV_VENV)/bin/checkov --config-file .checkov/upstream-recipes.yaml \
		$$(find $(foreach stack,$(LINT_STACKS),build/$(stack)/manifests) -name '*-$(UPSTREAM_MANIFESTS).yaml' -printf '-f %p ')
