"""Cost per 1M output tokens per Dynamo endpoint in the outputs (an optional contract field), computed by hand
from the instance facts and the catalog's published throughput; and prod with its demand's plan written in, rendered whole by
`tools.render` (exit 0: rollout and policy pack green) with the capacity sections in `summary.md`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from capacity_stacks import autoscaled_planned_targets
from plan_helpers import FACTS, plan_of
from rollout_helpers import committed_config
from stack_helpers import PROJECT

from serving_stack.contract.outputs import ServingEndpoint, StackOutputs
from tools import render
from tools.mock_runtime import PROJECT_DIR
from tools.write_outputs_schema import SCHEMA_FILE

STACK = "prod-planned"


def _by_hand(usd_per_node_hour: float, gpus_per_node: int, tokens_per_second_per_gpu: float) -> float:
    """A node's price over what its GPUs produce in an hour, per million tokens."""
    return round(usd_per_node_hour / (gpus_per_node * tokens_per_second_per_gpu * 3600) * 1e6, 4)


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_each_dynamo_endpoint_costs_what_its_nodes_cost_per_token(stack: str) -> None:
    plan = plan_of(committed_config(stack))
    assert plan.serving.targets
    for target in plan.serving.targets:
        per_gpu = target.selected.recipe.entry.performance.outputTokensPerSecondPerGpu
        if target.pool is not None:  # its pool's instance type, bought on demand
            instance = FACTS.aws.instance_types[target.pool.instance_type or ""]
            assert target.pool.capacity_type == "on-demand"
            expected = _by_hand(instance.onDemandUsdPerHour, instance.gpus, per_gpu)
        else:  # no pool known: the cheapest on-demand instance type of its GPU
            gpu = FACTS.aws.gpu_of_product(target.selected.recipe.gpu_products[0])
            expected = min(
                _by_hand(i.onDemandUsdPerHour, i.gpus, per_gpu)
                for i in FACTS.aws.instance_types.values()
                if i.gpu == gpu and i.onDemandUsdPerHour is not None
            )
        assert target.endpoint.usdPerMillionOutputTokens == pytest.approx(expected, abs=1e-4), target.selected.id
    assert all(e.usdPerMillionOutputTokens is None for e in plan.endpoints if e.kind == "sagemaker")


def test_the_field_is_optional_so_older_outputs_stay_valid() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    assert "usdPerMillionOutputTokens" in schema["$defs"]["ServingEndpoint"]["properties"]
    assert "usdPerMillionOutputTokens" not in schema["$defs"]["ServingEndpoint"]["required"]
    older = {"id": "x", "kind": "dynamo", "servedModelName": "m", "url": "http://x/v1", "gpus": 1}
    assert ServingEndpoint.model_validate(older).usdPerMillionOutputTokens is None


@pytest.fixture(scope="module")
def planned_render(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    tmp = tmp_path_factory.mktemp("planned-render")
    project = tmp / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (project / name).symlink_to(PROJECT_DIR / name)
    stack_file = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    config = committed_config("prod")
    autoscaled_planned_targets(config)
    others = {k: v for k, v in stack_file["config"].items() if not k.startswith(f"{PROJECT}:")}
    stack_file["config"] = {**others, **{f"{PROJECT}:{k}": v for k, v in config.items()}}
    (project / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(stack_file))
    code = render.main(
        ["--stack", STACK, "--project-dir", str(project), "--out", str(tmp / "build"), "--secret-placeholders"]
    )  # as `make render` runs it: prod's gateway needs its key
    return code, tmp / "build" / STACK


def test_prod_with_its_plan_written_in_renders_with_rollout_and_policies_green(
    planned_render: tuple[int, Path],
) -> None:
    code, out = planned_render
    assert code == 0, (out / "policy-report.txt").read_text() if out.exists() else "nothing rendered"
    assert "0 mandatory" in (out / "policy-report.txt").read_text()
    outputs = StackOutputs.model_validate_json((out / "outputs.json").read_text())
    assert all(e.usdPerMillionOutputTokens for e in outputs.endpoints if e.kind == "dynamo")


def test_the_summary_shows_costs_node_readiness_and_scaling(planned_render: tuple[int, Path]) -> None:
    _, out = planned_render
    summary = (out / "summary.md").read_text()
    config = committed_config("prod")
    autoscaled_planned_targets(config)
    plan = plan_of(config)
    for cost in plan.capacity.token_costs:
        assert f"| `{cost.target_id}` | {cost.runs_on} | **${cost.usd_per_million:.3f}** |" in summary
    for pool in plan.pools:
        assert f"| `{pool.name}` |" in summary  # the new-node rows of the cold-start section
    assert plan.capacity.serving_scaling is not None
    for obj in plan.capacity.serving_scaling.scaled_objects:
        assert (
            f"| `{obj['metadata']['name']}` | {obj['spec']['minReplicaCount']}..{obj['spec']['maxReplicaCount']} |"
            in summary
        )
