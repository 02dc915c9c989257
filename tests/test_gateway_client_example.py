"""The example app (`examples/gateway_client/`) on the outputs of a real render of the failover stack built
from prod's file (tests/gateway_helpers.py; contract 1.1): its
settings come from them, its Pulumi program reads them through a StackReference, and its CLI (the OpenAI
client, in `.venv-gateway`) gets answers from a local gateway running prod's config, saying when the answer
came from a fallback."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
from gateway_helpers import failover_run, scenario_backends
from pulumi.runtime import mocks, settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from serving_stack.contract.outputs import CONTRACT_VERSION, StackOutputs
from serving_stack.plan.gateway import SAGEMAKER_GROUP_SUFFIX
from tools.gateway_loopback import scenarios
from tools.gateway_loopback.processes import GATEWAY_VENV, litellm_executable
from tools.gateway_loopback.stack_backends import BACKEND_LATENCY_SECONDS, LOOPBACK_TIMINGS
from tools.mock_runtime import PROJECT_DIR, RecordingMonitor
from tools.stack_mocks import StackMocks

EXAMPLE_DIR = PROJECT_DIR / "examples" / "gateway_client"
sys.path.insert(0, str(EXAMPLE_DIR))
from gateway_client import ClientSettings


@pytest.fixture(scope="module")
def prod():
    return scenario_backends()


def prod_outputs() -> dict[str, Any]:
    """`pulumi stack output --json` of the failover stack built from prod's file (gateway_helpers), as the
    render writes it to outputs.json."""
    return json.loads(StackOutputs.model_validate(failover_run().outputs).model_dump_json())


def test_settings_from_the_outputs_of_the_prod_render(prod):
    outputs = prod_outputs()
    assert outputs["contractVersion"] == CONTRACT_VERSION
    settings = ClientSettings.from_outputs(outputs)
    gateway = outputs["gateway"]
    assert (settings.model, settings.base_url) == (prod.model, gateway["url"])
    assert settings.fallbacks == (f"{prod.model}{SAGEMAKER_GROUP_SUFFIX}",), "prod: the same model on SageMaker"
    auth = gateway["auth"]
    assert (settings.secret_namespace, settings.secret_name, settings.secret_key) == (
        auth["secretNamespace"],
        auth["secretName"],
        auth["secretKey"],
    )
    for old in ({"contractVersion": "1.0", "endpoints": []}, {**outputs, "gateway": None}):
        with pytest.raises(ValueError, match="have no gateway"):
            ClientSettings.from_outputs(old)
    assert ClientSettings.from_outputs({**outputs, "contractVersion": "1.7"}) == settings, "later 1.x only add"
    with pytest.raises(ValueError, match="not served by the gateway"):
        ClientSettings.from_outputs(outputs, "nvidia/unknown")


class ServingStackMocks(StackMocks):
    """Answers the StackReference read (a ReadResource, not a registration) with the serving outputs."""

    def __init__(self, outputs: dict[str, Any]) -> None:
        self.outputs = outputs
        self.references: list[str] = []

    def new_resource(self, args: mocks.MockResourceArgs):
        if args.typ == "pulumi:pulumi:StackReference":
            self.references.append(args.inputs["name"])
            return f"{args.name}-id", {"name": args.name, "outputs": self.outputs, "secretOutputNames": []}
        return super().new_resource(args)


def test_pulumi_program_reads_the_outputs_through_a_stack_reference(prod):
    outputs = prod_outputs()
    stack_mocks = ServingStackMocks(outputs)
    monitor = RecordingMonitor(stack_mocks)
    settings.set_root_resource(None)
    pulumi.runtime.set_all_config(
        {
            "nemotron-gateway-client:servingStack": "org/nemotron-lightning/prod",
            "nemotron-gateway-client:namespace": "agents",
        },
        [],
    )
    mocks.set_mocks(stack_mocks, project="nemotron-gateway-client", stack="test", preview=False, monitor=monitor)
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(EXAMPLE_DIR / "__main__.py"))))
    assert stack_mocks.references == ["org/nemotron-lightning/prod"]
    (config_map,) = [r.inputs for r in monitor.recorded if r.type == "kubernetes:core/v1:ConfigMap"]
    assert config_map["metadata"] == {"name": "gateway-client", "namespace": "agents"}
    assert config_map["data"]["OPENAI_BASE_URL"] == outputs["gateway"]["url"]
    assert config_map["data"]["GATEWAY_MODEL"] == prod.model


def ask(outputs_file: Path, base_url: str, key: str) -> dict[str, Any]:
    result = subprocess.run(
        [
            str(GATEWAY_VENV / "bin" / "python"),
            str(EXAMPLE_DIR / "gateway_client.py"),
            "--outputs",
            str(outputs_file),
            "--base-url",
            f"{base_url}/v1",
            "Say hello.",
        ],
        env={"PATH": os.environ["PATH"], "GATEWAY_API_KEY": key},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)


@pytest.mark.slow  # the real LiteLLM proxy on loopback
def test_cli_gets_answers_from_the_local_gateway_and_names_a_failover(prod, tmp_path):
    litellm_executable()
    outputs_file = tmp_path / "outputs.json"
    outputs_file.write_text(json.dumps(prod_outputs()))
    settings_ = prod.settings(replicas=1, **LOOPBACK_TIMINGS)
    with scenarios.loopback_gateway(prod.dynamo, prod.sagemaker, settings_, tmp_path, BACKEND_LATENCY_SECONDS) as gw:
        direct = ask(outputs_file, gw.base_url, gw.master_key)
        for backend in gw.dynamo(prod.model):
            backend.kill()
        failed_over = ask(outputs_file, gw.base_url, gw.master_key)
    assert (direct["model"], direct["modelGroup"], direct["failedOver"]) == (prod.model, prod.model, False)
    assert direct["text"].startswith("answered by ")
    assert failed_over["modelGroup"] == f"{prod.model}{SAGEMAKER_GROUP_SUFFIX}" and failed_over["failedOver"] is True
    assert failed_over["model"] == prod.model
