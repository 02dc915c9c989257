"""Helpers to run the stack program under mocks with a config given as Python data."""

from __future__ import annotations

import functools
import json
from typing import Any

import yaml
from catalog_picks import pick

from serving_stack.facts.catalog import load_catalog
from tools.mock_runtime import PROJECT_DIR, ProgramRun, run_program
from tools.secret_placeholders import stack_inputs
from tools.stack_files import stack_config

PROJECT = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["name"]
REFERENCE_DIR = PROJECT_DIR.parent / "shared" / "reference"
RECIPES_REFERENCE = REFERENCE_DIR / "dynamo-recipes" / "nemotron-3.5-lightning"
DGD_TYPE = "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment"
CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"

# A small vLLM serving target: aggregated, one worker, with published figures, on a GPU the data knows.
BASE_TARGET = pick(backend="vllm", disaggregated=False, routing="single", published=True, known_gpu=True).id
BASE_CONFIG: dict[str, Any] = {
    "kubernetes": {"namespace": "nemotron-test", "cluster": {"source": "kubeconfig", "context": "test"}},
    "modelCache": {"storageClassName": "efs-ap"},
    "targets": [{"id": BASE_TARGET}],
}


TEST_SECRETS = {
    "hfToken": "hf_test_token_value",
    "ngcApiKey": "nvapi-test-key-value",
    "gatewayMasterKey": "sk-gateway-test-master-key-value",
}


def run_config(raw: dict[str, Any], stack: str = "test", secrets: dict[str, str] | None = None) -> ProgramRun:
    """Run `__main__.py` with these top-level config keys (as in `Pulumi.<stack>.yaml`, unprefixed) and
    these secret keys (default: every secret the stack knows, with test values)."""
    config = {f"{PROJECT}:{key}": json.dumps(value) for key, value in raw.items()}
    secrets = TEST_SECRETS if secrets is None else secrets
    config.update({f"{PROJECT}:{key}": value for key, value in secrets.items()})
    return run_program(config, [f"{PROJECT}:{key}" for key in secrets], stack=stack)


def assert_rejected_before_any_resource(
    raw: dict[str, Any], expected: str, secrets: dict[str, str] | None = None
) -> None:
    """The program stops with one line containing `expected`, and registered nothing."""
    from serving_stack.config import ConfigError

    try:
        run_config(raw, secrets=secrets)
    except ConfigError as error:
        message = str(error)
    else:
        raise AssertionError(f"config was accepted; expected an error containing {expected!r}")
    assert expected in message, message
    assert "\n" not in message
    assert run_program.last_monitor.recorded == []


def all_targets_config(**overrides: Any) -> dict[str, Any]:
    """A synthetic stack selecting every catalog target (one prewarm pod may then warm every checkpoint set of
    its GPU, BF16 beside NVFP4, hence the memory limit)."""
    cache = {**BASE_CONFIG["modelCache"], "prewarm": {"memoryLimit": "512Gi"}}
    return {**BASE_CONFIG, "modelCache": cache, "targets": [{"id": t} for t in load_catalog().recipes], **overrides}


def stack_file_config(stack: str) -> dict[str, Any]:
    """The project's config keys of the committed `Pulumi.<stack>.yaml` (`targets`, `aws`, ...) as plain data,
    read with the program's reader: what a test about a committed stack derives its expectations from."""
    config, _ = stack_config(stack)
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["name"]
    values = {k.removeprefix(f"{project}:"): v for k, v in config.items() if k.startswith(f"{project}:")}
    return {k: _json_or_text(v) for k, v in values.items()}


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


@functools.cache
def rendered_stack(stack: str) -> ProgramRun:
    """The committed `Pulumi.<stack>.yaml` run once per test session, as `make render` runs it (secrets the
    stack requires but the file cannot hold as placeholders)."""
    inputs = stack_inputs(stack, placeholders=True)
    return run_program(inputs.config, inputs.secret_keys, stack=stack)
