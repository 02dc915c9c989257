# Two commands for a fresh machine (README): `make render` and `make test`. Each creates the virtualenvs
# and installs the pinned requirements and tools it needs, once per change of the requirement files.
STACK ?= dev
RESOURCES ?= build/$(STACK)/resources.json
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Tools whose pins conflict with the program's (pulumi, rich): each in its own virtualenv.
AIPERF_VENV := .venv-aiperf
GATEWAY_VENV := .venv-gateway
CHECKOV_VENV := .venv-checkov
# The backends' response parsers for the failover parser test (tools/parser_probe): vLLM's in their own venv,
# the Dynamo frontend's built from the pinned crate with cargo.
PARSERS_VENV := .venv-parsers
DYNAMO_PROBE := build/parser-probe/release/dynamo-parser-probe

.PHONY: render preflight policy plan diff diff-sample check-dates test test-all lint bench bench-gateway schema clean promtool aiperf gateway-venv parser-probes absorb tools e2e

# --- virtualenvs ----------------------------------------------------------------------------------
$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.render-deps: requirements.txt policy/requirements.txt | $(PY)
	$(PY) -m pip install -q -r requirements.txt -r policy/requirements.txt
	touch $@

$(VENV)/.test-deps: requirements.txt policy/requirements.txt tools/plan_capacity/requirements.txt tools/requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(VENV)/.render-deps $(VENV)/.plan-deps $(VENV)/.tools-deps $@

$(VENV)/.tools-deps: tools/requirements.txt | $(PY)
	$(PY) -m pip install -q -r tools/requirements.txt
	touch $@

$(VENV)/.lint-deps: requirements-lint.txt | $(PY)
	$(PY) -m pip install -q -r requirements-lint.txt
	touch $@

# AIPerf for the benchmark test (it pins rich 14; the project pins 15).
$(AIPERF_VENV)/.installed: requirements-aiperf.txt
	test -x $(AIPERF_VENV)/bin/python || $(PYTHON) -m venv $(AIPERF_VENV)
	$(AIPERF_VENV)/bin/python -m pip install -q -r requirements-aiperf.txt
	touch $@

# The real LiteLLM proxy for the gateway failover tests, the benchmark and the example app.
$(GATEWAY_VENV)/.deps: requirements-gateway.txt constraints-gateway.txt
	test -x $(GATEWAY_VENV)/bin/python || $(PYTHON) -m venv $(GATEWAY_VENV)
	$(GATEWAY_VENV)/bin/python -m pip install -q --upgrade pip
	$(GATEWAY_VENV)/bin/python -m pip install -q -r requirements-gateway.txt -c constraints-gateway.txt
	touch $@

$(CHECKOV_VENV)/.deps: requirements-checkov.txt
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -q -r requirements-checkov.txt
	touch $@

# vLLM 0.27.1's parser modules and what importing them needs, every package pinned and installed without
# resolving (requirements-parsers.txt says why each part is there). No GPU is used.
$(PARSERS_VENV)/.deps: requirements-parsers.txt
	test -x $(PARSERS_VENV)/bin/python || $(PYTHON) -m venv $(PARSERS_VENV)
	$(PARSERS_VENV)/bin/python -m pip install -q --upgrade pip
	$(PARSERS_VENV)/bin/python -m pip install -q --no-deps -r requirements-parsers.txt
	touch $@

# The Dynamo frontend's parsers: dynamo-parsers from crates.io at the version the Dynamo 1.5.0 runtime
# bundles, behind a small JSON-in/JSON-out program (Cargo.lock pins every crate). About 10 minutes on 2 cores.
$(DYNAMO_PROBE): tools/parser_probe/dynamo/Cargo.toml tools/parser_probe/dynamo/Cargo.lock tools/parser_probe/dynamo/src/main.rs
	@command -v cargo >/dev/null || { echo "the Dynamo parser probe needs Rust's cargo: https://rustup.rs" >&2; exit 2; }
	cargo build -q --release --locked --manifest-path tools/parser_probe/dynamo/Cargo.toml --target-dir build/parser-probe

aiperf: $(AIPERF_VENV)/.installed  ## The pinned AIPerf CLI in .venv-aiperf
gateway-venv: $(GATEWAY_VENV)/.deps  ## The pinned LiteLLM proxy in .venv-gateway
parser-probes: $(PARSERS_VENV)/.deps $(DYNAMO_PROBE)  ## The backends' response parsers (vLLM in .venv-parsers, Dynamo's built with cargo)

# Absorb an upstream recipe revision as data (docs/absorb.md): vendors UPSTREAM into catalog/recipes/,
# rewrites catalog/targets.yaml and prints the report. DATE is needed only when UPSTREAM is not a git checkout.
# DROP_RETIRED="<id> ..." leaves retired targets out (refused while a committed stack selects one).
absorb: $(VENV)/.render-deps $(VENV)/.tools-deps  ## make absorb UPSTREAM=<recipes/nemotron-3.5-lightning dir> COMMIT=<sha> [DATE=YYYY-MM-DD] [DRY_RUN=1] [DROP_RETIRED=<ids>]
	@test -n "$(UPSTREAM)" -a -n "$(COMMIT)" || { echo "usage: make absorb UPSTREAM=<dir> COMMIT=<sha> [DATE=YYYY-MM-DD] [DRY_RUN=1] [DROP_RETIRED=<ids>]" >&2; exit 2; }
	$(PY) -m tools.absorb --progress --upstream "$(UPSTREAM)" --commit "$(COMMIT)" $(if $(DATE),--date "$(DATE)") $(if $(DRY_RUN),--dry-run) $(foreach id,$(DROP_RETIRED),--drop-retired "$(id)")

# promtool (Debian package `prometheus`) for the alert-rule tests; installed once when missing.
promtool:  ## Install promtool if missing
	@command -v promtool >/dev/null 2>&1 || { \
		echo "installing promtool (Debian package prometheus)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
	@promtool --version | head -1

# --- the stack ------------------------------------------------------------------------------------
# `python -m tools.render` exits 2 on bad input and 1 when a real `up` would fail (a mandatory policy, a
# blocking rollout finding); GNU make reports any failure as its own exit status 2, so the render prints
# which it was.
# --secret-placeholders: the secrets a committed stack needs but this repository cannot hold (no secrets
# provider; prod's gatewayMasterKey) render as "[secret]" and are named (tools/secret_placeholders.py).
render: $(VENV)/.render-deps  ## Render STACK (default dev) offline into build/$(STACK)/
	$(PY) -m tools.render --stack $(STACK) --secret-placeholders $(if $(POLICY_CONFIG),--policy-config $(POLICY_CONFIG))

# Before `pulumi up`, with your own AWS credentials and the kube context STACK names (docs/preflight.md): the
# instance type offered in each pool's zone, the vCPU and endpoint quotas, each capacity reservation or block,
# the EKS version; on an existing cluster its StorageClass, CRDs, namespaces and node resources. The tool exits
# 1 on a blocker and 2 on bad input (GNU make reports either as its own status 2; the last line says which).
preflight: $(VENV)/.render-deps  ## What would stop the first `pulumi up` of STACK, asked of AWS and the cluster
	$(PY) -m tools.preflight --stack $(STACK)

MANIFESTS ?= $(dir $(RESOURCES))manifests
policy: $(VENV)/.render-deps $(CHECKOV_VENV)/.deps  ## Run the policy pack and checkov's Kubernetes checks on a render (RESOURCES, default build/$(STACK)/resources.json)
	$(PY) -m policy.nemotron_policies.cli --stack $(STACK) $(RESOURCES) \
		--manifests $(MANIFESTS) --checkov $(CHECKOV_VENV)/bin/checkov --checkov-gate .checkov/gate.yaml

# The capacity planner is a tool, not part of `pulumi up`: WRITE=1 writes the plan's `targets:` and
# `aws.nodePools:` into Pulumi.$(STACK).yaml (comments kept) for the PR to show. Its solver and YAML round
# trip are in its own requirements file.
$(VENV)/.plan-deps: tools/plan_capacity/requirements.txt | $(PY)
	$(PY) -m pip install -q -r tools/plan_capacity/requirements.txt
	touch $@

plan: $(VENV)/.render-deps $(VENV)/.plan-deps  ## Size STACK from its `demand:` block (targets, replicas, pools, $/h, $/1M tokens); WRITE=1 writes it into the stack file
	$(PY) -m tools.plan_capacity --stack $(STACK) $(if $(WRITE),--write)

BASE ?= origin/main
# BASE renders in the virtualenv of its own requirement files (the working tree's when they agree, else one
# cached by their hash under ~/.cache/nemotron-stack-diff). With the engine built (`make tools`) and a stack
# it can preview (no AWS resources, no Helm releases), the real `pulumi preview --diff` against the deployed
# base is written to build/pr-diff/engine/ and held against the offline diff; OFFLINE=1 skips it. RUN_URL:
# the CI run whose artifact holds build/pr-diff/ (the comment links it).
diff: $(VENV)/.render-deps $(VENV)/.tools-deps  ## Markdown diff of STACK between BASE (a git ref) and the working tree, for a PR comment
	@$(PY) -m tools.diff --stack $(STACK) --base $(BASE) --venv $(abspath $(VENV)) --out build/pr-diff/$(STACK).md $(if $(OFFLINE),--offline) $(if $(RUN_URL),--run-url "$(RUN_URL)")

diff-sample: $(VENV)/.render-deps $(VENV)/.tools-deps  ## Rewrite docs/pull-requests.md's sample comment from a planted pull request (tools/pr_diff/sample.py)
	$(PY) -m tools.pr_diff.sample --venv $(abspath $(VENV))

check-dates: $(VENV)/.render-deps  ## List every dated fact (EKS support ends, version-tied pins, prices) ending within 90 days [TODAY=YYYY-MM-DD]
	$(PY) -m tools.check_dates $(if $(TODAY),--today $(TODAY))

schema: $(VENV)/.render-deps  ## Regenerate the JSON Schemas (outputs contract, stack files) from the pydantic models
	$(PY) -m tools.write_outputs_schema
	$(PY) -m tools.write_config_schema

# --- checks ---------------------------------------------------------------------------------------
# `make test` (the README's command) leaves out the tests marked `slow` (a real LiteLLM proxy on loopback, the
# AIPerf CLI, `make absorb` and `make diff` run whole in subprocesses): each behaviour they cover also has a fast
# test. `make test-all` runs every test; CI (.ci/run) runs it.
test: $(VENV)/.test-deps promtool  ## Run the fast tests (under 3 minutes on 2 cores)
	$(PY) -m pytest -q -n 2 --dist loadfile --ignore=tests/e2e -m "not slow"

test-all: $(VENV)/.test-deps promtool $(AIPERF_VENV)/.installed $(GATEWAY_VENV)/.deps $(CHECKOV_VENV)/.deps parser-probes  ## Run every test, the slow ones too
	$(PY) -m pytest -q -n 2 --dist loadfile --ignore=tests/e2e

# --- the real engine ------------------------------------------------------------------------------
# `make tools` builds the Pulumi CLI, the Kubernetes provider, etcd, kwok and the Kubernetes control plane
# from the Go module proxy (tools/e2e/gomod/*), cached per machine outside the clone (NEMOTRON_TOOLS_CACHE,
# default ~/.cache/nemotron-stack-tools) and linked into .tools/bin. A first build takes ~25 min on 2 cores;
# afterwards it is a cache hit (seconds).
tools:  ## Build (or reuse) the real-engine binaries into .tools/bin
	@command -v go >/dev/null || { echo "make tools needs Go (1.26): https://go.dev/doc/install" >&2; exit 2; }
	bash tools/e2e/build_tools.sh

# The scenarios of docs/e2e.md (tests/e2e) against a real API server on loopback (every process bounded in time
# and stopped at the end). Budget: 10 minutes once the tools are built.
e2e: $(VENV)/.test-deps tools  ## Run the stack under the real Pulumi engine and a real control plane
	$(PY) -m pytest -q -p no:xdist -p no:cacheprovider tests/e2e

# Each committed stack is rendered and judged by the pack's gate (`make policy`): the policy pack and checkov's
# Kubernetes checks, with the config .checkov/gate.yaml assigns to each manifest (the upstream recipes' own,
# .checkov/upstream-recipes.yaml, for the model-download Job; .checkov/stack.yaml for the rest). One checkov
# run per stack: given several -d directories, checkov 3.3 scanned only one of them.
LINT_STACKS := dev prod sandbox
lint: $(VENV)/.render-deps $(VENV)/.lint-deps $(CHECKOV_VENV)/.deps  ## Static checks: code, workflows, stack files, rendered manifests
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/actionlint -shellcheck=$(abspath $(VENV))/bin/shellcheck
	$(VENV)/bin/zizmor --offline --persona auditor .github/workflows
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(VENV)/bin/check-jsonschema --schemafile schemas/stack-config.schema.json Pulumi.*.yaml
	$(foreach stack,$(LINT_STACKS),$(MAKE) --no-print-directory render STACK=$(stack) && \
		$(MAKE) --no-print-directory policy STACK=$(stack) &&) true

# --- benchmarks (ratios measured in one run; not tests) -------------------------------------------
bench: $(VENV)/.test-deps  ## Render time/memory, model prewarm against vmtouch and fio, planner time
	$(PY) benchmarks/render_bench.py
	$(PY) benchmarks/prewarm_bench.py
	$(PY) benchmarks/planner_bench.py

bench-gateway: $(VENV)/.test-deps $(GATEWAY_VENV)/.deps  ## Gateway failover figures with the real LiteLLM proxy on loopback
	$(PY) benchmarks/gateway_failover.py

clean:
	rm -rf build .pytest_cache
