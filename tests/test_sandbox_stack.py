"""The committed `sandbox` stack (Pulumi.sandbox.yaml), judged from its render: it creates its own cluster,
has exactly one GPU node group of one single-GPU node, serves one target on one GPU through the gateway,
states its $/h in summary.md; and the program outside the render (`pulumi up`) refuses each value a user
must set, naming its key, before any resource."""

from __future__ import annotations

import json

import pytest
from plan_helpers import FACTS
from sandbox_helpers import STACK, rendered_outputs, sandbox_run
from stack_helpers import stack_file_config

from serving_stack.config import ConfigError
from serving_stack.config.gateway import MASTER_KEY_SECRET
from serving_stack.names import GPU_RESOURCE, TypeTokens
from tools import render
from tools.mock_runtime import SECRET, RecordedResource, run_program
from tools.secret_placeholders import stack_inputs

CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
DGD = "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment"


def gpus_per_node(group: RecordedResource) -> int:
    """From the instance facts; 0 for a type they do not list (the system nodes' CPU types)."""
    (gpus,) = {
        FACTS.aws.instance_types[t].gpus if t in FACTS.aws.instance_types else 0 for t in group.inputs["instanceTypes"]
    }
    return gpus


def dgd_gpus(dgd: RecordedResource) -> int:
    return sum(
        component.get("replicas", 1)
        * sum(
            int(c.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0))
            for c in component["podTemplate"]["spec"]["containers"]
        )
        for component in dgd.inputs["spec"]["components"]
    )


def test_it_creates_its_own_cluster():
    run = sandbox_run()
    (cluster,) = run.of_type(CLUSTER)
    outputs = rendered_outputs(run)
    assert outputs["cluster"]["name"] == cluster.inputs["name"]
    assert outputs["kubeconfig"] == SECRET


def test_exactly_one_gpu_node_group_of_one_single_gpu_node():
    run = sandbox_run()
    (gpu_group,) = [group for group in run.of_type(NODE_GROUP) if gpus_per_node(group) > 0]
    assert gpus_per_node(gpu_group) == 1
    scaling = gpu_group.inputs["scalingConfig"]
    assert (scaling["minSize"], scaling["desiredSize"]) == (1, 1) and scaling["maxSize"] <= 2
    assert gpu_group.inputs["capacityType"] == "ON_DEMAND"
    (pool,) = rendered_outputs(run)["nodePools"]
    assert (pool["minSize"], pool["desiredSize"], pool["maxSize"]) == (
        scaling["minSize"],
        scaling["desiredSize"],
        scaling["maxSize"],
    ), "the outputs' sizes are the node group's, as numbers"
    assert pool["gpusPerNode"] == gpus_per_node(gpu_group)


def test_one_target_on_one_gpu_behind_the_gateway():
    run = sandbox_run()
    (dgd,) = run.of_type(DGD)
    assert dgd_gpus(dgd) == 1
    outputs = rendered_outputs(run)
    (endpoint,) = outputs["endpoints"]
    assert (endpoint["kind"], endpoint["gpus"]) == ("dynamo", dgd_gpus(dgd))
    assert [r for r in run.resources if r.parent.startswith(f"{TypeTokens.GATEWAY}::")], "no gateway objects"
    assert [m["servedModelName"] for m in outputs["gateway"]["models"]] == [endpoint["servedModelName"]]
    assert outputs["gatewayApiKey"] == SECRET


def test_no_monitoring_stack_and_no_sagemaker():
    run = sandbox_run()
    assert not run.of_type(TypeTokens.MONITORING) and not run.of_type(TypeTokens.SAGEMAKER_ENDPOINT)


def test_make_render_exits_0_and_states_the_stack_cost_per_hour(tmp_path, capsys):
    code = render.main(["--stack", STACK, "--out", str(tmp_path), "--secret-placeholders"])  # as `make render`
    assert code == 0
    (pool,) = json.loads((tmp_path / STACK / "outputs.json").read_text())["nodePools"]
    assert pool["usdPerHour"] is not None
    cost = f"Stack cost: ${pool['usdPerHour']:,.2f}/h on demand"
    assert cost in capsys.readouterr().out
    assert f"**{cost}" in (tmp_path / STACK / "summary.md").read_text()


def test_pulumi_up_refuses_each_placeholder_naming_its_key():
    create = stack_file_config(STACK)["aws"]["cluster"]["create"]
    must_set = {
        f"aws.cluster.create.endpointPublicAccessCidrs[{i}]" for i in range(len(create["endpointPublicAccessCidrs"]))
    }
    must_set |= {f"aws.cluster.create.accessEntries[{i}].principalArn" for i in range(len(create["accessEntries"]))}
    assert {p.key for p in sandbox_run().plan.placeholders} == must_set, "exactly what a user must set"
    inputs = stack_inputs(STACK, placeholders=True)
    with pytest.raises(ConfigError) as refused:
        run_program(inputs.config, inputs.secret_keys, stack=STACK, allow_placeholders=False)
    assert run_program.last_monitor.recorded == []
    message = str(refused.value)
    assert "\n" not in message
    for key in must_set:
        assert f"{key}: " in message


def test_pulumi_up_refuses_a_missing_gateway_key_naming_it():
    inputs = stack_inputs(STACK, placeholders=False)
    assert not any(key.endswith(f":{MASTER_KEY_SECRET}") for key in inputs.secret_keys), "the file holds no secret"
    with pytest.raises(ConfigError, match=rf"^{MASTER_KEY_SECRET}: required"):
        run_program(inputs.config, inputs.secret_keys, stack=STACK, allow_placeholders=True)
    assert run_program.last_monitor.recorded == []
