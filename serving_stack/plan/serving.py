"""The serving targets: selected from the catalog once (recipe, effective replicas, GPUs, throughput basis),
placed on the GPU pools, and rendered once into the ConfigMap and DynamoGraphDeployment the stack applies
(placement, prewarm gate, compile cache, readiness wait, scaling adapters) with their contract entry.

Every change to an upstream object is a documented stack setting (docs/layout.md, "What the stack changes in
upstream manifests"); everything else is kept byte for byte, which tests/test_conformance.py holds it to.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Optional

from serving_stack.config.serving import DynamoConfig, PrewarmConfig, RuntimeImage, TargetConfig
from serving_stack.contract.outputs import ServingEndpoint, frontend_url
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.aws import AwsCatalog, FabricProfile, unknown_gpu_problem
from serving_stack.facts.catalog import Catalog, CompileCache, Criteria, Recipe
from serving_stack.facts.crds import pruned_paths
from serving_stack.facts.serving_overlays import Overlay, ServingOverlays, load_serving_overlays
from serving_stack.names import (
    GPU_PRODUCT_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    MODEL_CACHE_CLAIM,
    POOL_LABEL,
    WORKER_COMPONENT_TYPES,
)
from serving_stack.plan.model_cache import gate_workers, host_state_dir, set_pull_secret
from serving_stack.plan.pools import ResolvedPool
from serving_stack.plan.throughput import (
    Slo,
    TargetTokenCost,
    ThroughputBasis,
    candidate_row,
    instance_offers,
    target_token_cost,
    throughput_basis,
)

WAIT_FOR_ANNOTATION = "pulumi.com/waitFor"
TIMEOUT_ANNOTATION = "pulumi.com/timeoutSeconds"
CONFIG_CHECKSUM_ANNOTATION = "nemotron.nvidia.com/config-sha256"


@dataclass(frozen=True)
class SelectedTarget:
    index: int
    config: TargetConfig
    recipe: Recipe
    replicas: Mapping[str, int]  # every component's: the stack's override, else the recipe's
    gpus: int
    basis: ThroughputBasis

    @property
    def id(self) -> str:
        return self.recipe.id


def effective_replicas(recipe: Recipe, target: TargetConfig) -> Mapping[str, int]:
    return MappingProxyType({c["name"]: target.replicas.get(c["name"], c["replicas"]) for c in recipe.components})


def gpus_used(recipe: Recipe, replicas: Mapping[str, int]) -> int:
    return sum(replicas[c["name"]] * recipe.gpus_per_replica(c) for c in recipe.components)


def _check(selected: SelectedTarget, cached: set[str]) -> list[ConfigError]:
    errors: list[ConfigError] = []
    path, recipe, target = f"targets[{selected.index}]", selected.recipe, selected.config
    for component in target.replicas:
        if component not in recipe.component_names:
            errors.append(
                ConfigError(f"{path}.replicas.{component}", "no such component", ", ".join(recipe.component_names))
            )
    if recipe.disaggregated:
        for role in ("prefill", "decode"):
            name = next(c["name"] for c in recipe.components if c["type"] == role)
            if selected.replicas[name] < 1:
                problem = f"a disaggregated target needs a prefill/decode pair, got 0 {role} replicas"
                errors.append(ConfigError(f"{path}.replicas.{name}", problem, ">= 1"))
    if target.image is not None:
        upstream = {
            _repository(c["image"])
            for component in recipe.components
            for c in component["podTemplate"]["spec"]["containers"]
        }
        if _repository(target.image).endswith("-runtime") and _repository(target.image) not in upstream:
            problem = f"{_repository(target.image)} is another backend's runtime; {target.id!r} runs {recipe.backend}"
            errors.append(ConfigError(f"{path}.image", problem, ", ".join(sorted(upstream))))
    for repo in recipe.checkpoints:
        if repo not in cached:
            errors.append(
                ConfigError(
                    "modelCache.checkpoints",
                    f"target {target.id!r} loads {repo!r}, which the model cache does not download",
                    "add it to modelCache.checkpoints.base or .drafts",
                )
            )
    return errors


def select_targets(
    targets: Sequence[TargetConfig], catalog: Catalog, cached: set[str]
) -> tuple[list[SelectedTarget], list[ConfigError]]:
    """The targets the stack selects, and every problem with the selection (each naming its key);
    `cached` are the repos the model cache downloads (`plan.model_cache`)."""
    selected: list[SelectedTarget] = []
    errors: list[ConfigError] = []
    seen: set[str] = set()
    for index, target in enumerate(targets):
        key = f"targets[{index}].id"
        if target.id not in catalog.recipes and target.id not in catalog.retired:
            errors.append(ConfigError(key, f"unknown target {bounded(target.id)}", ", ".join(catalog.recipes)))
            continue
        if target.id in seen:
            errors.append(ConfigError(key, f"target {target.id!r} is selected twice"))
        seen.add(target.id)
        recipe = catalog.recipe(target.id)
        twin = next((s for s in selected if s.recipe.name == recipe.name and s.id != target.id), None)
        if twin is not None:  # a retired target and the current one that kept its DGD name
            problem = f"{target.id!r} deploys the DynamoGraphDeployment {recipe.name!r}, as targets[{twin.index}]"
            problem += f" ({twin.id!r}) does"
            errors.append(ConfigError(key, problem, "one of them"))
        replicas = effective_replicas(recipe, target)
        try:
            basis = throughput_basis(recipe, target, index)
        except ConfigError as error:
            errors.append(error)
            continue
        one = SelectedTarget(index, target, recipe, replicas, gpus_used(recipe, replicas), basis)
        errors += _check(one, cached)
        selected.append(one)
    return selected, errors


def _repository(image: str) -> str:
    """`nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0@sha256:...` -> `vllm-runtime`."""
    return image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]


def runtime_image(upstream_image: str, runtime: RuntimeImage) -> str:
    """Keep the upstream repository name (e.g. `vllm-runtime`), swap registry and tag."""
    return f"{runtime.registry}/{_repository(upstream_image)}:{runtime.tag}"


def render_target(
    recipe: Recipe, replicas: Mapping[str, int], image: Optional[str], namespace: str, dynamo: DynamoConfig
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ConfigMap and DGD of one target in `namespace`, at the effective `replicas` (`SelectedTarget`)."""
    config_map, dgd = recipe.copy_manifests()
    for manifest in (config_map, dgd):
        manifest["metadata"]["namespace"] = namespace
    for component in dgd["spec"]["components"]:
        component["replicas"] = replicas[component["name"]]
        pod_spec = component["podTemplate"]["spec"]
        set_pull_secret(pod_spec, dynamo.imagePullSecret)
        for container in pod_spec.get("containers", []):
            container["image"] = image or runtime_image(container["image"], dynamo.runtime)
    return config_map, dgd


def flag_values(arguments: Sequence[str]) -> dict[str, list[Optional[str]]]:
    """Every `--flag value`, `--flag=value` and bare `--flag` of one command line."""
    values: dict[str, list[Optional[str]]] = {}
    for position, word in enumerate(arguments):
        if not word.startswith("--"):
            continue
        flag, equals, inline = word.partition("=")
        following = arguments[position + 1] if position + 1 < len(arguments) else None
        value = inline if equals else (None if following is None or following.startswith("--") else following)
        values.setdefault(flag, []).append(value)
    return values


def _with_argument(words: Sequence[str], overlay: Overlay) -> list[str]:
    """`words` (a container's args) without `overlay.argument` (`--flag`, `--flag value`, `--flag=value`), then
    with it again set to `overlay.value` (None: a bare flag) unless the overlay removes it."""
    flag = overlay.argument
    bare = [i for i, word in enumerate(words) if word == flag]
    dropped = {*bare, *(i for i, word in enumerate(words) if word.startswith(f"{flag}="))}
    dropped |= {i + 1 for i in bare if i + 1 < len(words) and not words[i + 1].startswith("--")}
    kept = [word for i, word in enumerate(words) if i not in dropped]
    if overlay.action == "set":
        kept += [overlay.argument] if overlay.value is None else [overlay.argument, overlay.value]
    return kept


def apply_serving_overlays(dgd: dict[str, Any], target_id: str, gpu: Optional[str], overlays: ServingOverlays) -> None:
    """The overlays of catalog/serving_overlays.yaml decided `apply` on the engine arguments of the target's
    components (`tools/conformance.py` lists them as intended differences). A GPU no data file knows yet (an
    absorbed target): none, the absorb report names the gap."""
    if gpu is None:
        return
    for overlay in (o for o in overlays.overlays if o.decision == "apply"):
        for component in dgd["spec"]["components"]:
            if overlay.covers(target_id, gpu, component["type"] in WORKER_COMPONENT_TYPES, overlay.argument):
                for container in component["podTemplate"]["spec"]["containers"]:
                    if container.get("args"):
                        container["args"] = _with_argument(container["args"], overlay)


def startup_budget_seconds(dgd: dict[str, Any]) -> int:
    """The longest any component may take to start before Kubernetes gives up on it (its startupProbe)."""
    budgets = [0]
    for component in dgd["spec"]["components"]:
        for container in component["podTemplate"]["spec"].get("containers", []):
            probe = container.get("startupProbe") or {}
            budgets.append(
                int(probe.get("initialDelaySeconds", 0))
                + int(probe.get("periodSeconds", 10)) * int(probe.get("failureThreshold", 3))
            )
    return max(budgets)


def stamp_config_checksum(dgd: dict[str, Any], *config_data: Mapping[str, str]) -> None:
    """A checksum of the ConfigMap data the pods read, on every pod template: a changed ConfigMap is replaced
    under the same name, and only a changed pod template makes the operator roll the pods onto it."""
    digest = hashlib.sha256(json.dumps(list(config_data), sort_keys=True).encode()).hexdigest()
    for component in dgd["spec"]["components"]:
        metadata = component["podTemplate"].setdefault("metadata", {})
        metadata.setdefault("annotations", {})[CONFIG_CHECKSUM_ANNOTATION] = digest


def compile_cache_key(
    container: dict[str, Any], gpu_products: Sequence[str], config_data: Mapping[str, str], checkpoints: Sequence[str]
) -> str:
    """A hash of what invalidates a worker's compiled artifacts: its image (engine and version), the GPU
    (architecture), its command, arguments, env and the ConfigMap data they read (engine arguments, the
    speculative config), and the checkpoints. Same key, same artifacts; any change, a new directory."""
    identity = {
        "image": container.get("image"),
        "gpus": sorted(gpu_products),
        "command": container.get("command"),
        "args": container.get("args"),
        "env": container.get("env"),
        "config": dict(config_data),
        "checkpoints": sorted(checkpoints),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def share_compile_cache(
    dgd: dict[str, Any], config_map: dict[str, Any], recipe: Recipe, gpu_products: Sequence[str], cache: CompileCache
) -> None:
    """Every GPU worker keeps its compilation caches on the model cache, in the directory of its key:
    `compilationCache` on the claim (the operator mounts it, and sets VLLM_CACHE_ROOT for vLLM), the claim's
    keyed subPath mounted at the same path first (the operator keeps a mount there), and every cache variable
    of the backend pointed below it (`catalog/platform.yaml`, `compileCache`)."""
    variables = cache.values(recipe.backend)
    for component in dgd["spec"]["components"]:
        pod = component["podTemplate"]["spec"]
        main = next((c for c in pod.get("containers", []) if _gpus(c)), None)
        if main is None:
            continue
        others = [e for e in main.get("env", []) if e["name"] not in variables]
        key = compile_cache_key({**main, "env": others}, gpu_products, config_map.get("data", {}), recipe.checkpoints)
        component["compilationCache"] = {"pvcName": MODEL_CACHE_CLAIM, "mountPath": cache.mountPath}
        volumes = pod.setdefault("volumes", [])
        if not any(v["name"] == MODEL_CACHE_CLAIM for v in volumes):
            volumes.append({"name": MODEL_CACHE_CLAIM, "persistentVolumeClaim": {"claimName": MODEL_CACHE_CLAIM}})
        main.setdefault("volumeMounts", []).append(
            {"name": MODEL_CACHE_CLAIM, "mountPath": cache.mountPath, "subPath": f"{cache.directory}/{key}"}
        )
        _set_env(main, variables, variables)


@dataclass(frozen=True)
class PlannedTarget:
    """One target as deployed. `ignored_replica_paths`: the DGD's replica fields its scaling adapters own (Pulumi
    sets them at creation only); `token_cost`: None where no data file prices its GPU."""

    selected: SelectedTarget
    pool: Optional[ResolvedPool]
    config_map: dict[str, Any]
    dgd: dict[str, Any]
    endpoint: ServingEndpoint
    delete_timeout_seconds: int
    ignored_replica_paths: tuple[str, ...] = ()
    token_cost: Optional[TargetTokenCost] = None

    @property
    def resource_name(self) -> str:
        return self.selected.recipe.name


def _endpoint(target: SelectedTarget, criteria: Criteria, namespace: str, usd: Optional[float]) -> ServingEndpoint:
    """Figures upstream did not publish stay None (the contract's null), and so does a verdict they decide."""
    performance, basis = target.recipe.entry.performance, target.basis
    per_gpu = basis.scaled(performance.outputTokensPerSecondPerGpu)
    return ServingEndpoint(
        id=target.id,
        kind="dynamo",
        servedModelName=target.recipe.served_model_name,
        url=frontend_url(target.recipe.name, namespace),
        gpus=target.gpus,
        expectedOutputTokensPerSecond=None if per_gpu is None else round(per_gpu * target.gpus, 2),
        expectedTokensPerSecondPerUser=basis.scaled(performance.tokensPerSecondPerUser),
        meetsPublishedCriteria=criteria.passed_by(performance),
        throughputBasis=basis.describe(),
        usdPerMillionOutputTokens=usd,
    )


def _readiness_timeout(dynamo: DynamoConfig, target: SelectedTarget, budget: int) -> int:
    timeout = dynamo.readiness.timeoutSeconds
    if timeout is not None and timeout < budget:
        raise ConfigError(
            "dynamo.readiness.timeoutSeconds",
            f"{timeout} s would expire before {target.id!r} may be ready: the image pull allowance, the prewarm gate "
            f"(modelCache.prewarm.waitTimeoutSeconds, and the download Jobs' deadline it may wait out) and its "
            f"startupProbe budget add up to {budget} s",
            f">= {budget}, or unset",
        )
    return timeout or budget


def plan_targets(
    selected: Sequence[SelectedTarget],
    placements: Mapping[str, ResolvedPool],
    namespace: str,
    dynamo: DynamoConfig,
    prewarm: PrewarmConfig,
    download_deadline_seconds: int,
    autoscaled: Collection[str],
    facts: Facts,
    prewarm_program: str,
    today: datetime.date,
) -> list[PlannedTarget]:
    """Each selected target rendered once, as deployed; `download_deadline_seconds`: the longest download Job's
    activeDeadlineSeconds; `autoscaled`: the ids `autoscaling.targets` lists; `today` decides which prices have
    ended."""
    platform, criteria = facts.platform, facts.catalog.criteria
    offers = instance_offers(facts.aws, facts.capacity_prices, today)
    overlays = load_serving_overlays()
    slo = Slo(criteria.minTokensPerSecondPerUser, criteria.maxTtftP50Ms)
    gated = prewarm.gates_workers
    planned = []
    for target in selected:
        config_map, dgd = render_target(target.recipe, target.replicas, target.config.image, namespace, dynamo)
        pool = placements.get(target.id)
        gpu_products = [pool.gpu_product] if pool is not None else target.recipe.gpu_products
        apply_serving_overlays(dgd, target.id, facts.aws.gpu_of_product(gpu_products[0]), overlays)
        if pool is not None:
            dgd = place_target(dgd, target.recipe, pool, dict(facts.aws.fabrics.items()))
        share_compile_cache(dgd, config_map, target.recipe, gpu_products, platform.compileCache)
        if gated:
            gate_workers(dgd, prewarm.waitTimeoutSeconds, host_state_dir(namespace), target.recipe.checkpoints)
        stamp_config_checksum(dgd, config_map.get("data", {}), {"prewarm.py": prewarm_program} if gated else {})
        if dynamo.readiness.wait:
            # Everything before a worker is Ready, in order: the image pull, the prewarm gate (an init
            # container that waits up to its timeout for the download markers and the warm node, retried by
            # the kubelet while the download runs: a gated graph is created before the download Jobs end, so
            # its wait covers their deadline too), then the startupProbe's own budget.
            gate = prewarm.waitTimeoutSeconds + download_deadline_seconds if gated else 0
            budget = platform.readiness.imagePullAllowanceSeconds + gate + startup_budget_seconds(dgd)
            annotations = dgd["metadata"].setdefault("annotations", {})
            annotations[WAIT_FOR_ANNOTATION] = "condition=Ready"  # the operator sets Ready once every component runs
            annotations[TIMEOUT_ANNOTATION] = str(_readiness_timeout(dynamo, target, budget))
        ignored: list[str] = []
        if target.id in autoscaled:
            # v1beta1: `scalingAdapter` present opts in (even empty: the CRD declares no `enabled`); the adapter
            # then owns the component's replicas.
            for index, component in enumerate(dgd["spec"]["components"]):
                if component["type"] in WORKER_COMPONENT_TYPES:
                    component["scalingAdapter"] = {}
                    ignored.append(f"spec.components[{index}].replicas")
        cost = None  # unless a data file prices its GPU
        if facts.aws.gpu_of_product(target.recipe.gpu_products[0]) is not None:
            cost = target_token_cost(candidate_row(target.recipe, facts.aws, target.basis), pool, offers, slo)
        usd = round(cost.usd_per_million, 4) if cost and cost.usd_per_million is not None else None
        endpoint = _endpoint(target, criteria, namespace, usd)
        planned.append(
            PlannedTarget(target, pool, config_map, dgd, endpoint, dynamo.deleteTimeoutSeconds, tuple(ignored), cost)
        )
    _check_against_crd(planned, facts)
    return planned


def _check_against_crd(targets: Sequence[PlannedTarget], facts: Facts) -> None:
    """Every field of every DGD as deployed exists in the CRD the pinned operator installs: the API server
    would prune any other silently (`serving_stack.facts.crds`)."""
    chart = facts.platform.chart
    errors = [
        ConfigError(
            f"targets[{target.selected.index}].id",
            f"{target.selected.id!r}: {path} is not in the DynamoGraphDeployment CRD that {chart.name} "
            f"{chart.version} installs (schemas/crds/), so the API server would prune it",
        )
        for target in targets
        for path in pruned_paths(target.dgd)
    ]
    if errors:
        raise ConfigError.combined(errors)


def retired_warnings(selected: list[SelectedTarget], catalog: Catalog) -> list[str]:
    """One line per selected target upstream has retired: it still renders and deploys from its last
    revision's manifest; the line names what to select instead."""
    return [catalog.retired[t.id].warning(f"targets[{t.index}].id") for t in selected if t.id in catalog.retired]


def swap_refusal(previous_ids: list[str], current_ids: list[str], catalog: Catalog, surge: bool) -> ConfigError | None:
    """A change of targets that one `pulumi up` cannot finish, or None.

    The engine deletes the targets a program no longer declares only after every create and update of the
    same `up` has finished, and a new DGD's create returns only once it is Ready. A new target that needs the
    GPUs a removed one still holds therefore waits for them until its timeout (and again on every retry):
    on fixed-size pools the swap has to be two `up`s. `surge` (`dynamo.targetSwap: surge`) says the pools
    have room for both while the new one starts. A removed target the catalog no longer has counts as
    holding every GPU kind."""
    if surge:
        return None
    removed = [i for i in previous_ids if i not in current_ids]
    if not removed:
        return None

    def gpus(target_id: str) -> set[str]:
        known = target_id in catalog.recipes or target_id in catalog.retired
        return set(catalog.recipe(target_id).gpu_products) if known else {"*"}

    held = {p for i in removed for p in gpus(i)}
    waiting = [i for i in current_ids if i not in previous_ids and ("*" in held or "*" in gpus(i) or held & gpus(i))]
    if not waiting:
        return None
    kept = [i for i in previous_ids if i in current_ids]
    step_one = ", ".join(kept) if kept else "no targets"
    return ConfigError(
        "targets",
        f"replacing {', '.join(removed)} with {', '.join(waiting)} on the same GPUs cannot finish in one "
        "`pulumi up` (the engine deletes removed targets only after the new ones are Ready, and they need the "
        "GPUs the old ones hold)",
        f"two `pulumi up`s: first with {step_one} (the old target removed), then add {', '.join(waiting)}; "
        "or dynamo.targetSwap: surge when the pools have room for both",
    )


def deployed_dynamo_targets(endpoints: object) -> list[str]:
    """The Dynamo target ids of a deployment's `endpoints` output (none before the first `up`)."""
    if not isinstance(endpoints, list):
        return []
    return [str(e["id"]) for e in endpoints if isinstance(e, dict) and e.get("kind") == "dynamo" and "id" in e]


def check_target_swap(previous_ids: list[str], current_ids: list[str], catalog: Catalog, surge: bool) -> bool:
    """Raises `swap_refusal`'s error; True when the change of targets can finish in one `up`."""
    refusal = swap_refusal(previous_ids, current_ids, catalog, surge)
    if refusal is not None:
        raise refusal
    return True


KV_TRANSFER_FLAG = "--kv-transfer-config"


def place_target(
    dgd: dict[str, Any], recipe: Recipe, pool: ResolvedPool, fabrics: Mapping[str, FabricProfile]
) -> dict[str, Any]:
    """The DGD of `recipe` as it runs on `pool` (`dgd` is not modified; the ConfigMap is the same on any pool)."""
    placed = copy.deepcopy(dgd)
    for component in placed["spec"]["components"]:
        pod = component["podTemplate"]["spec"]
        if component["type"] in WORKER_COMPONENT_TYPES:
            _pin_to_pool(pod, pool)
            if recipe.disaggregated:
                for container in pod.get("containers", []):
                    if _gpus(container):
                        _apply_fabric(container, pool, fabrics)
        elif GPU_PRODUCT_LABEL in pod.get("nodeSelector", {}):
            pod["nodeSelector"] = {**pod["nodeSelector"], GPU_PRODUCT_LABEL: pool.gpu_product, POOL_LABEL: pool.name}
    return placed


def _gpus(container: dict[str, Any]) -> int:
    return int(container.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0))


def _pin_to_pool(pod: dict[str, Any], pool: ResolvedPool) -> None:
    required = (
        pod.setdefault("affinity", {})
        .setdefault("nodeAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    )
    terms = required.setdefault("nodeSelectorTerms", [])
    if not terms:
        terms.append({"matchExpressions": []})
    for term in terms:
        expressions = term.setdefault("matchExpressions", [])
        product = next((e for e in expressions if e["key"] == GPU_PRODUCT_LABEL), None)
        if product is None:
            expressions.append({"key": GPU_PRODUCT_LABEL, "operator": "In", "values": [pool.gpu_product]})
        else:
            product.update(operator="In", values=[pool.gpu_product])
        expressions.append({"key": POOL_LABEL, "operator": "In", "values": [pool.name]})
    tolerations = pod.setdefault("tolerations", [])
    if not any(_tolerates(t, GPU_TAINT) for t in tolerations):
        tolerations.append(
            {"key": GPU_TAINT["key"], "operator": "Equal", "value": GPU_TAINT["value"], "effect": GPU_TAINT["effect"]}
        )


def _tolerates(toleration: dict[str, Any], taint: Mapping[str, str]) -> bool:
    key_matches = toleration.get("key") == taint["key"] or (
        not toleration.get("key") and toleration.get("operator") == "Exists"
    )
    value_matches = toleration.get("operator") == "Exists" or toleration.get("value") == taint["value"]
    return key_matches and value_matches and toleration.get("effect") in (None, "", taint["effect"])


def _set_env(container: dict[str, Any], wanted: Mapping[str, str], owned: Collection[str]) -> None:
    """The container's env with `wanted` set where it was (appended where absent) and the other `owned` removed."""
    env: list[dict[str, Any]] = []
    missing = dict(wanted)
    for var in container.get("env", []):
        if var["name"] in missing:
            env.append({"name": var["name"], "value": missing.pop(var["name"])})
        elif var["name"] not in owned:
            env.append(var)
    container["env"] = env + [{"name": name, "value": value} for name, value in missing.items()]


def _apply_fabric(container: dict[str, Any], pool: ResolvedPool, fabrics: Mapping[str, FabricProfile]) -> None:
    profile = fabrics[pool.fabric]
    owned_env = {var.name for p in fabrics.values() for var in p.env}
    _set_env(container, {var.name: var.value for var in profile.env}, owned_env)

    count = pool.efa_per_gpu * _gpus(container) if profile.count == "efa-per-gpu" else 1
    fabric_resources = {p.resource for p in fabrics.values()}
    resources = container.setdefault("resources", {})
    for section in ("requests", "limits"):
        kept = {
            k: v for k, v in resources.get(section, {}).items() if k not in fabric_resources or k == profile.resource
        }
        kept[profile.resource] = str(count)
        resources[section] = kept

    args = container.get("args", [])
    for index, arg in enumerate(args):
        if arg == KV_TRANSFER_FLAG and index + 1 < len(args):
            args[index + 1] = _with_backends(args[index + 1], profile.nixlBackends)
        elif arg.startswith(KV_TRANSFER_FLAG + "="):
            args[index] = f"{KV_TRANSFER_FLAG}={_with_backends(arg.split('=', 1)[1], profile.nixlBackends)}"


def _with_backends(text: str, backends: Optional[list[str]]) -> str:
    """`--kv-transfer-config` JSON with NIXL's `backends` set (or removed, for NIXL's default)."""
    config = json.loads(text)
    extra = {k: v for k, v in config.get("kv_connector_extra_config", {}).items() if k != "backends"}
    extra |= {"backends": list(backends)} if backends else {}
    updated = {k: v for k, v in config.items() if k != "kv_connector_extra_config"}
    updated |= {"kv_connector_extra_config": extra} if extra else {}
    return text if updated == config else json.dumps(updated, separators=(",", ":"))


def _fit(target: SelectedTarget, pool: ResolvedPool, gpu: Optional[str], arch: Optional[str]) -> list[ConfigError]:
    errors: list[ConfigError] = []
    path, recipe, name = f"targets[{target.index}].nodePool", target.recipe, pool.name
    if gpu != pool.gpu:
        errors.append(ConfigError(path, f"{target.id!r} needs {gpu} GPUs; pool {name!r} has {pool.gpu}"))
    if arch and pool.arch != arch:
        errors.append(ConfigError(path, f"{target.id!r} needs {arch} nodes; pool {name!r} is {pool.arch}"))
    if recipe.disaggregated and pool.fabric == "none":
        errors.append(
            ConfigError(
                path,
                f"disaggregated {target.id!r} needs a KV-transfer fabric; pool {name!r} has none",
                "a pool with fabric efa or ib",
            )
        )
    for component in recipe.worker_components():
        if recipe.gpus_per_replica(component) > pool.gpus_per_node:
            errors.append(
                ConfigError(
                    path,
                    f"{component['name']} asks {recipe.gpus_per_replica(component)} GPUs per pod; "
                    f"a node of pool {name!r} holds {pool.gpus_per_node}",
                )
            )
    return errors


def place_targets(
    targets: list[SelectedTarget], pools: Optional[Mapping[str, ResolvedPool]], aws_catalog: AwsCatalog
) -> tuple[dict[str, ResolvedPool], list[ConfigError]]:
    """Target id -> its pool (unplaced targets are absent), and every placement problem; `pools` None: the stack
    has no `aws` block. A target runs on `targets[i].nodePool`, or on the only pool whose GPU is the target's; the
    pool must have the target's GPU and architecture, a KV-transfer fabric for a disaggregated target, nodes big
    enough for every worker pod, and room (maxSize nodes) for the GPUs of every target placed on it."""
    placed: dict[str, ResolvedPool] = {}
    errors: list[ConfigError] = []
    gpus_on: dict[str, int] = {}
    for target in targets:
        path, wanted, product = (
            f"targets[{target.index}].nodePool",
            target.config.nodePool,
            target.recipe.gpu_products[0],
        )
        if pools is None:
            errors += [ConfigError(path, "no aws.nodePools are defined")] if wanted else []
            continue
        gpu = aws_catalog.gpu_of_product(product)
        if gpu is None:
            if pools or wanted:  # a stack without pools places nothing: it need not know the GPU
                problem = f"{target.id!r} cannot be placed: {unknown_gpu_problem(product)}"
                errors.append(ConfigError(f"targets[{target.index}].id", problem))
            continue
        if wanted is not None and wanted not in pools:
            known = ", ".join(pools) or "none defined in aws.nodePools"
            errors.append(ConfigError(path, f"unknown node pool {wanted!r}", known))
            continue
        candidates = [wanted] if wanted else [name for name, pool in pools.items() if pool.gpu == gpu]
        if len(candidates) != 1:
            if pools:
                problem = f"no pool has {gpu} GPUs" if not candidates else f"several pools have {gpu} GPUs"
                errors.append(
                    ConfigError(path, f"{problem} for {target.id!r}; name one", ", ".join(candidates or pools))
                )
            continue
        pool = pools[candidates[0]]
        errors += _fit(target, pool, gpu, aws_catalog.gpus[gpu].arch)
        placed[target.id] = pool
        gpus_on[pool.name] = gpus_on.get(pool.name, 0) + target.gpus
    for index, pool in enumerate((pools or {}).values()):
        used = gpus_on.get(pool.name, 0)
        if used > pool.max_size * pool.gpus_per_node:
            errors.append(
                ConfigError(
                    f"aws.nodePools[{index}].maxSize",
                    f"targets on pool {pool.name!r} use {used} GPUs, "
                    f"more than {pool.max_size} nodes x {pool.gpus_per_node} GPUs",
                )
            )
    return placed, errors
