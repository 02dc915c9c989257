"""The offline runner: the pack's own policies on recorded resources, enforcement levels and properties from a
CLI-shaped pack config, engine-like inputs (secrets unwrapped, unknowns tolerated) and the engine's report."""

from __future__ import annotations

import re

import pulumi
import pytest
from policy_helpers import (
    DGD,
    POLICY,
    REPO,
    aggregated,
    component,
    disaggregated,
    main_container,
    mutate,
    named,
    prewarm_daemon_sets,
    recording,
)
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from policy.nemotron_policies.offline import Violation, evaluate, format_report, policy_resources
from policy.nemotron_policies.pack import PACK_NAME, PACK_VERSION, POLICIES
from serving_stack.names import PAUSE_IMAGE
from tools.mock_runtime import RecordedResource

LATEST = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest"
SECRET_SIG = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}


def with_latest_frontend(resources: list) -> None:
    main_container(component(named(resources, aggregated(resources)).inputs, "frontend"))["image"] = LATEST


def image_findings(pack_config: dict | None) -> list[Violation]:
    return [
        v
        for v in evaluate(mutate("dev", with_latest_frontend), pack_config, stack="dev")
        if v.policy_name == "image-pinning"
    ]


def test_pack_names_are_kebab_case_and_unique():
    names = [p.name for p in POLICIES]
    assert len(set(names)) == len(names) and all(re.fullmatch(r"[a-z]+(-[a-z]+)+", n) for n in names)
    assert PACK_NAME == "nemotron-lightning-policies" and re.fullmatch(r"\d+\.\d+\.\d+", PACK_VERSION)
    assert (REPO / "policy" / "__main__.py").read_text().count("PolicyPack(") == 1


def test_violations_carry_policy_level_resource_and_message():
    (found,) = image_findings(None)
    assert found.mandatory and found.enforcement_level == "mandatory"
    assert found.resource == f"{DGD}::{aggregated(recording('dev'))}"
    assert found.urn.startswith("urn:pulumi:dev::nemotron-lightning::")
    assert found.message.startswith("container main of component Frontend: image ")


@pytest.mark.parametrize(
    ("pack_config", "level"),
    [
        ({"image-pinning": "advisory"}, "advisory"),
        ({"image-pinning": {"enforcementLevel": "advisory"}}, "advisory"),
        ({"all": "advisory"}, "advisory"),
        ({"all": "advisory", "image-pinning": "mandatory"}, "mandatory"),
        ({"image-pinning": "remediate"}, "mandatory"),
    ],
)
def test_enforcement_levels_come_from_the_pack_config(pack_config, level):
    assert [v.enforcement_level for v in image_findings(pack_config)] == [level]


def test_disabled_policies_do_not_run():
    assert image_findings({"image-pinning": "disabled"}) == []
    assert evaluate(recording("dev"), {"all": "disabled"}, stack="dev") == []


def test_policy_properties_come_from_the_pack_config():
    found = image_findings({"image-pinning": {"allowedRegistries": ["nvcr.io"]}})
    # the prewarm DaemonSet and the smoke-test Job run python, the pre-pull DaemonSet pause; the DGD's and the benchmark's images are on nvcr.io
    assert {v.resource.split("::")[0] for v in found} == {
        DGD,
        "kubernetes:apps/v1:DaemonSet",
        "kubernetes:batch/v1:Job",
    }
    others = [v for v in found if "DaemonSet" in v.resource or "batch/v1:Job" in v.resource]
    assert all("matches none of nvcr.io)" in v.message for v in others)
    # python (prewarm, smoke test) and the pre-pull DaemonSets' pause: registry.k8s.io/pause
    assert {"python" if "/python:" in v.message else "pause" for v in others} == {"python", "pause"}
    assert all("/python:" in v.message or PAUSE_IMAGE.split("@")[0] in v.message for v in others)


@pytest.mark.parametrize(
    ("pack_config", "error"),
    [
        ({"image-pin": "advisory"}, "pack config names unknown policies ['image-pin']"),
        ({"image-pinning": "warn"}, "image-pinning.enforcementLevel: 'warn' is not one of"),
        ({"image-pinning": {"allowedRegistry": []}}, "image-pinning: unknown config properties ['allowedRegistry']"),
    ],
)
def test_bad_pack_config_is_rejected_with_its_key(pack_config, error):
    with pytest.raises(ValueError, match=re.escape(error)):
        evaluate([], pack_config)


def unprotect_cache(resources: list) -> None:
    cache = named(resources, "model-cache-storage-fsx")
    cache.protect = cache.retain_on_delete = False


def test_the_stack_decides_protected_stacks():
    resources = mutate("prod", unprotect_cache)
    assert [v.policy_name for v in evaluate(resources, stack="prod") if v.mandatory] == ["data-protection"]
    assert [v for v in evaluate(resources, stack="staging") if v.mandatory] == []


def test_policy_resources_link_parents_dependencies_providers_and_options():
    built = {r.name: r for r in policy_resources(recording("prod"))}
    pvc, job = built["model-cache-pvc"], built["model-cache-download"]
    assert built["model-cache-storage-fsx"].opts.protect is True and pvc.opts.protect is False
    assert built["model-cache-storage-volume"] in pvc.dependencies
    assert pvc.parent is built["model-cache"] and pvc.opts.parent == built["model-cache"].urn
    assert pvc in job.dependencies and job.provider.resource_type == "pulumi:providers:kubernetes"


def test_secrets_reach_policies_unwrapped_as_from_the_engine():
    secret = RecordedResource(
        "kubernetes:core/v1:ConfigMap",
        "leak",
        "urn:pulumi:dev::p::kubernetes:core/v1:ConfigMap::leak",
        "",
        True,
        {"data": {"HF_TOKEN": {**SECRET_SIG, "value": "[secret]"}}},
    )
    (found,) = evaluate([secret], stack="dev")
    assert found.policy_name == "secret-handling" and "props.data.HF_TOKEN is a credential-named field" in found.message


def test_unknown_inputs_are_tolerated():
    def unknowns(resources: list) -> None:
        dgd = named(resources, disaggregated(resources)).inputs
        component(dgd, "prefill")["podTemplate"]["spec"]["affinity"] = UNKNOWN
        main_container(component(dgd, "decode"))["resources"] = Unknown()
        main_container(component(dgd, "frontend"))["image"] = pulumi.Output.from_input("nvcr.io/x:latest")
        prewarm_daemon_sets(resources)[0].inputs["spec"]["template"] = {**SECRET_SIG, "value": UNKNOWN}
        named(resources, "model-cache-pvc").inputs["metadata"] = None

    assert [v for v in evaluate(mutate("prod", unknowns), stack="prod") if v.mandatory] == []


def test_report_reads_like_the_engines_policy_section():
    report = format_report(image_findings(None))
    lines = report.splitlines()
    assert lines[0] == "Policy Violations:"
    assert lines[1] == (
        f"    [mandatory]  {PACK_NAME} v{PACK_VERSION}  image-pinning ({DGD}::{aggregated(recording('dev'))})"
    )
    assert lines[2].startswith("    urn:pulumi:dev::nemotron-lightning::")
    assert lines[3] == f"    {POLICY['image-pinning'].description}"
    assert lines[4].startswith("    container main of component Frontend: image ")
    assert lines[-1] == "1 mandatory, 0 advisory policy violation(s)"
    assert format_report([]) == "Policy Violations: none\n"
