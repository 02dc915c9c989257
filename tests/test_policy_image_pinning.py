"""image-pinning: every image (DGD and workload containers, Helm repository/tag pairs, SageMaker models) has a
version tag or a digest and comes from an allowed registry (pack config `allowedRegistries`)."""

from __future__ import annotations

import pytest
from catalog_picks import pick
from policy_helpers import DGD, JOB, check_resource, component, main_container, recipe
from pulumi.output import Unknown
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE

from policy.nemotron_policies.rules.images import parse_image
from serving_stack.facts.catalog import load_catalog

pytestmark = pytest.mark.catalog_driven

HELM = "kubernetes:helm.sh/v3:Release"
SAGEMAKER_MODEL = "aws:sagemaker/model:Model"
DIGEST = "sha256:" + "a" * 64
DLC = (
    "763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-pytorch-tgi-inference:"
    "2.4.0-tgi2.3.1-gpu-py311-cu124-ubuntu22.04"
)


def job(image: object, init_image: object = None) -> dict:
    spec = {"containers": [{"name": "app", "image": image}]}
    if init_image is not None:
        spec["initContainers"] = [{"name": "init", "image": init_image}]
    return {"spec": {"template": {"spec": spec}}}


@pytest.mark.parametrize(
    ("reference", "parsed"),
    [
        ("python:3.12-slim", ("docker.io", "library/python", "3.12-slim", None)),
        ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0", ("nvcr.io", "nvidia/ai-dynamo/vllm-runtime", "1.5.0", None)),
        ("bitnami/etcd:3.5.9", ("docker.io", "bitnami/etcd", "3.5.9", None)),
        ("localhost:5000/tool:1.0.0", ("localhost:5000", "tool", "1.0.0", None)),
        (f"ghcr.io/a/b@{DIGEST}", ("ghcr.io", "a/b", None, DIGEST)),
    ],
)
def test_image_references_are_normalized(reference, parsed):
    assert parse_image(reference) == parsed


@pytest.mark.parametrize(
    "image",
    [
        "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0-nemotron-3.5-lightning-dev.1",
        "docker.io/library/python:3.12-slim",
        "docker.io/library/python:3.12.8-slim",
        "public.ecr.aws/eks/aws-efa-k8s-device-plugin:v0.5.6",
        "registry.k8s.io/pause:3.9",
        f"ghcr.io/ai-dynamo/grove@{DIGEST}",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/nemotron/prewarm:1.0.0",
        DLC,
    ],
)
def test_pinned_images_from_allowed_registries_pass(image):
    assert check_resource("image-pinning", JOB, job(image)) == []


@pytest.mark.parametrize(
    ("image", "problem"),
    [
        (
            "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest",
            "has tag 'latest', not a version (MAJOR.MINOR...) or a digest",
        ),
        ("nvcr.io/nvidia/ai-dynamo/vllm-runtime", "has no tag or digest"),
        ("python:3", "has tag '3', not a version"),
        ("registry.k8s.io/pause:main", "has tag 'main', not a version"),
        ("nvcr.io/nvidia/x@sha256:abc", "has a malformed digest 'sha256:abc'"),
        (
            "quay.io/prometheus/node-exporter:v1.8.2",
            "is not from an allowed registry (quay.io/prometheus/node-exporter",
        ),
        ("bitnami/etcd:3.5.9", "is not from an allowed registry (docker.io/bitnami/etcd"),
        (
            "python:3.12-slim",
            "names no registry (a short name resolves through the node's search registries; "
            "write docker.io/library/python)",
        ),
    ],
)
def test_floating_or_foreign_images_are_reported(image, problem):
    (found,) = check_resource("image-pinning", JOB, job(image))
    assert found.startswith(f"container app of pod template: image {image!r} ") and problem in found


def test_a_bare_name_in_an_init_container_is_reported():
    (found,) = check_resource("image-pinning", JOB, job("docker.io/library/python:3.12-slim", init_image="busybox"))
    assert found.startswith("container init of pod template: image 'busybox' names no registry")
    assert "has no tag or digest" in found


def test_upstream_dgd_passes_and_a_latest_worker_image_is_reported():
    for target in load_catalog().recipes.values():
        assert check_resource("image-pinning", DGD, recipe(target.id)[1]) == [], target.id
    _, dgd = recipe(pick(disaggregated=True).id)
    main_container(component(dgd, "decode"))["image"] = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:latest"
    (found,) = check_resource("image-pinning", DGD, dgd)
    assert found.startswith(f"container main of component {component(dgd, 'decode')['name']}: image ")


def test_helm_repository_tag_pairs_are_checked():
    values = {
        "dynamo-operator": {
            "controllerManager": {
                "manager": {"image": {"repository": "nvcr.io/nvidia/ai-dynamo/kubernetes-operator", "tag": "1.4.0"}}
            }
        },
        "etcd": {"image": {"registry": "docker.io", "repository": "bitnamilegacy/etcd", "tag": "latest"}},
        "nats": {"image": {"repository": "nats"}},
    }
    etcd, nats = check_resource("image-pinning", HELM, {"chart": "x", "values": values})
    assert etcd.startswith("values.etcd.image: image 'docker.io/bitnamilegacy/etcd:latest' has tag 'latest'")
    assert "is not from an allowed registry" in etcd
    assert nats.startswith("values.nats.image: image 'nats' names no registry") and "has no tag or digest" in nats


def test_sagemaker_model_images_are_checked():
    assert check_resource("image-pinning", SAGEMAKER_MODEL, {"primaryContainer": {"image": DLC}}) == []
    found = check_resource(
        "image-pinning", SAGEMAKER_MODEL, {"containers": [{"image": "ghcr.io/huggingface/tgi:latest"}]}
    )
    assert found == [
        "containers[0]: image 'ghcr.io/huggingface/tgi:latest' has tag 'latest', not a version "
        "(MAJOR.MINOR...) or a digest"
    ]


def test_allowed_registries_come_from_the_pack_config():
    config = {"allowedRegistries": ["quay.io/prometheus"]}
    assert check_resource("image-pinning", JOB, job("quay.io/prometheus/node-exporter:v1.8.2"), config) == []
    (found,) = check_resource("image-pinning", JOB, job("docker.io/library/python:3.12-slim"), config)
    assert "matches none of quay.io/prometheus" in found


def test_unknown_values_at_preview_are_tolerated():
    assert check_resource("image-pinning", JOB, job(UNKNOWN_STRING_VALUE, init_image=Unknown())) == []
    assert (
        check_resource("image-pinning", JOB, {"spec": {"template": {"spec": {"containers": UNKNOWN_ARRAY_VALUE}}}})
        == []
    )
    assert (
        check_resource("image-pinning", HELM, {"values": {"image": {"repository": UNKNOWN_STRING_VALUE, "tag": "1"}}})
        == []
    )
    assert check_resource("image-pinning", SAGEMAKER_MODEL, {"primaryContainer": None, "containers": [None]}) == []
    assert check_resource("image-pinning", DGD, {"spec": {"components": [{"podTemplate": {"spec": None}}]}}) == []


@pytest.mark.parametrize(
    ("values", "where", "problem"),
    [
        ({"image": "nvcr.io/nvidia/ai-dynamo/kubernetes-operator"}, "values.image", "has no tag or digest"),
        ({"operator": {"sidecarImage": "busybox:1.36"}}, "values.operator.sidecarImage", "names no registry"),
        (
            {"etcd": {"image": {"repository": "bitnamilegacy/etcd", "tag": "3.5.21"}}},
            "values.etcd.image",
            "names no registry",
        ),
        (
            {"nats": {"image": {"registry": "nvcr.io", "repository": "nvidia/nats"}}},
            "values.nats.image",
            "has no tag or digest",
        ),
        (
            {"global": {"imageRegistry": "quay.io"}, "a": {"image": {"repository": "x/y", "tag": "1.0.0"}}},
            "values.a.image",
            "is not from an allowed registry (quay.io/x/y",
        ),
        ({"a": {"image": {"name": "nvcr.io/nvidia/a", "tag": 1.5}}}, None, None),
        ({"a": {"image": {"registry": "nvcr.io", "repository": "nvidia/a", "digest": DIGEST}}}, None, None),
        ({"chart": {"repository": "https://helm.ngc.nvidia.com/nvidia"}}, None, None),
    ],
)
def test_helm_images_in_string_and_mapping_form(values, where, problem):
    found = check_resource("image-pinning", HELM, {"values": values})
    if where is None:
        assert found == []
    else:
        (message,) = found
        assert message.startswith(f"{where}: image ") and problem in message


def test_image_volumes_and_helm_v4_charts_are_checked():
    pod = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "a", "image": "nvcr.io/a:1.0"}],
                    "volumes": [{"name": "w", "image": {"reference": "nvcr.io/w:latest"}}],
                }
            }
        }
    }
    (found,) = check_resource("image-pinning", JOB, pod)
    assert found.startswith("image volume w of pod template: image 'nvcr.io/w:latest' has tag 'latest'")
    assert check_resource("image-pinning", "kubernetes:helm.sh/v4:Chart", {"values": {"image": "nvcr.io/a"}}) != []
