"""Planted pull requests for the PR-diff tests: a throwaway clone with one commit of planted changes (the slow,
end-to-end tests), and in-process renders of a committed stack with a planted edit (the fast ones).

Every planted value is derived from the committed data (stack config, catalog, instance types,
JumpStart snapshot), so the tests follow the data instead of literal ids. The edits of the consequence
tests are `tools.pr_diff.sample`'s, which the docs' sample comment is made from.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from bad_stack_helpers import committed
from stack_helpers import TEST_SECRETS, run_config

from policy.nemotron_policies.offline import evaluate, format_report
from serving_stack.contract.outputs import StackOutputs
from tools.pr_diff import sample
from tools.pr_diff.records import Render, parse_policy_report

REPO = Path(__file__).resolve().parent.parent
GIT_USER = ["-c", "user.name=pr-diff-test", "-c", "user.email=pr-diff-test@example.invalid"]


@dataclass(frozen=True)
class Planted:
    """What the planted commit changes in `Pulumi.prod.yaml` and the catalog."""

    added_target: str
    replicas: tuple[str, str, int, int]  # target id, component, before, after
    replaced_pool: tuple[str, str, str]  # pool, instance type before, after
    resized_pool: tuple[str, int, int, float]  # pool, desired before, after, $/h per node
    image: tuple[str, str]  # target id, new image
    widened_artifact_prefix: str


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *GIT_USER, *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def copy_project(destination: Path) -> Path:
    """The project's files (tracked and new, not ignored) in a fresh repository with one commit."""
    return sample.copy_project(REPO, destination)


def _project(repo: Path) -> str:
    return str(yaml.safe_load((repo / "Pulumi.yaml").read_text())["name"])


def _pick_added_target(catalog: dict[str, Any], selected: set[str], pool_gpus: set[str]) -> str:
    """An aggregated vLLM target not yet selected, on the GPU of an existing pool (its id names the GPU)."""
    for target in catalog["targets"]:
        target_id = target["id"]
        gpu = re.match(r"vllm/agg-([a-z0-9]+)-", target_id)
        if gpu and gpu.group(1) in pool_gpus and target_id not in selected:
            return str(target_id)
    raise AssertionError("no catalog target fits the prod pools")


def _recipe_image(repo: Path, catalog: dict[str, Any], target_id: str) -> str:
    manifest = next(t["manifest"] for t in catalog["targets"] if t["id"] == target_id)
    text = (repo / "catalog" / manifest).read_text()
    image = re.search(r"image:\s*(\S+)", text)
    assert image, f"no image in {manifest}"
    return image.group(1).rsplit(":", 1)[0] + ":1.99.0"


def _jumpstart_base(repo: Path, project: str) -> None:
    """Make the prod endpoint a JumpStart model of the committed snapshot (opted in as unverified) in a base
    commit, so the planted commit can widen its artifact prefix: an IAM statement the data decides."""
    stack_file = repo / "Pulumi.prod.yaml"
    stack = yaml.safe_load(stack_file.read_text())
    sagemaker = stack["config"][f"{project}:sagemaker"]
    endpoint = sagemaker["endpoints"][0]
    if endpoint.get("source") == "jumpstart":
        return
    (model,) = json.loads((repo / "catalog" / "jumpstart" / "models_manifest.json").read_text())[:1]
    spec = json.loads((repo / "catalog" / "jumpstart" / model["spec_key"]).read_text())
    instance_type = spec["default_inference_instance_type"]
    sagemaker["allowUnverifiedSpecs"] = True
    sagemaker["region"] = sorted(spec["hosting_instance_type_variants"]["regional_aliases"])[0]
    endpoint.pop("huggingface", None)
    endpoint.update(
        source="jumpstart",
        jumpstart={"modelId": model["model_id"], "version": model["version"]},
        instanceType=instance_type,
    )
    endpoint["autoscaling"]["instanceType"] = instance_type
    endpoint["deployment"] = {"type": "ALL_AT_ONCE"}  # the spec's long timeouts leave no room for bakes
    stack_file.write_text(yaml.safe_dump(stack, sort_keys=False))
    git(repo, "commit", "--quiet", "--all", "-m", "base: a JumpStart endpoint")


def plant_changes(repo: Path) -> Planted:
    """Edit the prod stack and the catalog as a pull request would, and commit."""
    project = _project(repo)
    _jumpstart_base(repo, project)
    stack_file = repo / "Pulumi.prod.yaml"
    stack = yaml.safe_load(stack_file.read_text())
    config = stack["config"]
    instance_types = yaml.safe_load((repo / "catalog" / "instance_types.yaml").read_text())["instanceTypes"]
    catalog = yaml.safe_load((repo / "catalog" / "targets.yaml").read_text())
    pools = config[f"{project}:aws"]["nodePools"]
    targets = config[f"{project}:targets"]

    replaced = next(
        p
        for p in pools
        if any(
            other != p["instanceType"] and facts["gpu"] == instance_types[p["instanceType"]]["gpu"]
            for other, facts in instance_types.items()
        )
    )
    old_type = replaced["instanceType"]
    new_type = next(
        t for t, f in instance_types.items() if t != old_type and f["gpu"] == instance_types[old_type]["gpu"]
    )
    replaced["instanceType"] = new_type

    resized = next(p for p in pools if p is not replaced and instance_types[p["instanceType"]]["onDemandUsdPerHour"])
    old_desired = resized["desiredSize"]
    resized["desiredSize"] = old_desired + 1
    resized["maxSize"] = max(resized["maxSize"], old_desired + 1)

    scaled = next(t for t in targets if t.get("replicas"))
    component, old_replicas = next(iter(scaled["replicas"].items()))
    scaled["replicas"][component] = old_replicas + 1

    imaged = next(t for t in targets if "image" not in t and t is not scaled)
    imaged["image"] = _recipe_image(repo, catalog, imaged["id"])

    pool_gpus = {instance_types[p["instanceType"]]["gpu"] for p in pools}
    added = _pick_added_target(catalog, {t["id"] for t in targets}, pool_gpus)
    targets.append({"id": added})
    stack_file.write_text(yaml.safe_dump(stack, sort_keys=False))

    endpoint = config[f"{project}:sagemaker"]["endpoints"][0]["jumpstart"]
    manifest = json.loads((repo / "catalog" / "jumpstart" / "models_manifest.json").read_text())
    spec_key = next(
        m["spec_key"] for m in manifest if m["model_id"] == endpoint["modelId"] and m["version"] == endpoint["version"]
    )
    spec_file = repo / "catalog" / "jumpstart" / spec_key
    spec = json.loads(spec_file.read_text())
    prefix = spec["hosting_prepacked_artifact_key"].split("/")[0] + "/"
    spec["hosting_prepacked_artifact_key"] = prefix
    spec_file.write_text(json.dumps(spec, indent=2))

    git(repo, "commit", "--quiet", "--all", "-m", "planted changes")
    price = float(instance_types[resized["instanceType"]]["onDemandUsdPerHour"])
    return Planted(
        added,
        (scaled["id"], component, old_replicas, old_replicas + 1),
        (replaced["name"], old_type, new_type),
        (resized["name"], old_desired, old_desired + 1, price),
        (imaged["id"], imaged["image"]),
        prefix,
    )


def stack_raw(stack: str) -> dict[str, Any]:
    """A committed stack's config, unprefixed (the project's keys only), to edit."""
    prefix = f"{_project(REPO)}:"
    config = committed(stack)["config"]
    return copy.deepcopy({k.removeprefix(prefix): v for k, v in config.items() if k.startswith(prefix)})


def render_raw(raw: dict[str, Any], stack: str, policies: bool = False) -> Render:
    """The stack program run in-process under mocks with this config, as `tools.render` writes it (the
    policy pack's report too when `policies`)."""
    run = run_config(raw, stack=stack, secrets=TEST_SECRETS)
    records = [json.loads(json.dumps(r.to_json())) for r in run.resources]
    outputs = StackOutputs.model_validate(run.outputs).model_dump(mode="json")
    report = format_report(evaluate(run.resources, None, stack=stack)) if policies else ""
    return Render.from_records(records, outputs, parse_policy_report(report))


def prefixed(raw: dict[str, Any]) -> dict[str, str]:
    """The config as the engine hands it to the program (`project:key` -> JSON), as `stack_config` reads it."""
    return {f"{_project(REPO)}:{key}": json.dumps(value) for key, value in raw.items()}


FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def markdown_problems(text: str) -> list[str]:
    """Open blocks, tables without a header and separator, rows cut short."""
    problems, fence, depth, table = [], "", 0, []
    for number, line in enumerate([*text.split("\n"), ""], 1):
        marker = FENCE.match(line)
        if fence:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = ""
            continue
        if marker:
            fence = marker.group(1)
            continue
        depth += line.count("<details>") - line.count("</details>")
        if depth < 0:
            problems.append(f"line {number}: </details> closes nothing")
        stripped = line.strip()
        if stripped.startswith("|"):
            table.append(stripped)
            if not stripped.endswith("|") or stripped.endswith("\\|"):
                problems.append(f"line {number}: a table row cut short: {stripped[-40:]!r}")
            continue
        if table and (len(table) < 2 or not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", table[1])):
            problems.append(f"line {number}: a table without its separator line: {table[0]!r}")
        table = []
    if fence:
        problems.append(f"a code fence {fence} left open")
    if depth:
        problems.append(f"{depth} <details> left open")
    return problems
