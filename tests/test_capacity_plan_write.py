"""`make plan STACK=<stack> WRITE=1` writes the capacity plan of the `demand:` block into the stack file: the
planned targets with their replica sets, pinned to planned pools sized for the autoscaling bounds, the file's
comments kept; the program then reads it like any written config. What cannot be planned or written exits 1
(nothing meets the demand: the binding constraint) or 2 (one line naming the key), and writes nothing. A stack
still holding `targets: auto` is refused with the command to run."""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from pathlib import Path

import pytest
import yaml
from capacity_demands import OFFERS, PRICED_DAY, ROWS
from capacity_stacks import autoscaled_planned_targets, plan_of_demand, scaling_bounds
from plan_helpers import FACTS, plan_of
from rollout_helpers import committed_config
from stack_helpers import PROJECT, assert_rejected_before_any_resource

from serving_stack.errors import MAX_LINE
from serving_stack.facts.dates import TODAY_ENV
from tools.mock_runtime import PROJECT_DIR
from tools.plan_capacity.cli import main
from tools.plan_capacity.stack_file import pool_name

ROW = {row.target_id: row for row in ROWS}


def _planned(stack: str) -> dict:
    config = committed_config(stack)
    autoscaled_planned_targets(config)
    return config


def _project(tmp_path: Path, stack: str, edit=None) -> Path:
    """A project dir holding a copy of `Pulumi.<stack>.yaml` as `Pulumi.case.yaml`, its project keys edited."""
    shutil.copyfile(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    text = (PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text()
    if edit is not None:
        document = yaml.safe_load(text)
        edit({k.removeprefix(f"{PROJECT}:"): v for k, v in document["config"].items()}, document["config"])
        text = yaml.safe_dump(document)
    (tmp_path / "Pulumi.case.yaml").write_text(text)
    return tmp_path


def _make_plan(project: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--stack", "case", "--project-dir", str(project), *extra])
    return code, out.getvalue(), err.getvalue()


def test_prod_written_deploys_the_plan_with_pools_sized_for_the_autoscaling_bounds() -> None:
    config = _planned("prod")
    expected, bounds = plan_of_demand(config), config["autoscaling"]["targets"]
    plan = plan_of(config)
    targets = {t.selected.id: t for t in plan.serving.targets}
    assert list(targets) == [p.target_id for p in expected.placements]
    for placement in expected.placements:
        target = targets[placement.target_id]
        workers = ROW[placement.target_id].worker_replicas
        assert {name: target.selected.replicas[name] for name in workers} == {
            name: n * placement.replica_sets for name, n in workers.items()
        }
        assert target.pool is not None
        assert target.pool.name == pool_name(placement.pool)
    pools = {p.name: p for p in plan.pools}
    assert set(pools) == {pool_name(u.pool) for u in expected.pools}
    zone = config["aws"]["cluster"]["create"]["availabilityZones"][0]
    for use in expected.pools:
        pool = pools[pool_name(use.pool)]
        on_pool = [p for p in expected.placements if p.pool == use.pool]
        gpus = {
            k: sum(ROW[p.target_id].gpus_per_replica_set * bounds[p.target_id][k] for p in on_pool)
            for k in ("minReplicaSets", "maxReplicaSets")
        }
        assert (pool.instance_type, pool.capacity_type, pool.availability_zone) == (
            use.pool.instance_type,
            use.pool.capacity_type,
            zone,
        )
        assert pool.desired_size == use.nodes
        assert pool.min_size == min(use.nodes, math.ceil(gpus["minReplicaSets"] / use.pool.gpus_per_node))
        assert pool.max_size == max(use.nodes, math.ceil(gpus["maxReplicaSets"] / use.pool.gpus_per_node))


def test_dev_on_an_existing_cluster_gets_the_targets_without_pools() -> None:
    config = _planned("dev")
    plan = plan_of(config)
    assert [t.selected.id for t in plan.serving.targets] == list(scaling_bounds(plan_of_demand(config)))
    assert plan.pools == ()
    assert all(t.pool is None for t in plan.serving.targets)
    downloaded = json.dumps(plan.serving.download_jobs)
    assert all(repo in downloaded for t in plan.serving.targets for repo in t.selected.recipe.checkpoints)


def test_write_replaces_targets_and_pools_and_keeps_every_comment(tmp_path: Path) -> None:
    project = _project(tmp_path, "prod")
    before = (project / "Pulumi.case.yaml").read_text()
    code, _, said = _make_plan(project, "--write")
    assert code == 0, said
    after = (project / "Pulumi.case.yaml").read_text()
    comments = [line.strip() for line in before.splitlines() if line.strip().startswith("#")]
    assert comments == [line.strip() for line in after.splitlines() if line.strip().startswith("#")]
    written = yaml.safe_load(after)["config"]
    config = committed_config("prod")
    plan = plan_of_demand(config)
    assert [t["id"] for t in written[f"{PROJECT}:targets"]] == [p.target_id for p in plan.placements]
    assert [p["name"] for p in written[f"{PROJECT}:aws"]["nodePools"]] == [pool_name(u.pool) for u in plan.pools]
    untouched = {k: v for k, v in written.items() if k not in (f"{PROJECT}:targets", f"{PROJECT}:aws")}
    assert untouched == {k: v for k, v in yaml.safe_load(before)["config"].items() if k in untouched}
    assert "wrote targets, aws.nodePools into Pulumi.case.yaml" in said
    assert _make_plan(project, "--write")[0] == 0
    assert (project / "Pulumi.case.yaml").read_text() == after  # planning the written file again changes nothing


def test_without_write_nothing_changes(tmp_path: Path) -> None:
    project = _project(tmp_path, "prod")
    before = (project / "Pulumi.case.yaml").read_text()
    assert _make_plan(project)[0] == 0
    assert (project / "Pulumi.case.yaml").read_text() == before


def _refused(tmp_path: Path, edit, code: int, expected: str) -> None:
    project = _project(tmp_path, "prod", edit)
    before = (project / "Pulumi.case.yaml").read_text()
    status, _, said = _make_plan(project, "--write")
    assert status == code, said
    (line,) = said.splitlines()
    assert expected in line and len(line) <= MAX_LINE + len("error: "), line
    assert (project / "Pulumi.case.yaml").read_text() == before


def test_a_stack_without_a_demand_names_demand(tmp_path: Path) -> None:
    _refused(tmp_path, lambda raw, config: config.pop(f"{PROJECT}:demand"), 2, "demand: Pulumi.case.yaml has no")


def test_a_demand_nothing_meets_names_the_binding_constraint(tmp_path: Path) -> None:
    cheapest_node = min(p for o in OFFERS for p in o.usd_per_hour.values() if p is not None)

    def edit(raw, config):
        config[f"{PROJECT}:demand"]["budgetUsdPerHour"] = cheapest_node / 2

    project = _project(tmp_path, "prod", edit)
    status, printed, _ = _make_plan(project, "--write")
    assert status == 1
    assert "**No plan.** no plan serves" in printed and "binding constraint the budget" in printed


def test_a_plan_on_capacity_blocks_is_refused_for_want_of_a_reservation(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(TODAY_ENV, PRICED_DAY.isoformat())  # a day the capacity-block prices are current
    priced = sorted({o.gpu for o in OFFERS if o.usd_per_hour.get("capacity-block") is not None})

    def edit(raw, config):
        config[f"{PROJECT}:demand"] = {"concurrentUsers": 10, "gpuTypes": priced, "capacityTypes": ["capacity-block"]}

    _refused(tmp_path, edit, 2, "demand.capacityTypes: the plan buys")


def test_a_zone_the_planned_instance_type_cannot_launch_in_names_the_demand_zone(tmp_path: Path) -> None:
    region = committed_config("prod")["aws"]["region"]
    local_zone = next(iter(FACTS.aws.regions.local_zones(region)))

    def edit(raw, config):
        config[f"{PROJECT}:demand"]["availabilityZone"] = local_zone

    _refused(tmp_path, edit, 2, "demand.availabilityZone: the plan's")


def test_a_plan_beyond_the_stacks_bounds_names_demand(tmp_path: Path) -> None:
    from serving_stack.config.demand import MAX_USD_PER_HOUR, MAX_USERS

    def edit(raw, config):
        config[f"{PROJECT}:demand"].update(concurrentUsers=MAX_USERS, budgetUsdPerHour=MAX_USD_PER_HOUR)

    _refused(tmp_path, edit, 2, "demand: the plan for this demand exceeds a bound of the stack")


def test_targets_auto_is_refused_with_the_command_that_writes_the_plan() -> None:
    config = committed_config("prod")
    config["targets"] = "auto"
    assert_rejected_before_any_resource(
        config, "targets: 'auto' is no longer planned inside `pulumi up`: run `make plan"
    )


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        ("all", "targets: must be a list of targets"),
        ([{"id": 7}], "targets[0].id: Input should be a valid string"),
        (
            [{"id": next(iter(FACTS.catalog.recipes)), "replicas": {"agg": "2"}}],
            "targets[0].replicas.agg: Input should be a valid integer",
        ),
    ],
)
def test_targets_errors_name_the_key(targets: object, expected: str) -> None:
    config = committed_config("dev")
    config["targets"] = targets
    assert_rejected_before_any_resource(config, expected)
