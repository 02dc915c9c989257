"""fabric-requests: disaggregated workers request the fabric of their nodes (request = limit), use the NIXL
backend of that fabric, run on nodes that state an out-of-band fabric when they request none, and prefill and
decode share speculative-decoding settings. Fixtures are the upstream recipes of the catalog."""

from __future__ import annotations

import json

import pulumi
import pytest
from catalog_picks import pick, picks, upstream_fabric
from policy_helpers import DGD, NODE_GROUP, check_stack, component, env_value, main_container, recipe, resource
from pulumi.output import Unknown
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE

pytestmark = pytest.mark.catalog_driven
POOL_LABEL = "nemotron.nvidia.com/pool"
OUT_OF_BAND = "nemotron.nvidia.com/fabric-out-of-band"
EFA_DISAGG = pick(disaggregated=True, fabric="efa")
IB_DISAGG = pick(disaggregated=True, fabric="ib")
FABRICLESS_DISAGG = pick(disaggregated=True, fabric="none")  # upstream GB200: "cluster-specific"


def _decode_args(r) -> list[str]:
    return next(c for c in r.components if c["type"] == "decode")["podTemplate"]["spec"]["containers"][0]["args"]


# A disaggregated vLLM target whose workers read --speculative-config from the ConfigMap and set --mamba-cache-mode.
SPECULATIVE_DISAGG = next(
    iter(r for r in picks(disaggregated=True, backend="vllm", drafts=True) if "--mamba-cache-mode" in _decode_args(r)),
    IB_DISAGG,
)
PREFILL, DECODE = (component(EFA_DISAGG.dgd, role)["name"] for role in ("prefill", "decode"))
EFA_PER_WORKER = int(
    main_container(component(EFA_DISAGG.dgd, "decode"))["resources"]["limits"]["vpc.amazonaws.com/efa"]
)


def node_group(pool: str, fabric: str, efa_per_gpu: str | None = None, out_of_band: str | None = None) -> object:
    labels = {POOL_LABEL: pool, "nemotron.nvidia.com/fabric": fabric}
    if efa_per_gpu is not None:
        labels["nemotron.nvidia.com/efa-per-gpu"] = efa_per_gpu
    if out_of_band is not None:
        labels[OUT_OF_BAND] = out_of_band
    return resource(NODE_GROUP, {"clusterName": "c", "labels": labels}, name=f"{pool}-nodes")


def pinned(dgd: dict, pool: str, key: str = POOL_LABEL, operator: str = "In") -> dict:
    for kind in ("prefill", "decode"):
        spec = component(dgd, kind)["podTemplate"]["spec"]
        for term in spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]:
            term["matchExpressions"].append(
                {"key": key, "operator": operator, "values": [pool] if operator == "In" else []}
            )
    return dgd


def problems(dgd: dict, *others: object) -> list[str]:
    return [message for message, _ in check_stack("fabric-requests", [resource(DGD, dgd, name="target"), *others])]


def set_kv_transfer(container: dict, config: dict) -> None:
    args = container["args"]
    args[args.index("--kv-transfer-config") + 1] = json.dumps(config)


@pytest.mark.parametrize("target", [r.id for r in picks(disaggregated=True) if upstream_fabric(r) != "none"])
def test_upstream_efa_and_infiniband_recipes_pass_on_an_existing_cluster(target):
    assert problems(recipe(target)[1]) == []


def test_agg_targets_are_not_checked():
    assert problems(recipe(pick(disaggregated=False).id)[1]) == []


def test_worker_on_an_efa_pool_requests_efa_per_gpu_times_its_gpus():
    dgd = pinned(recipe(EFA_DISAGG.id)[1], "h100")
    gpus = EFA_DISAGG.gpus_per_replica(component(EFA_DISAGG.dgd, "decode"))
    assert problems(dgd, node_group("h100", "efa", str(EFA_PER_WORKER // gpus))) == []
    other = EFA_PER_WORKER // gpus + 1
    found = problems(dgd, node_group("h100", "efa", str(other)))
    needed = f"vpc.amazonaws.com/efa={EFA_PER_WORKER}, needs {other * gpus} ({other} per GPU x {gpus} nvidia.com/gpu)"
    assert len(found) == 2 and all(needed in m for m in found)


def test_efa_pool_needs_the_libfabric_backend():
    dgd = pinned(recipe(EFA_DISAGG.id)[1], "h100")
    set_kv_transfer(
        main_container(component(dgd, "decode")), {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}
    )
    (found,) = problems(dgd, node_group("h100", "efa", str(EFA_PER_WORKER)))
    assert found.startswith(f"component {DECODE}: KV transfer uses NIXL backends ['UCX'] but its fabric is EFA")


def test_efa_pool_without_efa_per_gpu_label_is_reported():
    dgd = pinned(recipe(EFA_DISAGG.id)[1], "h100")
    assert all("no nemotron.nvidia.com/efa-per-gpu label" in m for m in problems(dgd, node_group("h100", "efa")))


def test_infiniband_pool_accepts_ucx_workers_and_rejects_efa_ones():
    assert problems(pinned(recipe(IB_DISAGG.id)[1], "h200"), node_group("h200", "ib")) == []
    found = problems(pinned(recipe(EFA_DISAGG.id)[1], "h200"), node_group("h200", "ib"))
    prefill = [m for m in found if m.startswith(f"component {PREFILL}")]
    assert len(prefill) == 3
    assert "requests vpc.amazonaws.com/efa, which its nodes do not have" in prefill[0]
    assert "requests rdma/ib=0, needs at least 1" in prefill[1]
    assert "backends ['LIBFABRIC'] but its fabric is InfiniBand" in prefill[2]


def test_pool_without_fabric_needs_the_out_of_band_annotation():
    dgd = pinned(recipe(IB_DISAGG.id)[1], "plain")
    found = problems(dgd, node_group("plain", "none"))
    assert any("requests rdma/ib, which its nodes do not have" in m for m in found)
    assert any("its nodes have no RDMA fabric" in m for m in found)


def test_fabric_request_must_equal_its_limit():
    _, dgd = recipe(IB_DISAGG.id)
    main_container(component(dgd, "decode"))["resources"]["limits"]["rdma/ib"] = "2"
    assert problems(dgd) == [
        f"component {component(dgd, 'decode')['name']}: requests rdma/ib=1 but limits rdma/ib=2; set request = limit"
    ]


def test_worker_without_fabric_needs_nodes_that_state_it_out_of_band():
    _, dgd = recipe(FABRICLESS_DISAGG.id)
    found = problems(dgd)
    assert [m.split(":")[0] for m in found] == [
        f"component {component(dgd, role)['name']}" for role in ("prefill", "decode")
    ]
    assert all(OUT_OF_BAND in m for m in found)
    assert problems(pinned(dgd, "gb200-mnnvl", key=OUT_OF_BAND)) == []


def test_any_out_of_band_node_satisfies_a_worker_that_requires_the_label_to_exist():
    assert problems(pinned(recipe(FABRICLESS_DISAGG.id)[1], "", key=OUT_OF_BAND, operator="Exists")) == []


def test_the_workload_cannot_exempt_itself():
    """An annotation or label the DGD sets on itself, or an affinity that merely prefers such nodes, is not a
    statement by the cluster."""
    _, dgd = recipe(FABRICLESS_DISAGG.id)
    dgd["metadata"]["annotations"] = {OUT_OF_BAND: "gb200-nvlink"}
    dgd["metadata"]["labels"][OUT_OF_BAND] = "gb200-nvlink"
    for kind in ("prefill", "decode"):
        spec = component(dgd, kind)["podTemplate"]["spec"]
        spec.setdefault("metadata", {})
        spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": 100,
                "preference": {
                    "matchExpressions": [{"key": OUT_OF_BAND, "operator": "In", "values": ["gb200-nvlink"]}]
                },
            }
        ]
    assert len(problems(dgd)) == 2


def test_a_pool_whose_node_group_states_an_out_of_band_fabric_passes():
    dgd = pinned(recipe(FABRICLESS_DISAGG.id)[1], "gb200")
    assert len(problems(dgd, node_group("gb200", "none"))) == 2
    assert problems(dgd, node_group("gb200", "none", out_of_band="gb200-mnnvl")) == []


def test_unpinned_worker_backend_must_match_its_requested_fabric():
    _, dgd = recipe(IB_DISAGG.id)
    set_kv_transfer(
        main_container(component(dgd, "prefill")),
        {
            "kv_connector": "NixlConnector",
            "kv_role": "kv_producer",
            "kv_connector_extra_config": {"backends": ["LIBFABRIC"]},
        },
    )
    (found,) = problems(dgd)
    assert "backends ['LIBFABRIC'] but its fabric is InfiniBand" in found


def test_prefill_and_decode_share_the_speculative_config_source():
    _, dgd = recipe(SPECULATIVE_DISAGG.id)
    env_value(main_container(component(dgd, "decode")), "SPECULATIVE_CONFIG")["valueFrom"]["configMapKeyRef"]["key"] = (
        "speculative-config-synthetic"
    )
    (found,) = problems(dgd)
    config_map = SPECULATIVE_DISAGG.config_map["metadata"]["name"]
    prefill, decode = (component(dgd, role)["name"] for role in ("prefill", "decode"))
    assert found == (
        f"component {prefill} and component {decode} differ in --speculative-config "
        f"(<ConfigMap {config_map} key speculative-config (not in this stack)> vs <ConfigMap "
        f"{config_map} key speculative-config-synthetic (not in this stack)>); prefill and "
        "decode must use identical speculative-decoding settings"
    )


def test_speculative_configs_are_compared_by_content_when_the_config_map_is_in_the_stack():
    config_map, dgd = recipe(SPECULATIVE_DISAGG.id)
    with_config_map = resource("kubernetes:core/v1:ConfigMap", config_map, name="config")
    env_value(main_container(component(dgd, "decode")), "SPECULATIVE_CONFIG")["valueFrom"]["configMapKeyRef"]["key"] = (
        "speculative-config-synthetic"
    )
    (found,) = problems(dgd, with_config_map)
    assert "differ in --speculative-config" in found and "synthetic" in found
    config_map["data"]["speculative-config-synthetic"] = config_map["data"]["speculative-config"]
    assert problems(dgd, resource("kubernetes:core/v1:ConfigMap", config_map, name="config")) == []


def test_prefill_and_decode_share_speculative_flags():
    _, dgd = recipe(SPECULATIVE_DISAGG.id)
    args = main_container(component(dgd, "decode"))["args"]
    upstream = args[args.index("--mamba-cache-mode") + 1]
    args[args.index("--mamba-cache-mode") + 1] = "all" if upstream != "all" else "align"
    (found,) = problems(dgd)
    assert f"differ in --mamba-cache-mode ({upstream} vs {args[args.index('--mamba-cache-mode') + 1]})" in found


def test_literal_speculative_config_matches_by_content():
    _, dgd = recipe(IB_DISAGG.id)
    for kind, text in (
        ("prefill", '{"method": "mtp", "num_speculative_tokens": 5}'),
        ("decode", '{"num_speculative_tokens": 5, "method": "mtp"}'),
    ):
        entry = env_value(main_container(component(dgd, kind)), "SPECULATIVE_CONFIG")
        entry.clear()
        entry.update(name="SPECULATIVE_CONFIG", value=text)
    assert problems(dgd) == []


def test_unknown_values_at_preview_are_tolerated():
    dgd = pinned(recipe(EFA_DISAGG.id)[1], "h100")
    prefill, decode = main_container(component(dgd, "prefill")), main_container(component(dgd, "decode"))
    prefill["args"][prefill["args"].index("--kv-transfer-config") + 1] = UNKNOWN_STRING_VALUE
    prefill["resources"] = UNKNOWN_OBJECT_VALUE
    decode["args"] = Unknown()
    component(dgd, "decode")["podTemplate"]["spec"]["affinity"] = pulumi.Output.from_input({})
    assert problems(dgd, node_group("h100", UNKNOWN_STRING_VALUE)) == []
    assert problems({"metadata": None, "spec": {"components": UNKNOWN_OBJECT_VALUE}}) == []
    assert problems({"spec": {"components": [None, {"type": "prefill", "podTemplate": None}]}}) == []
