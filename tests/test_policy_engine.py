"""The pack as the Pulumi CLI 3.274.1 runs it: its language host runs `python policy <engine>`, which serves
the analyzer over gRPC, and the engine names the stack only through ConfigureStack (no PULUMI_STACK in the
analyzer's environment: pulumi/pulumi pkg/resource/plugin/analyzer_plugin.go); fed the prod recording (with planted violations), it reports what the offline runner reports. The one
documented difference: the analyzer protocol carries no retainOnDelete, so the engine sees an unprotected cache."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from policy_helpers import (
    HF_TOKEN,
    REPO,
    aggregated,
    components,
    disaggregated,
    fabric_of,
    main_container,
    mutate,
    pod_spec,
    worker,
)
from pulumi.runtime.proto import analyzer_pb2 as proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from policy.nemotron_policies.offline import evaluate
from policy.nemotron_policies.pack import PACK_NAME, POLICIES

LEVELS = {proto.ADVISORY: "advisory", proto.MANDATORY: "mandatory"}
PVC = "kubernetes:core/v1:PersistentVolumeClaim"


@pytest.fixture(scope="module")
def analyzer() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    env = {k: v for k, v in os.environ.items() if k not in ("PULUMI_PROJECT", "PULUMI_STACK", "PULUMI_DRY_RUN")}
    process = subprocess.Popen(
        [sys.executable, "-u", str(REPO / "policy"), "127.0.0.1:0"],
        cwd=REPO / "policy",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), process.stderr.read()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = analyzer_pb2_grpc.AnalyzerStub(channel)
            stub.ConfigureStack(
                proto.AnalyzerStackConfigureRequest(stack="prod", project="nemotron-lightning", dry_run=True)
            )
            yield stub
    finally:
        process.kill()
        process.wait(timeout=10)


def planted(resources: list) -> None:
    main_container(components(resources, aggregated(resources))["frontend"])["image"] = (
        "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest"
    )
    worker(resources, aggregated(resources), "agg")["env"].append({"name": "HF_TOKEN", "value": HF_TOKEN})
    pod_spec(resources, "model-cache-download")["containers"][0]["securityContext"]["privileged"] = True
    decode = worker(resources, disaggregated(resources), "decode")
    decode["resources"]["limits"][fabric_of(decode)] = "3"


def struct(inputs: dict) -> struct_pb2.Struct:
    return json_format.ParseDict(inputs, struct_pb2.Struct())


def findings(response: proto.AnalyzeResponse, urn: str = "") -> set[tuple[str, str, str, str]]:
    return {(d.policyName, LEVELS[d.enforcementLevel], d.urn or urn, d.message) for d in response.diagnostics}


def test_the_served_pack_lists_every_policy_with_its_level(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == PACK_NAME
    assert {(p.name, LEVELS[p.enforcementLevel]) for p in info.policies} == {
        (p.name, p.enforcement_level.value) for p in POLICIES
    }
    schema = next(p for p in info.policies if p.name == "image-pinning").configSchema
    assert "allowedRegistries" in schema.properties


def analyze_stack(analyzer: analyzer_pb2_grpc.AnalyzerStub, resources: list) -> set[tuple[str, str, str, str]]:
    urns = {f"{r.type}::{r.name}": r.urn for r in resources}
    stack = proto.AnalyzeStackRequest(
        resources=[
            proto.AnalyzerResource(
                type=r.type,
                properties=struct(r.inputs),
                urn=r.urn,
                name=r.name,
                parent=urns.get(r.parent, ""),
                dependencies=[urns[d] for d in r.depends_on if d in urns],
                options=proto.AnalyzerResourceOptions(protect=r.protect),
            )
            for r in resources
        ]
    )
    return findings(analyzer.AnalyzeStack(stack))


def test_the_pack_judges_the_stack_the_engine_names(analyzer):
    """protectedStacks holds only when the pack knows the stack: an unprotected model cache in prod is refused."""

    def unprotected(resources: list) -> None:
        resources[:] = [dataclasses.replace(r, protect=False, retain_on_delete=False) for r in resources]

    resources = mutate("prod", unprotected)
    offline = {
        (v.policy_name, v.enforcement_level, v.urn, f"{v.description}\n{v.message}")
        for v in evaluate(resources, stack="prod")
        if v.policy_name == "data-protection"
    }
    assert {level for _, level, _, _ in offline} == {"mandatory"}
    assert offline <= analyze_stack(analyzer, resources)


def test_the_engine_reports_what_the_offline_runner_reports(analyzer):
    resources = mutate("prod", planted)
    engine: set[tuple[str, str, str, str]] = set()
    for r in resources:
        request = proto.AnalyzeRequest(
            type=r.type,
            properties=struct(r.inputs),
            urn=r.urn,
            name=r.name,
            options=proto.AnalyzerResourceOptions(protect=r.protect),
        )
        engine |= findings(analyzer.Analyze(request), r.urn)
    engine |= analyze_stack(analyzer, resources)

    offline = {
        (v.policy_name, v.enforcement_level, v.urn, f"{v.description}\n{v.message}")
        for v in evaluate(resources, stack="prod")
    }
    retained_only = [r.urn for r in resources if r.retain_on_delete and not r.protect and r.type == PVC]
    only_engine = engine - offline
    assert [(policy, urn) for policy, _, urn, _ in only_engine] == [("data-protection", urn) for urn in retained_only]
    assert offline <= engine
    assert {policy for policy, level, _, _ in offline if level == "mandatory"} == {
        "image-pinning",
        "secret-handling",
        "least-privilege",
        "fabric-requests",
    }
