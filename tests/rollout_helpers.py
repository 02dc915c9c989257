"""Records of real renders for the rollout model's tests, and small mutations that plant one defect at a time.

Stacks: the committed "dev" and "prod", "all-targets" (every catalog target), and variants of a committed
config that bring back what the committed stacks no longer have: "prod-efs" (the EFS backend: a StorageClass
of the stack), "dev-platform" (dev installing the Dynamo platform on its shared cluster), "dev-pull-secret"
(dev with a registry pull Secret the stack creates), "dev-retained" (dev with modelCache.retainOnDelete),
"prod-planned" (prod with the targets and pools `make plan ... WRITE=1` writes, and the cluster scaled with load)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import yaml
from capacity_stacks import autoscaled_planned_targets
from stack_helpers import PROJECT, all_targets_config, rendered_stack, run_config

from tools.mock_runtime import PROJECT_DIR
from tools.rollout import RolloutReport, analyse
from tools.rollout.graph import StackGraph
from tools.rollout.rules import load_rules

Record = dict[str, Any]
RULES = load_rules()
ANNOTATIONS = RULES.annotations


def committed_config(stack: str) -> dict[str, Any]:
    """The project keys of `Pulumi.<stack>.yaml`, unprefixed, to vary one setting with `run_config`."""
    values = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {
        k.split(":", 1)[1]: v for k, v in values.items() if k.startswith(f"{PROJECT}:") and k != f"{PROJECT}:hfToken"
    }


def _efs_backend(config: dict[str, Any]) -> None:
    config["aws"]["modelCacheStorage"] = {"backend": "efs", "protect": True}
    config["modelCache"]["storageClassName"] = "efs-ap"


def _platform_installed(config: dict[str, Any]) -> None:
    config["dynamo"]["platform"]["install"] = True


def _pull_secret(config: dict[str, Any]) -> None:
    config.setdefault("dynamo", {})["imagePullSecret"] = "ngc-registry"


def _retained(config: dict[str, Any]) -> None:
    config["modelCache"]["retainOnDelete"] = True


VARIANTS: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "prod-efs": ("prod", _efs_backend),
    "dev-platform": ("dev", _platform_installed),
    "dev-pull-secret": ("dev", _pull_secret),
    "dev-retained": ("dev", _retained),
    "prod-planned": ("prod", autoscaled_planned_targets),
}


def rendered(config: dict[str, Any], stack: str) -> list[Record]:
    """The records of `__main__.py` run under mocks with this config (as a Pulumi.<stack>.yaml would give it)."""
    return [r.to_json() for r in run_config(config, stack=stack).resources]


@functools.cache
def _stack(stack: str) -> tuple[Record, ...]:
    if stack == "all-targets":
        return tuple(r.to_json() for r in run_config(all_targets_config()).resources)
    if stack in VARIANTS:
        base, change = VARIANTS[stack]
        config = committed_config(base)
        change(config)
        return tuple(rendered(config, base))
    return tuple(r.to_json() for r in rendered_stack(stack).resources)


def records(stack: str) -> list[Record]:
    """A fresh, mutable copy of a stack's resources.json records (a committed stack, "all-targets" or a variant)."""
    return copy.deepcopy(list(_stack(stack)))


def named(records_: list[Record], name: str) -> Record:
    (match,) = [r for r in records_ if r["name"] == name]
    return match


def key(record: Record) -> str:
    return f"{record['type']}::{record['name']}"


def of_kind(records_: list[Record], kind: str) -> list[Record]:
    return [r for r in records_ if r["custom"] and r["inputs"].get("kind") == kind]


def of_type(records_: list[Record], type_token: str) -> list[Record]:
    return [r for r in records_ if r["type"] == type_token]


def annotate(record: Record, **annotations: str) -> None:
    """Set `pulumi.com/...` annotations by their provider_rules.yaml names (skip_await=..., wait_for=...)."""
    metadata = record["inputs"].setdefault("metadata", {})
    metadata.setdefault("annotations", {}).update({ANNOTATIONS[k]: v for k, v in annotations.items()})


def add_dependency(record: Record, on: Record) -> None:
    record["dependsOn"] = sorted(set(record["dependsOn"]) | {key(on)})


def remove_dependency(records_: list[Record], record: Record, on: Record) -> None:
    """Drop every edge by which `record` (or its parent component) waits for `on`."""
    for holder in (record, *(r for r in records_ if key(r) == record["parent"])):
        holder["dependsOn"] = [d for d in holder["dependsOn"] if d != key(on)]
        for prop, deps in holder.get("propertyDependencies", {}).items():
            holder["propertyDependencies"][prop] = [d for d in deps if d != key(on)]


def object_record(type_token: str, name: str, like: Record, inputs: dict[str, Any]) -> Record:
    """A Kubernetes object as the render records one, with the parent and provider of `like`, no dependencies."""
    return {
        **copy.deepcopy(like),
        "type": type_token,
        "name": name,
        "dependsOn": [],
        "propertyDependencies": {},
        "protect": False,
        "retainOnDelete": False,
        "deleteBeforeReplace": False,
        "customTimeouts": {},
        "inputs": inputs,
    }


def plant_dynamic_fsx_class(stack_records: list[Record]) -> tuple[Record, Record]:
    """The model cache as it was before the fix: the claim provisioned by an Immediate-binding FSx class (the CSI
    driver creates the file system), instead of bound to the stack's file system. Returns (class, claim)."""
    (claim,) = of_kind(stack_records, "PersistentVolumeClaim")
    spec = claim["inputs"]["spec"]
    spec.pop("volumeName", None)
    stack_records[:] = [r for r in stack_records if r["inputs"].get("kind") != "PersistentVolume"]
    storage_class = object_record(
        "kubernetes:storage.k8s.io/v1:StorageClass",
        "test-fsx-storage-class",
        claim,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": spec["storageClassName"]},
            "provisioner": "fsx.csi.aws.com",
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "Immediate",
            "parameters": {"deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": "500"},
        },
    )
    stack_records.append(storage_class)
    return storage_class, claim


def report(records_: list[Record]) -> RolloutReport:
    return analyse(records_)


def findings_about(
    records_: list[Record], resource: str, category: str = "", blocking: bool | None = None
) -> list[str]:
    """Finding lines naming `resource` (optionally of one category / blocking state)."""
    return [
        f.line()
        for f in analyse(records_).findings
        if f.resource == resource
        and (not category or f.category == category)
        and (blocking is None or f.blocking == blocking)
    ]


def graph(records_: list[Record]) -> StackGraph:
    return StackGraph(records_)
