"""The stand-in operator's admission rules and rolling update, without a cluster (tests/e2e runs them for
real): each rule refuses a planted DGD with the real webhook's field error, the committed stacks' DGDs are
admitted, the webhook answers over TLS with its own CA, and a worker generation is replaced one ahead."""

from __future__ import annotations

import copy
import json
import ssl
import urllib.request
from typing import Any

import pytest
from stack_helpers import rendered_stack

from tools.e2e.admission import RULES_FILE, Webhook, invalid_message, load_rules, refusals, review_response
from tools.e2e.stand_in_operator import component_deployment, rolling_step, surge_and_unavailable, worker_hash

GROVE, RULES = load_rules()
BY_ID = {rule.id: rule for rule in RULES}
STACKS = ("dev", "prod", "sandbox")


def _dgds(stack: str) -> list[dict[str, Any]]:
    return [
        r.to_json()["inputs"]
        for r in rendered_stack(stack).resources
        if r.custom and (r.to_json()["inputs"] or {}).get("kind") == "DynamoGraphDeployment"
    ]


@pytest.fixture(scope="module")
def dgd() -> dict[str, Any]:
    return _dgds("dev")[0]


def _worker(dgd: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return next((i, c) for i, c in enumerate(dgd["spec"]["components"]) if c["type"] != "frontend")


def _expected(rule_id: str, index: Any = None, value: Any = None) -> str:
    rule = BY_ID[rule_id]
    shown = f" {json.dumps(value)}:" if rule.type == "Invalid value" else ""
    return f"{rule.path.format(index=index)}: {rule.type}:{shown} {rule.detail}"


def test_every_rule_names_its_upstream_source_and_a_check():
    import yaml

    from tools.e2e.admission import CHECKS

    data = yaml.safe_load(RULES_FILE.read_text())
    for rule in data["rules"]:
        assert {"file", "function", "commit", "refuses"} <= rule.keys(), rule["id"]
        assert len(rule["commit"]) == 40 and rule["check"] in CHECKS, rule["id"]
    assert GROVE is False  # catalog/platform.yaml enables no Grove


@pytest.mark.parametrize("stack", STACKS)
def test_the_committed_stacks_dgds_are_admitted(stack):
    dgds = _dgds(stack)
    assert dgds
    for dgd in dgds:
        assert refusals("CREATE", dgd, None, GROVE, RULES) == []
        assert refusals("UPDATE", dgd, copy.deepcopy(dgd), GROVE, RULES) == []


def _planted(dgd, change) -> dict[str, Any]:
    planted = copy.deepcopy(dgd)
    change(planted)
    return planted


def test_min_available_and_priority_class_need_grove(dgd):
    index, _ = _worker(dgd)

    def plant(d):
        d["spec"]["components"][index]["minAvailable"] = 1
        d["spec"]["priorityClassName"] = "high"

    planted = _planted(dgd, plant)
    assert refusals("CREATE", planted, None, GROVE, RULES) == [
        _expected("min-available-needs-grove", index),
        _expected("priority-class-needs-grove"),
    ]
    assert refusals("CREATE", planted, None, True, RULES) == []


def test_a_dgd_without_components_is_refused(dgd):
    planted = _planted(dgd, lambda d: d["spec"].update(components=[]))
    assert refusals("CREATE", planted, None, GROVE, RULES) == [_expected("components-required")]


@pytest.mark.parametrize(
    "image", ["nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest", "registry:5000/vllm@sha256:" + "0" * 64]
)
def test_an_image_without_a_runtime_version_needs_an_override(dgd, image):
    index, _ = _worker(dgd)

    def plant(d):
        containers = d["spec"]["components"][index]["podTemplate"]["spec"]["containers"]
        next(c for c in containers if c["name"] == BY_ID["runtime-version-resolvable"].spec["container"])["image"] = (
            image
        )

    planted = _planted(dgd, plant)
    assert refusals("CREATE", planted, None, GROVE, RULES) == [_expected("runtime-version-resolvable", index)]
    assert refusals("UPDATE", planted, dgd, GROVE, RULES) == [_expected("runtime-version-resolvable", index)]
    # The ratchet: an object already admitted with that image stays editable.
    assert refusals("UPDATE", planted, copy.deepcopy(planted), GROVE, RULES) == []
    overridden = _planted(planted, lambda d: d["spec"]["components"][index].update(runtimeVersionOverride="1.5.0"))
    assert refusals("CREATE", overridden, None, GROVE, RULES) == []


def test_replicas_belong_to_the_scaling_adapter(dgd):
    index, worker = _worker(dgd)
    adapted = _planted(dgd, lambda d: d["spec"]["components"][index].update(scalingAdapter={}))
    scaled = _planted(adapted, lambda d: d["spec"]["components"][index].update(replicas=worker.get("replicas", 1) + 1))
    assert refusals("UPDATE", scaled, adapted, GROVE, RULES) == [_expected("replicas-owned-by-scaling-adapter", index)]
    # Without an adapter the same change is the user's to make.
    plain = _planted(dgd, lambda d: d["spec"]["components"][index].update(replicas=worker.get("replicas", 1) + 1))
    assert refusals("UPDATE", plain, dgd, GROVE, RULES) == []


def test_multinode_and_topology_are_fixed_at_creation(dgd):
    index, _ = _worker(dgd)
    multinode = _planted(dgd, lambda d: d["spec"]["components"][index].update(multinode={"nodeCount": 2}))
    assert refusals("CREATE", multinode, None, GROVE, RULES) == []
    assert refusals("UPDATE", multinode, dgd, GROVE, RULES) == [
        _expected("multinode-immutable", index, {"nodeCount": 2})
    ]
    packed = _planted(dgd, lambda d: d["spec"]["components"][index].update(topologyConstraint={"packDomain": "rack"}))
    assert refusals("UPDATE", packed, dgd, GROVE, RULES) == [
        _expected("topology-constraint-immutable", index, {"packDomain": "rack"})
    ]
    assert refusals("UPDATE", packed, copy.deepcopy(packed), GROVE, RULES) == []


def test_a_terminating_dgd_gets_only_metadata_rules(dgd):
    planted = _planted(dgd, lambda d: d["spec"].update(components=[]))
    planted["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    review = {"request": {"uid": "u", "operation": "UPDATE", "object": planted, "oldObject": dgd}}
    assert review_response(review, GROVE, RULES)["response"]["allowed"] is True


def test_the_webhook_answers_over_tls_as_the_api_server_calls_it(dgd, tmp_path):
    index, _ = _worker(dgd)
    planted = _planted(dgd, lambda d: d["spec"]["components"][index].update(minAvailable=1))
    webhook = Webhook(tmp_path)
    try:
        configuration = webhook.configuration()["webhooks"][0]
        assert configuration["clientConfig"]["url"].startswith("https://127.0.0.1:")
        context = ssl.create_default_context(cadata=webhook.ca_pem.decode())
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": "CREATE", "object": planted},
        }
        request = urllib.request.Request(
            configuration["clientConfig"]["url"],
            data=json.dumps(review).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            answer = json.loads(response.read())["response"]
    finally:
        webhook.stop()
    assert answer["uid"] == "u-1" and answer["allowed"] is False
    name = dgd["metadata"]["name"]
    assert answer["status"]["message"] == invalid_message(name, [_expected("min-available-needs-grove", index)])
    assert answer["status"]["message"] == (
        f'DynamoGraphDeployment.nvidia.com "{name}" is invalid: spec.components[{index}].minAvailable: '
        "Forbidden: is currently supported only for Grove-backed DynamoGraphDeployment components"
    )


def test_a_worker_spec_change_starts_a_new_generation_one_ahead(dgd):
    dgd = {**dgd, "metadata": {**dgd["metadata"], "uid": "u-1", "generation": 1}}
    index, worker = _worker(dgd)
    replicas = int(worker.get("replicas", 1))
    rescaled = _planted(dgd, lambda d: d["spec"]["components"][index].update(replicas=replicas + 1))
    assert worker_hash(rescaled) == worker_hash(dgd)  # a replicas change scales in place

    def new_image(d):
        d["spec"]["components"][index]["podTemplate"]["spec"]["containers"][0]["image"] += "-rebuilt"

    changed = _planted(dgd, new_image)
    assert worker_hash(changed) != worker_hash(dgd)
    old = component_deployment(dgd, worker)
    new = component_deployment(changed, changed["spec"]["components"][index])
    assert old["metadata"]["name"] != new["metadata"]["name"]
    assert old["spec"]["selector"] != new["spec"]["selector"]  # the generations never share pods
    surge, _ = surge_and_unavailable(replicas)
    old["status"] = {"readyReplicas": replicas}
    # First step: the new generation starts `surge` workers while every old one keeps serving.
    started, kept = rolling_step(replicas, None, [old])
    assert (started, kept) == (min(replicas, surge), [replicas])
    # Until a new worker is Ready, nothing of the old generation goes (a full pool waits here).
    new["spec"]["replicas"], new["status"] = started, {"readyReplicas": 0}
    assert rolling_step(replicas, new, [old])[1] == [replicas]
    new["status"] = {"readyReplicas": started}
    assert rolling_step(replicas, new, [old])[1] == [replicas - started]


def test_a_target_image_the_config_accepts_is_one_the_operator_admits(dgd):
    """targets[].image (VersionedImage) against the operator's runtime-version rule, on the committed image and
    its pinned variants: the config refuses what admission would refuse at `pulumi up`, naming the key."""
    import pydantic
    from stack_helpers import BASE_CONFIG, assert_rejected_before_any_resource

    from serving_stack.config.types import VersionedImage

    index, worker = _worker(dgd)
    committed = worker["podTemplate"]["spec"]["containers"][0]["image"]
    repository, tag = committed.rsplit(":", 1)
    digest = "@sha256:" + "0" * 64
    major_minor = ".".join(tag.split(".")[:2])
    candidates = [committed, committed + digest, repository + digest, f"{repository}:build-{tag}{digest}"]
    candidates += [f"{repository}:v{tag}", f"{repository}:{major_minor}", f"{repository}:{major_minor}.x"]
    accepts = pydantic.TypeAdapter(VersionedImage)
    outcomes = set()
    for image in candidates:
        try:
            accepts.validate_python(image)
            accepted = True
        except pydantic.ValidationError:
            accepted = False
        planted = copy.deepcopy(dgd)
        for container in planted["spec"]["components"][index]["podTemplate"]["spec"]["containers"]:
            container["image"] = image
        admitted = refusals("CREATE", planted, None, GROVE, RULES) == []
        assert accepted == admitted, image
        outcomes.add(accepted)
    assert outcomes == {True, False}  # the candidates cover both sides
    config = copy.deepcopy(BASE_CONFIG)
    config["targets"][0]["image"] = repository + digest
    assert_rejected_before_any_resource(config, "targets[0].image: must be an image with a semver tag")
