"""The example app (`examples/gateway_client/`) on the outputs of real renders: the sandbox stack's (what
examples/README.md runs it against), dev's (no gateway), and the failover stack built from prod's file
(tests/gateway_helpers.py). Its settings come from the outputs; its Pulumi program reads them through a
StackReference, reaches the cluster through the exported `kubeconfig` and copies the secret `gatewayApiKey`
into the app's namespace, or stops with one line when the stack cannot serve it; its CLI (the OpenAI client,
in `.venv-gateway`) gets answers from a local gateway running prod's config, saying when the answer came
from a fallback."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from typing import Any

import pulumi
import pytest
from gateway_helpers import failover_run, scenario_backends
from gateway_loopback import scenarios
from gateway_loopback.processes import GATEWAY_VENV, litellm_executable
from gateway_loopback.stack_backends import BACKEND_LATENCY_SECONDS, LOOPBACK_TIMINGS
from sandbox_helpers import committed_run, rendered_outputs, sandbox_run
from stack_helpers import stack_file_config

from serving_stack import pulumi_private
from serving_stack.contract.outputs import CONTRACT_VERSION
from serving_stack.plan.gateway import SAGEMAKER_GROUP_SUFFIX
from tools.mock_runtime import PROJECT_DIR, SECRET, RecordingMonitor, StackMocks

EXAMPLE_DIR = PROJECT_DIR / "examples" / "gateway_client"
sys.path.insert(0, str(EXAMPLE_DIR))
from gateway_client import ClientSettings, StackOutputsError

EXAMPLE = "nemotron-gateway-client"
SERVING_STACK = "org/nemotron-lightning/sandbox"
PROVIDER = "pulumi:providers:kubernetes"


@pytest.fixture(scope="module")
def prod():
    return scenario_backends()


def prod_outputs() -> dict[str, Any]:
    return rendered_outputs(failover_run())


def sandbox_outputs() -> dict[str, Any]:
    return rendered_outputs(sandbox_run())


def dev_outputs() -> dict[str, Any]:
    return rendered_outputs(committed_run("dev"))


def test_settings_from_the_outputs_of_the_sandbox_render():
    outputs = sandbox_outputs()
    assert outputs["contractVersion"] == CONTRACT_VERSION
    settings = ClientSettings.from_outputs(outputs)
    (model,) = outputs["gateway"]["models"]
    assert (settings.base_url, settings.model, settings.fallbacks) == (
        outputs["gateway"]["url"],
        model["name"],
        tuple(model["fallbacks"]),
    )
    assert ClientSettings.from_outputs({**outputs, "contractVersion": "2.7"}) == settings, "later 2.x only add"
    with pytest.raises(StackOutputsError, match=r"this app reads contract 2\.x"):
        ClientSettings.from_outputs({**outputs, "contractVersion": "1.1"})
    with pytest.raises(StackOutputsError, match="not served by the gateway"):
        ClientSettings.from_outputs(outputs, "nvidia/unknown")


def test_settings_from_the_outputs_of_the_prod_render(prod):
    outputs = prod_outputs()
    settings = ClientSettings.from_outputs(outputs)
    assert (settings.model, settings.base_url) == (prod.model, outputs["gateway"]["url"])
    same_model = stack_file_config("prod")["gateway"].get("sameModelFallback", True)
    expected = (f"{prod.model}{SAGEMAKER_GROUP_SUFFIX}",) if same_model else ()
    assert settings.fallbacks == expected, "prod: the same model on SageMaker where gateway.sameModelFallback says so"


class ServingStackMocks(StackMocks):
    """Answers the StackReference read (a ReadResource, not a registration) with a render's outputs; the
    ones the render shows as "[secret]" are the serving stack's secret outputs."""

    def __init__(self, outputs: dict[str, Any]) -> None:
        self.outputs = outputs
        self.references: list[str] = []

    def new_resource(self, args: pulumi_private.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            self.references.append(args.inputs["name"])
            secret = [name for name, value in self.outputs.items() if value == SECRET]
            return f"{args.name}-id", {"name": args.name, "outputs": self.outputs, "secretOutputNames": secret}
        return super().new_resource(args)


def run_example(outputs: dict[str, Any]) -> tuple[ServingStackMocks, RecordingMonitor]:
    mocks = ServingStackMocks(outputs)
    monitor = RecordingMonitor(mocks)
    config = {f"{EXAMPLE}:servingStack": SERVING_STACK, f"{EXAMPLE}:namespace": "agents"}
    pulumi_private.run_with_mocks(
        lambda: runpy.run_path(str(EXAMPLE_DIR / "__main__.py")),
        mocks,
        monitor,
        project=EXAMPLE,
        stack="test",
        config=config,
        secret_keys=[],
    )
    return mocks, monitor


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(pulumi_private.SECRET_SIGNATURE_KEY) == pulumi_private.SECRET_SIGNATURE


def test_the_pulumi_program_on_the_sandbox_uses_its_kubeconfig_and_copies_its_key():
    outputs = sandbox_outputs()
    mocks, monitor = run_example(outputs)
    assert mocks.references == [SERVING_STACK]
    (provider,) = [r for r in monitor.recorded if r.type == PROVIDER]
    assert is_secret(provider.inputs["kubeconfig"]) and provider.inputs["kubeconfig"]["value"] == outputs["kubeconfig"]
    objects = [r for r in monitor.recorded if r.type.startswith("kubernetes:")]
    assert objects and {r.provider for r in objects} == {f"{PROVIDER}::{provider.name}"}, "no ambient kube context"
    by_type = {r.type: r.inputs for r in objects}
    assert by_type["kubernetes:core/v1:Namespace"]["metadata"]["name"] == "agents"
    config_map = by_type["kubernetes:core/v1:ConfigMap"]
    assert config_map["data"]["OPENAI_BASE_URL"] == outputs["gateway"]["url"]
    assert config_map["data"]["GATEWAY_MODEL"] == ClientSettings.from_outputs(outputs).model
    string_data = by_type["kubernetes:core/v1:Secret"]["stringData"]
    assert is_secret(string_data), "the key stays a Pulumi secret"
    assert list(string_data["value"].values()) == [outputs["gatewayApiKey"]]


@pytest.mark.parametrize(
    ("outputs", "says"),
    [
        (dev_outputs, "serves no gateway"),
        (lambda: {**sandbox_outputs(), "kubeconfig": None}, "exports no kubeconfig"),
        (lambda: {**sandbox_outputs(), "gatewayApiKey": None}, "exports no gatewayApiKey"),
    ],
    ids=["dev", "no-kubeconfig", "no-key"],
)
def test_the_pulumi_program_stops_with_one_line_before_any_resource(outputs, says):
    with pytest.raises(pulumi.RunError) as stopped:
        run_example(outputs())
    message = str(stopped.value)
    assert message.startswith(f"servingStack {SERVING_STACK}: ") and says in message and "\n" not in message
    assert not isinstance(stopped.value, StackOutputsError)


def ask(outputs_file, base_url: str, key: str | None, python: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in the gateway's virtualenv (the OpenAI client), or `python` for what fails before a request."""
    return subprocess.run(
        [
            python or str(GATEWAY_VENV / "bin" / "python"),
            str(EXAMPLE_DIR / "gateway_client.py"),
            "--outputs",
            str(outputs_file),
            "--base-url",
            f"{base_url}/v1",
            "Say hello.",
        ],
        env={"PATH": os.environ["PATH"], **({"GATEWAY_API_KEY": key} if key else {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_cli_says_what_is_missing_with_exit_2(tmp_path):
    outputs_file = tmp_path / "outputs.json"
    outputs_file.write_text(json.dumps(dev_outputs()))
    no_gateway = ask(outputs_file, "http://127.0.0.1:9", "k", sys.executable)
    assert (no_gateway.returncode, no_gateway.stdout) == (2, "")
    assert no_gateway.stderr.startswith(f"error: {outputs_file}: the stack serves no gateway")
    outputs_file.write_text(json.dumps(sandbox_outputs()))
    no_key = ask(outputs_file, "http://127.0.0.1:9", None, sys.executable)
    assert no_key.returncode == 2 and "gatewayApiKey" in no_key.stderr


@pytest.mark.slow  # the real LiteLLM proxy on loopback
def test_cli_gets_answers_from_the_local_gateway_and_names_a_failover(prod, tmp_path):
    litellm_executable()
    outputs_file = tmp_path / "outputs.json"
    outputs_file.write_text(json.dumps(prod_outputs()))
    settings_ = prod.settings(replicas=1, **LOOPBACK_TIMINGS)
    with scenarios.loopback_gateway(prod.dynamo, prod.sagemaker, settings_, tmp_path, BACKEND_LATENCY_SECONDS) as gw:
        direct = json.loads(ask(outputs_file, gw.base_url, gw.master_key).stdout)
        for backend in gw.dynamo(prod.model):
            backend.kill()
        failed_over = json.loads(ask(outputs_file, gw.base_url, gw.master_key).stdout)
    assert (direct["model"], direct["modelGroup"], direct["failedOver"]) == (prod.model, prod.model, False)
    assert direct["text"].startswith("answered by ")
    assert failed_over["modelGroup"] == f"{prod.model}{SAGEMAKER_GROUP_SUFFIX}" and failed_over["failedOver"] is True
    assert failed_over["model"] == prod.model
