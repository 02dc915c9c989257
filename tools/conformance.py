"""Conformance: what the stack renders equals upstream's manifest except for documented stack settings.

One set of rules for two callers: `tests/test_conformance.py` (the registered resources of the whole
program under mocks) and `make absorb` (the plan of every target of a freshly absorbed revision). Each
rule names the setting of `serving_stack/plan/serving.py` that explains a difference; a difference no
rule explains is reported with its path and both values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from deepdiff import DeepDiff
from deepdiff.helper import NotPresent

from serving_stack.config import ConfigError, parse_stack_config
from serving_stack.facts import Facts
from serving_stack.facts.aws import load_aws_catalog
from serving_stack.facts.catalog import Recipe, load_platform
from serving_stack.facts.serving_overlays import load_serving_overlays
from serving_stack.names import MODEL_CACHE_CLAIM as CLAIM
from serving_stack.names import WORKER_COMPONENT_TYPES
from serving_stack.plan.model_cache import DOWNLOADER_DIR, DOWNLOADER_VOLUME, MARK_DOWNLOADED_HEADER
from serving_stack.plan.serving import CONFIG_CHECKSUM_ANNOTATION, TIMEOUT_ANNOTATION, WAIT_FOR_ANNOTATION
from serving_stack.plan.stack import build_plan

NAMESPACE = "conformance"
PULL_SECRET = "ngc-pull"
REGISTRY = "registry.example.com/mirror/ai-dynamo"
TAG = "1.5.0-mirror.2"
DOWNLOAD_IMAGE = "registry.example.com/mirror/python:3.12.9-slim"
STORAGE_CLASS = "conformance-rwx"
PULL_SECRET_KEY = frozenset({"ngcApiKey"})  # the pull Secret the conformance config names needs the NGC key
PREWARM_VOLUMES = ("prewarm-state", "prewarm-program")

COMPONENT = r"root\['spec'\]\['components'\]\[\d+\]"
POD = r"\['podTemplate'\]\['spec'\]"
JOB_POD = r"root\['spec'\]\['template'\]\['spec'\]"


@dataclass(frozen=True)
class Difference:
    change: str  # a DeepDiff-style change type: values_changed, dictionary_item_added, ...
    path: str  # root['spec']['components'][1]['replicas']
    old: Any
    new: Any


def replicas_override(recipe: Recipe) -> dict[str, int]:
    """One more replica of the recipe's last worker component: the `replicas` setting on every target."""
    last = recipe.worker_components()[-1]
    return {last["name"]: int(last["replicas"]) + 1}


def conformance_config(targets: list[dict[str, Any]]) -> dict[str, Any]:
    """A raw stack config that sets every documented serving setting to a recognisable value."""
    return {
        "kubernetes": {"namespace": NAMESPACE, "cluster": {"source": "kubeconfig", "context": "conformance"}},
        # Every target at once: one prewarm pod may warm every checkpoint set of its GPU (BF16 beside NVFP4).
        "modelCache": {
            "storageClassName": STORAGE_CLASS,
            "prewarm": {"memoryLimit": "512Gi"},
            "download": {"image": DOWNLOAD_IMAGE},
        },
        "dynamo": {
            "imagePullSecret": PULL_SECRET,
            "registry": REGISTRY.split("/", 1)[0],  # the pull Secret authenticates to the mirror's host
            "runtime": {"registry": REGISTRY, "tag": TAG},
        },
        "targets": targets,
    }


def differences(upstream: Any, rendered: Any) -> list[Difference]:
    """Every leaf difference (DeepDiff's tree view, list items by position), sorted by path."""
    tree = DeepDiff(upstream, rendered, view="tree", zip_ordered_iterables=True, threshold_to_diff_deeper=0)
    found = [
        Difference(change.replace("type_changes", "values_changed"), level.path(), _value(level.t1), _value(level.t2))
        for change, levels in tree.items()
        for level in levels
    ]
    return sorted(found, key=lambda d: d.path)


def _value(value: Any) -> Any:
    return None if isinstance(value, NotPresent) else value


def _image(value: Any) -> bool:
    pattern = re.escape(REGISTRY) + r"/[a-z0-9._-]+:" + re.escape(TAG)
    return isinstance(value, str) and bool(re.fullmatch(pattern, value))


def overlay_words(recipe: Recipe) -> dict[int, set[str]]:
    """By component index, the words the overlays of catalog/serving_overlays.yaml decided `apply` add to the
    recipe's engine arguments (`serving_stack.plan.serving.apply_serving_overlays`): intended differences. An
    overlay that replaces or removes an upstream argument is not listed here and shows as a difference."""
    gpu = load_aws_catalog().gpu_of_product(recipe.gpu_products[0])
    words: dict[int, set[str]] = {}
    for overlay in load_serving_overlays().overlays:
        if overlay.decision != "apply" or overlay.action != "set" or gpu is None:
            continue
        for index, component in enumerate(recipe.dgd["spec"]["components"]):
            upstream = [w for c in component["podTemplate"]["spec"]["containers"] for w in c.get("args", [])]
            worker = component["type"] in WORKER_COMPONENT_TYPES
            absent = not any(w == overlay.argument or w.startswith(f"{overlay.argument}=") for w in upstream)
            if absent and overlay.covers(recipe.id, gpu, worker, overlay.argument):
                words.setdefault(index, set()).update(w for w in (overlay.argument, overlay.value) if w is not None)
    return words


def _target_rule(
    replicas: Mapping[str, int], names: list[str], overlaid: Mapping[int, set[str]]
) -> Callable[[Difference], bool]:
    def documented(d: Difference) -> bool:
        added = re.fullmatch(
            r"root\['spec'\]\['components'\]\[(\d+)\]" + POD + r"\['containers'\]\[\d+\]\['args'\]\[\d+\]", d.path
        )
        if added and d.change == "iterable_item_added":  # an overlay decided `apply` (catalog/serving_overlays.yaml)
            return d.new in overlaid.get(int(added.group(1)), set())
        if d.path == "root['metadata']['namespace']":
            return d.change == "dictionary_item_added" and d.new == NAMESPACE
        if re.fullmatch(COMPONENT + POD + r"\['imagePullSecrets'\]\[0\]\['name'\]", d.path):
            return bool(d.new == PULL_SECRET)
        if re.fullmatch(COMPONENT + POD + r"\['containers'\]\[\d+\]\['image'\]", d.path):
            return _image(d.new)
        if re.fullmatch(COMPONENT + POD + r"\['initContainers'\]", d.path):  # modelCache.prewarm.gateWorkers
            return d.change == "dictionary_item_added" and [c["name"] for c in d.new] == ["wait-for-prewarm"]
        if re.fullmatch(COMPONENT + POD + r"\['volumes'\]\[\d+\]", d.path):
            return d.change == "iterable_item_added" and d.new["name"] in PREWARM_VOLUMES
        if d.path == "root['metadata']['annotations']":  # dynamo.readiness: `up` waits for Ready
            return d.change == "dictionary_item_added" and set(d.new) == {WAIT_FOR_ANNOTATION, TIMEOUT_ANNOTATION}
        if re.fullmatch(COMPONENT + r"\['podTemplate'\]\['metadata'\]", d.path):  # config checksum: pods roll
            return d.change == "dictionary_item_added" and set(d.new["annotations"]) == {CONFIG_CHECKSUM_ANNOTATION}
        if _compile_cache(d):
            return True
        if re.fullmatch(COMPONENT + r"\['scalingAdapter'\]", d.path):  # autoscaling.targets: KEDA scales it
            return d.change == "dictionary_item_added" and d.new == {}
        match = re.fullmatch(r"root\['spec'\]\['components'\]\[(\d+)\]\['replicas'\]", d.path)
        if match:
            return bool(replicas.get(names[int(match.group(1))]) == d.new)
        return False

    return documented


def _compile_cache(d: Difference) -> bool:
    """catalog/platform.yaml `compileCache`: the GPU workers' cache on the model-cache claim."""
    cache = load_platform().compileCache
    container = COMPONENT + POD + r"\['containers'\]\[\d+\]"
    if re.fullmatch(COMPONENT + r"\['compilationCache'\]", d.path):
        return d.change == "dictionary_item_added" and d.new == {"pvcName": CLAIM, "mountPath": cache.mountPath}
    if re.fullmatch(container + r"\['volumeMounts'\]\[\d+\]", d.path):
        mount = d.new if d.change == "iterable_item_added" else {}
        return {k: mount.get(k) for k in ("name", "mountPath")} == {"name": CLAIM, "mountPath": cache.mountPath} and (
            str(mount.get("subPath", "")).startswith(f"{cache.directory}/")
        )
    values = {(v.name, cache.directory_of(v)) for v in cache.variables}
    if re.fullmatch(container + r"\['env'\]\[\d+\]\['value'\]", d.path):
        return d.change == "values_changed" and d.new in {value for _, value in values}
    if re.fullmatch(container + r"\['env'\]\[\d+\]", d.path):
        return d.change == "iterable_item_added" and (d.new.get("name"), d.new.get("value")) in values
    return False


def _model_cache_rule(d: Difference) -> bool:
    if d.path == "root['metadata']['namespace']":
        return d.change == "dictionary_item_added" and d.new == NAMESPACE
    if d.path == "root['spec']['storageClassName']":
        return bool(d.new == STORAGE_CLASS)
    if re.fullmatch(JOB_POD + r"\['imagePullSecrets'\]\[0\]\['name'\]", d.path):
        return bool(d.new == PULL_SECRET)
    # modelCache.download.image: the Job runs on a small Python image with the pinned downloader
    if re.fullmatch(JOB_POD + r"\['containers'\]\[0\]\['image'\]", d.path):
        return bool(d.new == DOWNLOAD_IMAGE)
    if re.fullmatch(JOB_POD + r"\['initContainers'\]", d.path):
        return d.change == "dictionary_item_added" and [(c["name"], c["image"]) for c in d.new] == [
            ("install-downloader", DOWNLOAD_IMAGE)
        ]
    # the download markers the gated workers wait for: appended after upstream's script, which runs unchanged
    if re.fullmatch(JOB_POD + r"\['containers'\]\[0\]\['args'\]\[\d+\]", d.path):
        appended = str(d.new).removeprefix(str(d.old))
        return str(d.new).startswith(str(d.old)) and appended.lstrip("\n").startswith(MARK_DOWNLOADED_HEADER)
    if re.fullmatch(JOB_POD + r"\['containers'\]\[0\]\['env'\]\[\d+\]", d.path):
        return d.change == "iterable_item_added" and d.new == {"name": "PYTHONPATH", "value": DOWNLOADER_DIR}
    if re.fullmatch(JOB_POD + r"\['(containers'\]\[0\]\['volumeMounts|volumes)'\]\[\d+\]", d.path):
        return d.change == "iterable_item_added" and d.new["name"] == DOWNLOADER_VOLUME
    return False


def _unexplained(
    label: str, upstream: dict[str, Any], rendered: dict[str, Any], documented: Callable[[Difference], bool]
) -> list[str]:
    return [
        f"{label}: {d.change} at {d.path}: {d.old!r} -> {d.new!r}"
        for d in differences(upstream, rendered)
        if not documented(d)
    ]


def target_problems(
    recipe: Recipe,
    replicas: Mapping[str, int],
    config_map: dict[str, Any],
    dgd: dict[str, Any],
    upstream: Optional[dict[str, dict[str, Any]]] = None,
) -> list[str]:
    """Unexplained differences of a rendered target; `upstream` by kind, else the recipe's own manifests."""
    upstream = upstream or {"ConfigMap": recipe.config_map, "DynamoGraphDeployment": recipe.dgd}
    rule = _target_rule(replicas, recipe.component_names, overlay_words(recipe))
    return _unexplained(
        f"{recipe.id} DynamoGraphDeployment", upstream["DynamoGraphDeployment"], dgd, rule
    ) + _unexplained(f"{recipe.id} ConfigMap", upstream["ConfigMap"], config_map, rule)


def model_cache_problems(label: str, upstream: dict[str, Any], rendered: dict[str, Any]) -> list[str]:
    return _unexplained(label, upstream, rendered, _model_cache_rule)


def planned_conformance(facts: Facts) -> tuple[dict[str, list[str]], list[str]]:
    """Each target planned alone with every setting applied -> its problems (a plan error is one); and
    the model cache's (claim and every download Job, as the default config runs them)."""
    per_target: dict[str, list[str]] = {}
    for recipe in facts.catalog.recipes.values():
        replicas = replicas_override(recipe)
        try:
            plan = build_plan(
                parse_stack_config(conformance_config([{"id": recipe.id, "replicas": replicas}])),
                facts,
                secrets=PULL_SECRET_KEY,
            )
        except ConfigError as error:
            per_target[recipe.id] = [f"{recipe.id}: does not plan: {error}"]
            continue
        (planned,) = plan.serving.targets
        per_target[recipe.id] = target_problems(recipe, replicas, planned.config_map, planned.dgd)
    plan = build_plan(parse_stack_config(conformance_config([])), facts, secrets=PULL_SECRET_KEY)
    cache = facts.catalog.model_cache
    problems = model_cache_problems("model-cache claim", cache.claim, plan.serving.model_cache_claim)
    for job, rendered in zip(cache.jobs, plan.serving.download_jobs, strict=True):
        problems += model_cache_problems(f"download Job {job.name}", job.manifest, rendered)
    return per_target, problems
