"""`make plan`: the committed stacks' `demand:` blocks plan, and the config a plan implies (the
`targets:` list and `aws.nodePools`) is a stack the program renders, with the planned replicas."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml
from capacity_demands import CATALOG, CRITERIA, OFFERS, ROWS
from stack_helpers import DGD_TYPE, PROJECT, run_config

from serving_stack.errors import ConfigError
from serving_stack.names import POOL_LABEL
from tools.mock_runtime import PROJECT_DIR
from tools.plan_capacity.cli import main, read_stack
from tools.plan_capacity.explain import plan_capacity
from tools.plan_capacity.model import demand_of
from tools.plan_capacity.stack_file import plan_to_stack_config, pool_name

STACKS = {
    p.name[len("Pulumi.") : -len(".yaml")]: f"{PROJECT}:demand" in (yaml.safe_load(p.read_text()).get("config") or {})
    for p in sorted(PROJECT_DIR.glob("Pulumi.*.yaml"))
}
STACKS_WITH_DEMAND = [stack for stack, has_demand in STACKS.items() if has_demand]


@pytest.mark.parametrize("stack", STACKS_WITH_DEMAND)
def test_make_plan_prints_the_cheapest_plan(stack: str) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["--stack", stack])
    result = plan_capacity(demand_of(read_stack(stack).demand, CRITERIA), ROWS, OFFERS)
    assert status == 0 and result.plan is not None
    text = printed.getvalue()
    assert f"**${result.plan.usd_per_hour:,.2f}/h**" in text
    assert all(f"`{t}`" in text for t in result.plan.target_ids)
    assert "## Runner-ups" in text and "targets:" in text


def test_prod_committed_with_a_demand_block() -> None:
    assert "prod" in STACKS_WITH_DEMAND


def test_the_config_a_plan_implies_renders_with_the_planned_replicas() -> None:
    raw = {
        key.split(":", 1)[1]: value
        for key, value in yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())["config"].items()
        if key.startswith(f"{PROJECT}:")
    }
    result = plan_capacity(demand_of(read_stack("prod").demand, CRITERIA), ROWS, OFFERS)
    assert result.plan is not None
    zone = raw["aws"]["nodePools"][0]["availabilityZone"]
    implied = plan_to_stack_config(
        result.plan, {r.target_id: r for r in ROWS}, availability_zone=zone, extra_max_nodes=1
    )
    raw["targets"], raw["aws"]["nodePools"] = implied["targets"], implied["nodePools"]
    run = run_config(raw, stack="prod")
    dgds = {r.inputs["metadata"]["name"]: r.inputs for r in run.of_type(DGD_TYPE)}
    assert len(dgds) == len(result.plan.placements)
    for placement in result.plan.placements:
        dgd = dgds[CATALOG.recipe(placement.target_id).name]
        row = next(r for r in ROWS if r.target_id == placement.target_id)
        replicas = {c["name"]: c["replicas"] for c in dgd["spec"]["components"] if c["name"] in row.worker_replicas}
        assert replicas == {name: n * placement.replica_sets for name, n in row.worker_replicas.items()}
    sizes = {
        g.inputs["labels"][POOL_LABEL]: g.inputs["scalingConfig"]["desiredSize"]
        for g in run.of_type("aws:eks/nodeGroup:NodeGroup")
        if POOL_LABEL in g.inputs.get("labels", {})
    }
    assert sizes == {pool_name(u.pool): u.nodes for u in result.plan.pools}


def test_a_bad_or_missing_demand_block_names_the_key(tmp_path) -> None:
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    prod = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    del prod["config"][f"{PROJECT}:demand"]
    (tmp_path / "Pulumi.none.yaml").write_text(yaml.safe_dump(prod))
    prod["config"][f"{PROJECT}:demand"] = {"requestsPerSecond": 3}
    (tmp_path / "Pulumi.bad.yaml").write_text(yaml.safe_dump(prod))
    for stack, expected in (("none", "has no"), ("bad", "tokenShape")):
        with pytest.raises(ConfigError, match=expected):
            read_stack(stack, root=tmp_path)


@pytest.mark.parametrize("stack", [stack for stack, has_demand in STACKS.items() if not has_demand])
def test_make_plan_on_a_stack_without_demand_names_demand_first(stack: str, capsys) -> None:
    """Planning needs the demand (docs/capacity.md): exit 2 and one line naming it, before any other block's
    check (sandbox's gateway, say, has no backend once the plan drops its targets)."""
    assert main(["--stack", stack]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: demand: Pulumi.{stack}.yaml has no `demand:` block, ")


def test_a_solver_failure_is_one_line_naming_demand(monkeypatch, capsys) -> None:
    """HiGHS reports a model it cannot take with a bare Exception: `make plan` turns it into exit 2 and one
    line naming the key, never a traceback."""

    def refuse(*_args, **_kwargs):
        raise Exception("Error adding constraint to the model.")

    monkeypatch.setattr("tools.plan_capacity.cli.plan_capacity", refuse)
    assert main(["--stack", STACKS_WITH_DEMAND[0]]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: demand: the capacity solver cannot plan this demand: Error adding constraint")
