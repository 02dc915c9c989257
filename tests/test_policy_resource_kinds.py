"""What a resource is decides how the pack reads it: type tokens of every group and version (patch and list
forms included), objects inlined in YAML components, Dynamo resources of every served shape, and pod specs
inside custom resources the pack has no reader for."""

from __future__ import annotations

import pytest
import yaml
from policy_helpers import check_resource, recipe

from policy.nemotron_policies.kinds import ancestor_types, helm_values, kubernetes_objects, kubernetes_type
from policy.nemotron_policies.pods import pod_specs

PRIVILEGED = {"name": "p", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1", "securityContext": {"privileged": True}}


@pytest.mark.parametrize(
    ("token", "parsed"),
    [
        ("kubernetes:core/v1:Pod", ("", "v1", "Pod")),
        ("kubernetes:apps/v1:Deployment", ("apps", "v1", "Deployment")),
        ("kubernetes:extensions/v1beta1:DaemonSet", ("extensions", "v1beta1", "DaemonSet")),
        ("kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment", ("nvidia.com", "v1alpha1", "DynamoGraphDeployment")),
        ("kubernetes:yaml:ConfigGroup", ("yaml", "", "ConfigGroup")),
        ("kubernetes:yaml/v2:ConfigFile", ("yaml", "v2", "ConfigFile")),
        ("kubernetes:helm.sh/v4:Chart", ("helm.sh", "v4", "Chart")),
        ("aws:iam/role:Role", None),
        ("nemotron:kubernetes:DevicePlugins", None),
    ],
)
def test_type_tokens_name_group_version_and_kind(token, parsed):
    assert kubernetes_type(token) == parsed


@pytest.mark.parametrize(
    ("token", "props"),
    [
        ("kubernetes:apps/v1:DeploymentPatch", {"spec": {"template": {"spec": {"containers": [PRIVILEGED]}}}}),
        (
            "kubernetes:apps/v1:DeploymentList",
            {"items": [{"spec": {"template": {"spec": {"containers": [PRIVILEGED]}}}}]},
        ),
        ("kubernetes:apps/v1beta2:StatefulSet", {"spec": {"template": {"spec": {"containers": [PRIVILEGED]}}}}),
        ("kubernetes:core/v1:ReplicationController", {"spec": {"template": {"spec": {"containers": [PRIVILEGED]}}}}),
        ("kubernetes:core/v1:PodTemplate", {"template": {"spec": {"containers": [PRIVILEGED]}}}),
        (
            "kubernetes:yaml:ConfigGroup",
            {
                "objs": [
                    {
                        "apiVersion": "v1",
                        "kind": "List",
                        "items": [
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "metadata": {"name": "x"},
                                "spec": {"containers": [PRIVILEGED]},
                            }
                        ],
                    }
                ]
            },
        ),
        (
            "kubernetes:yaml/v2:ConfigGroup",
            {
                "yaml": [
                    "---\n"
                    + yaml.safe_dump(
                        {
                            "apiVersion": "batch/v1",
                            "kind": "CronJob",
                            "metadata": {"name": "c"},
                            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [PRIVILEGED]}}}}},
                        }
                    )
                ]
            },
        ),
        (
            "kubernetes:grove.io/v1alpha1:PodCliqueSet",
            {"spec": {"template": {"cliques": [{"spec": {"podSpec": {"containers": [PRIVILEGED]}}}]}}},
        ),
    ],
)
def test_every_form_of_a_workload_is_read(token, props):
    found = check_resource("least-privilege", token, props)
    assert len(found) == 1
    assert found[0].endswith("is privileged")


def test_objects_inlined_in_yaml_components_are_read_as_the_objects_they_declare():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n---\napiVersion: apps/v1\nkind: Deployment\n"
    objects = kubernetes_objects(
        "kubernetes:yaml/v2:ConfigGroup", {"yaml": text, "objs": {"kind": "Secret", "apiVersion": "v1"}}
    )
    assert [(o.group, o.version, o.kind, o.where) for o in objects] == [
        ("", "v1", "Secret", "objs[0]"),
        ("", "v1", "ConfigMap", "yaml[0] document 0"),
        ("apps", "v1", "Deployment", "yaml[0] document 1"),
    ]
    assert kubernetes_objects("kubernetes:yaml/v2:ConfigGroup", {"yaml": "a: [unclosed"}) == []
    assert kubernetes_objects("kubernetes:helm.sh/v3:Release", {"values": {}}) == []
    assert helm_values("kubernetes:helm.sh/v4:Chart", {"values": {"a": 1}}) == {"a": 1}


def test_parent_components_come_from_the_urn():
    urn = "urn:pulumi:prod::p::nemotron:kubernetes:DevicePlugins$kubernetes:apps/v1:DaemonSet::d"
    assert ancestor_types(urn) == ["nemotron:kubernetes:DevicePlugins"]
    assert ancestor_types("urn:pulumi:prod::p::kubernetes:apps/v1:DaemonSet::d") == []


def v1alpha1_graph() -> dict:
    return {
        "spec": {
            "envs": [{"name": "SHARED", "value": "graph"}, {"name": "ONLY_GRAPH", "value": "g"}],
            "pvcs": [{"name": "shared-model-cache", "create": False}],
            "services": {
                "Decode": {
                    "componentType": "worker",
                    "subComponentType": "decode",
                    "envs": [{"name": "SHARED", "value": "service"}],
                    "envFromSecret": "hf-token",
                    "volumeMounts": [{"name": "shared-model-cache", "mountPoint": "/model-cache"}],
                    "resources": {
                        "requests": {"cpu": "8", "gpu": "1", "custom": {"rdma/ib": "1"}},
                        "limits": {"gpu": "1", "gpuType": "nvidia.com/gpu", "custom": {"rdma/ib": "1"}},
                    },
                    "extraPodSpec": {
                        "mainContainer": {"image": "nvcr.io/x:1.0", "env": [{"name": "OWN", "value": "o"}]},
                        "initContainers": [{"name": "init", "image": "nvcr.io/y:1.0"}],
                    },
                    "frontendSidecar": {"image": "nvcr.io/z:1.0", "envs": [{"name": "SIDE", "value": "s"}]},
                },
            },
        }
    }


def test_a_v1alpha1_service_becomes_the_pod_the_operator_makes():
    (pod,) = pod_specs("kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment", v1alpha1_graph())
    main, sidecar = pod.spec["containers"]
    assert (pod.owner, pod.component_type, main["name"], sidecar["name"]) == (
        "service Decode",
        "decode",
        "main",
        "frontend-sidecar",
    )
    assert {e["name"]: e["value"] for e in main["env"]} == {"SHARED": "service", "ONLY_GRAPH": "g", "OWN": "o"}
    assert main["resources"] == {
        "requests": {"cpu": "8", "nvidia.com/gpu": "1", "rdma/ib": "1"},
        "limits": {"nvidia.com/gpu": "1", "rdma/ib": "1"},
    }
    assert main["envFrom"] == [{"secretRef": {"name": "hf-token"}}]
    assert pod.spec["volumes"] == [
        {"name": "shared-model-cache", "persistentVolumeClaim": {"claimName": "shared-model-cache"}}
    ]
    assert pod.spec["initContainers"][0]["name"] == "init"


def test_a_dynamo_component_deployment_is_one_service():
    service = v1alpha1_graph()["spec"]["services"]["Decode"]
    service["resources"]["limits"]["gpu"] = "2"
    found = check_resource(
        "gpu-resources",
        "kubernetes:nvidia.com/v1alpha1:DynamoComponentDeployment",
        {"metadata": {"name": "decode"}, "spec": service},
    )
    assert (
        found[0]
        == "container main of service decode requests nvidia.com/gpu=1 but limits nvidia.com/gpu=2; set request = limit"
    )


def test_v1beta1_graph_env_reaches_every_main_container():
    _, dgd = recipe("vllm/agg-h100-mtp")
    dgd["spec"]["env"] = [{"name": "GRAPH_WIDE", "value": "1"}]
    pods = pod_specs("kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment", dgd)
    mains = [c for p in pods for c in p.spec["containers"] if c["name"] == "main"]
    assert mains
    assert all(any(e["name"] == "GRAPH_WIDE" for e in c["env"]) for c in mains)
