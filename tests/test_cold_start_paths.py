"""The three critical paths of summary.md: steps laid out as they overlap (the longest parallel branch decides),
each with its kind and source, read from the render (how a pool's nodes get images, whether a graph shares a
compilation cache, where a SageMaker model reads its weights), checked against the goals, and printed as the
three lines the issue names."""

from __future__ import annotations

import base64
import inspect
import re

import pulumi_aws as aws
import pytest
from rollout_helpers import RULES, of_kind, of_type, records, report

from serving_stack.facts.durations import Goal
from tools.rollout.cold_start import (
    CriticalPath,
    Row,
    first_dynamo_token,
    new_gpu_nodes,
    sagemaker_first_token,
)
from tools.rollout.durations import ENGINE_START, IMAGE_FROM_SNAPSHOT, SAGEMAKER_MODEL, Par, Part, Seq, layout
from tools.rollout.report import markdown

LINE = re.compile(r"^(First Dynamo token|New GPU node serving|SageMaker first token): (\d+\.\d) min$")
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
KINDS = {"measured", "derived", "estimate"}


def _part(name: str, seconds: float, kind: str = "measured") -> Part:
    return Part(name, seconds, seconds * 2, kind, f"source of {name}")  # type: ignore[arg-type]


def test_parallel_branches_overlap_and_the_longest_decides():
    boot, plugins, pull, prewarm, engine = (
        _part("boot", 300),
        _part("plugins", 60),
        _part("pull", 136),
        _part("prewarm", 35),
        _part("engine", 143),
    )
    laid = layout(Seq((boot, Par((Seq((plugins, pull)), prewarm)), engine)))
    assert laid.end == 300 + 60 + 136 + 143
    by_name = {p.part.name: p for p in laid.placed}
    assert by_name["prewarm"].start == by_name["plugins"].start == 300
    assert not by_name["prewarm"].critical and by_name["pull"].critical
    assert layout(Seq((boot, Par((plugins, prewarm)))), worst=True).end == 600 + 120


def _lines(text: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for line in text.splitlines() if (m := LINE.match(line))}


def test_prod_prints_the_three_lines_its_paths_compute():
    rollout = report(records("prod"))
    lines = _lines(markdown(rollout))
    first = first_dynamo_token(rollout.graph, rollout.timeline, RULES)
    slowest = max(new_gpu_nodes(rollout.graph, RULES), key=lambda p: p.path.minutes)
    sagemaker = sagemaker_first_token(rollout.graph, rollout.timeline, RULES)
    assert first and sagemaker
    assert lines == {
        "First Dynamo token": round(first.minutes, 1),
        "New GPU node serving": round(slowest.path.minutes, 1),
        "SageMaker first token": round(sagemaker.minutes, 1),
    }
    assert first.minutes == pytest.approx(rollout.first_token(dynamo_only=True).ready)


def test_every_step_of_every_path_has_a_kind_and_a_source():
    rollout = report(records("prod"))
    paths = [
        first_dynamo_token(rollout.graph, rollout.timeline, RULES),
        sagemaker_first_token(rollout.graph, rollout.timeline, RULES),
        *(p.path for p in new_gpu_nodes(rollout.graph, RULES)),
    ]
    for path in paths:
        assert path is not None and path.rows
        for row in path.rows:
            assert row.kind in KINDS and row.source, row
            assert row.kind != "estimate" or "estimate" in row.source or "catalog/checkpoints.yaml" in row.source


def test_a_new_node_prewarms_while_its_image_arrives():
    rollout = report(records("prod"))
    for pool in new_gpu_nodes(rollout.graph, RULES):
        rows = {r.step: r for r in pool.path.rows}
        boot = rows["GPU instance launch to kubelet registration"]
        prewarm = rows["prewarm (checkpoints into the page cache)"]
        plugins = rows["device plugins advertise the GPUs"]
        assert prewarm.start == plugins.start == boot.end  # both from the node's registration
        pull = next(r for r in pool.path.rows if "pull" in r.step or "EBS" in r.step)
        load = rows["model load from page cache"]
        assert load.start == pytest.approx(max(pull.end, prewarm.end))


def _user_data(*parts: tuple[str, str]) -> str:
    body = "".join(f"--B\nContent-Type: {kind}\n\n{text}\n" for kind, text in parts)
    mime = f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n{body}--B--\n'
    return base64.b64encode(mime.encode()).decode()


FAST_PULL = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  featureGates:\n    FastImagePull: true\n"
NO_GATE = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance:\n    localStorage:\n      strategy: RAID0\n"


def _with_templates(user_data: str, snapshot: bool = False) -> list[dict]:
    stack = records("prod")
    for template in of_type(stack, LAUNCH_TEMPLATE):
        template["inputs"]["userData"] = user_data
        if snapshot:
            template["inputs"]["blockDeviceMappings"] = [
                *template["inputs"].get("blockDeviceMappings", []),
                {"deviceName": "/dev/xvdb", "ebs": {"snapshotId": "snap-0123456789abcdef0"}},
            ]
    return stack


def _new_node_minutes(stack: list[dict]) -> dict[str, tuple[str, float]]:
    rollout = report(stack)
    return {p.pool: (p.delivery, p.path.minutes) for p in new_gpu_nodes(rollout.graph, RULES)}


def test_the_image_delivery_is_read_from_each_pools_launch_template():
    plain = _new_node_minutes(_with_templates(_user_data(("application/node.eks.aws", NO_GATE))))
    parallel = _new_node_minutes(_with_templates(_user_data(("application/node.eks.aws", FAST_PULL))))
    script = "#!/bin/bash\nmount /dev/xvdb /var/lib/containerd\n"
    snapshot = _new_node_minutes(
        _with_templates(_user_data(("application/node.eks.aws", NO_GATE), ("text/x-shellscript", script)), True)
    )
    table = RULES.durations
    for pool, (how, minutes) in plain.items():
        assert how == "plain" and parallel[pool][0] == "parallel" and snapshot[pool][0] == "ebs-snapshot"
        ratio = table.imagePull["parallel"].secondsPerGB / table.imagePull["plain"].secondsPerGB
        assert parallel[pool][1] < minutes and snapshot[pool][1] < parallel[pool][1]
        saved = (minutes - parallel[pool][1]) * 60
        gigabytes = table.image("nvcr.io/nvidia/ai-dynamo/vllm-runtime")[1].unpackedGB
        assert saved == pytest.approx(gigabytes * table.imagePull["plain"].secondsPerGB * (1 - ratio), rel=1e-6)
        assert table.steps[IMAGE_FROM_SNAPSHOT].seconds < 10


def test_a_shared_compilation_cache_starts_a_new_node_warm_and_the_first_up_cold():
    stack = records("prod")
    for graph in of_kind(stack, "DynamoGraphDeployment"):
        for component in graph["inputs"]["spec"]["components"]:
            component["compilationCache"] = {"pvcName": "compilation-cache"}
    rollout = report(stack)
    warm = RULES.durations.steps[ENGINE_START[("vllm", True)]]
    for pool in new_gpu_nodes(rollout.graph, RULES):
        assert pool.compile_cache
        (engine,) = [r for r in pool.path.rows if "engine start" in r.step]
        assert "compile cache warm" in engine.step and engine.end - engine.start == pytest.approx(warm.seconds)
    first = first_dynamo_token(rollout.graph, rollout.timeline, RULES)
    assert first and any("compile cache cold" in r.step for r in first.rows)


def _path(*rows: Row, goal: float) -> CriticalPath:
    return CriticalPath("Test", "minute 0", rows, Goal(minutes=goal, source="test: a goal"))


def test_a_goal_met_only_through_an_estimate_does_not_count():
    sourced = Row("sourced", 0, 120, "measured", "a/b", True)
    small = Row("small estimate", 120, 130, "estimate", "estimate: x", True, slack=20)
    large = Row("large estimate", 120, 180, "estimate", "estimate: y", True, slack=600)
    assert _path(sourced, small, goal=3).verdict().startswith("**met**")
    assert _path(sourced, large, goal=4).verdict().startswith("met only through estimates, which does not count")
    assert _path(sourced, large, goal=2).verdict().startswith("**not met**")
    off_path = Row("overlapped estimate", 0, 60, "estimate", "estimate: z", False, slack=6000)
    assert _path(sourced, off_path, goal=3).verdict().startswith("**met**")


def _with_weights(from_s3: bool) -> list[dict]:
    stack = records("prod")
    (model,) = of_type(stack, SAGEMAKER_MODEL)
    container = model["inputs"]["primaryContainer"]
    container.pop("modelDataSource", None)
    if from_s3:  # pulumi-aws's shape: ModelPrimaryContainerModelDataSource.s3DataSources, a list
        assert "s3_data_sources" in inspect.signature(aws.sagemaker.ModelPrimaryContainerModelDataSourceArgs).parameters
        container["modelDataSource"] = {"s3DataSources": [{"s3Uri": "s3://weights/nvfp4/", "s3DataType": "S3Prefix"}]}
    return stack


def test_sagemaker_weights_from_s3_download_while_the_image_pulls():
    hub, from_s3 = report(_with_weights(False)), report(_with_weights(True))
    before = sagemaker_first_token(hub.graph, hub.timeline, RULES)
    after = sagemaker_first_token(from_s3.graph, from_s3.timeline, RULES)
    assert before and after and after.minutes < before.minutes
    rows = {r.step.split(": ", 1)[-1]: r for r in after.rows}
    pull, weights = rows["container image pull"], rows["weights from S3 (ModelDataSource)"]
    assert pull.start == weights.start
    assert "weights from the hub at container start" in {r.step.split(": ", 1)[-1] for r in before.rows}


def test_a_stack_without_gpu_pools_or_sagemaker_says_so():
    lines = markdown(report(records("dev"))).splitlines()
    assert "New GPU node serving: n/a (no GPU node group in the stack)" in lines
    assert "SageMaker first token: n/a (no SageMaker endpoint)" in lines
    assert any(LINE.match(line) for line in lines)


def test_the_dynamo_chart_waits_for_the_monitoring_crds_not_the_whole_stack():
    graph = report(records("prod")).graph
    before = graph.ancestors(graph.named("dynamo-release").key)
    assert "kubernetes:helm.sh/v3:Release::monitoring-crds" in before
    assert "kubernetes:helm.sh/v3:Release::monitoring-prometheus" not in before


def test_the_download_jobs_run_a_small_image_not_the_runtime():
    rollout = report(records("prod"))
    table = RULES.durations
    for job in rollout.graph.kubernetes_objects("Job"):
        if not job.name.startswith("model-cache-download"):
            continue
        spec = job.inputs["spec"]["template"]["spec"]
        sizes = {table.image(c["image"])[1].unpackedGB for c in [*spec["initContainers"], *spec["containers"]]}
        assert max(sizes) < 1, sizes
        rows = [p.part.name for p in rollout.timeline.steps[job.key].parts]
        assert any("pip install" in r for r in rows) and any("download from the hub" in r for r in rows)
