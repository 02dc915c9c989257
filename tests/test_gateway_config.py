"""The `gateway` block and its secret: wrong settings stop the program with one line naming the key before any
resource; the master key is required exactly when the gateway is on and only ever a Pulumi secret; the
committed prod stack renders only when the render is told to use placeholders, and then says so."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from gateway_helpers import failover_config
from rollout_helpers import committed_config
from stack_helpers import BASE_CONFIG, PROJECT, TEST_SECRETS, assert_rejected_before_any_resource, run_config

from serving_stack.config import ConfigError, parse_stack_config
from serving_stack.config.gateway import MASTER_KEY_SECRET
from serving_stack.config.secrets import required_secrets
from tools.mock_runtime import PROJECT_DIR, run_program
from tools.secret_placeholders import OUT_OF_BAND_SECRETS, with_placeholders

WITHOUT_KEY = {k: v for k, v in TEST_SECRETS.items() if k != MASTER_KEY_SECRET}
PROD = committed_config("prod")
# A stack whose targets all serve its SageMaker endpoint's model (gateway_helpers builds it from prod's file).
FAILOVER = failover_config()
(FAILOVER_ENDPOINT, FAILOVER_MODEL), *_ = (
    (e["name"], e["huggingface"]["repo"])
    for e in FAILOVER["sagemaker"]["endpoints"]
    if e.get("source") == "huggingface"
)


def with_gateway(config: dict, **gateway: object) -> dict:
    changed = copy.deepcopy(config)
    changed["gateway"] = {**changed.get("gateway", {}), "enabled": True, **gateway}
    return changed


BAD = {
    "key not set": (
        with_gateway(BASE_CONFIG),
        WITHOUT_KEY,
        f"{MASTER_KEY_SECRET}: required when gateway.enabled is true",
    ),
    "unknown gateway key": (
        with_gateway(BASE_CONFIG, replica=2),
        None,
        "gateway.replica: unknown key; allowed: enabled, name, replicas",
    ),
    "fewer maximum than minimum": (
        with_gateway(BASE_CONFIG, replicas=4, maxReplicas=2),
        None,
        "maxReplicas (2) must be >= replicas (4)",
    ),
    "replicas as a string": (
        with_gateway(BASE_CONFIG, replicas="2"),
        None,
        "gateway.replicas: Input should be a valid",
    ),
    "stream timeout above timeout": (
        with_gateway(BASE_CONFIG, router={"timeoutSeconds": 5, "streamTimeoutSeconds": 10}),
        None,
        "streamTimeoutSeconds must be <= timeoutSeconds",
    ),
    "name not a DNS label": (with_gateway(BASE_CONFIG, name="LLM_Gateway"), None, "gateway.name: must be a DNS label"),
    "egress not a CIDR": (
        with_gateway(BASE_CONFIG, sagemakerEgressCidrs=["10.0.0.0"]),
        None,
        "gateway.sagemakerEgressCidrs[0]: must be an IPv4 CIDR with a prefix length",
    ),
    "unknown degraded fallback": (
        with_gateway(PROD, degradedFallback={"endpoint": "nano"}),
        None,
        "gateway.degradedFallback.endpoint: 'nano' is not a SageMaker endpoint of this stack; "
        "allowed: nemotron-lightning",
    ),
    "degraded fallback of the targets' own model": (
        with_gateway(FAILOVER, degradedFallback={"endpoint": FAILOVER_ENDPOINT}),
        None,
        f"{FAILOVER_ENDPOINT!r} serves {FAILOVER_MODEL!r}, the model of the Dynamo targets: it is already their "
        "same-model fallback",
    ),
    "SageMaker fallbacks on a cluster the stack does not create": (
        with_gateway({**BASE_CONFIG, "sagemaker": PROD["sagemaker"]}),
        None,
        "gateway.enabled: the gateway would fail over to SageMaker endpoints it cannot sign for",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_gateway_config_is_rejected_before_any_resource(case):
    config, secrets, expected = BAD[case]
    assert_rejected_before_any_resource(config, expected, secrets=secrets)


def test_a_plain_text_master_key_is_rejected():
    config = {f"{PROJECT}:{k}": json.dumps(v) for k, v in with_gateway(BASE_CONFIG).items()}
    config[f"{PROJECT}:{MASTER_KEY_SECRET}"] = "sk-plain-text"
    with pytest.raises(ConfigError, match=rf"^{MASTER_KEY_SECRET}: must be a Pulumi secret"):
        run_program(config, secret_keys=[])
    assert run_program.last_monitor.recorded == []


def test_required_secrets_are_what_the_program_refuses_to_run_without():
    config = with_gateway({**BASE_CONFIG, "dynamo": {"imagePullSecret": "ngc"}})
    required = required_secrets(parse_stack_config(config))
    assert set(required) == {MASTER_KEY_SECRET, "ngcApiKey"}
    for key in required:
        assert_rejected_before_any_resource(
            config, f"{key}: required when", {k: v for k, v in TEST_SECRETS.items() if k != key}
        )
    assert run_config(config).resources, "with every required secret it runs"
    assert required_secrets(parse_stack_config(BASE_CONFIG)) == {}


def test_placeholders_stand_in_only_for_secrets_set_out_of_band():
    config = with_gateway({**BASE_CONFIG, "dynamo": {"imagePullSecret": "ngc"}})
    values = {f"{PROJECT}:{k}": json.dumps(v) for k, v in config.items()}
    inputs = with_placeholders(values, [], PROJECT)
    assert set(inputs.placeholders) == set(OUT_OF_BAND_SECRETS) == {MASTER_KEY_SECRET}
    with pytest.raises(ConfigError, match=r"^ngcApiKey: required when dynamo.imagePullSecret is set"):
        run_program(inputs.config, inputs.secret_keys)  # a forgotten pull-Secret key is still refused
    assert run_program.last_monitor.recorded == []


def render(*flags: str, out: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.render", "--stack", "prod", "--out", out, *flags],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow  # two whole renders in subprocesses
def test_committed_prod_renders_with_named_placeholders_only_when_asked(tmp_path):
    refused = render(out=str(tmp_path / "strict"))
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: {MASTER_KEY_SECRET}: required when gateway.enabled is true")
    assert not (tmp_path / "strict" / "prod").exists()
    rendered = render("--secret-placeholders", out=str(tmp_path / "build"))
    assert rendered.returncode == 0, rendered.stderr
    note = (
        f"Rendered with placeholder secrets, not in Pulumi.prod.yaml: `{MASTER_KEY_SECRET}` (gateway.enabled is true)"
    )
    assert note in rendered.stderr
    assert note in (tmp_path / "build" / "prod" / "summary.md").read_text()
    outputs = json.loads((tmp_path / "build" / "prod" / "outputs.json").read_text())
    assert outputs["gateway"]["url"].startswith("http://")
