"""The model cache as this stack runs it: upstream's claim and download Jobs with what the stack changes (size,
which checkpoints), the RWX storage the stack creates (EFS or FSx for Lustre), and the prewarm DaemonSets.

Checkpoints keep upstream's env names and stay in the Job that fetches them upstream; a repo the stack adds goes
into the first Job under a name derived from the base (`<base>-Foo` -> `FOO_MODEL`); a Job left with no
checkpoint is not run. With `modelCache.checkpoints` unset, only the Jobs that fetch a checkpoint some selected
target loads run (all of them when the stack selects none). One prewarm DaemonSet per distinct worker placement
(node affinity): it selects the same nodes, tolerates what those workers tolerate, and warms what they load;
beside it, a pre-pull DaemonSet on the same nodes pulls the workers' images from the node's registration.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from serving_stack.config.aws import AwsConfig, ModelCacheStorageConfig
from serving_stack.config.serving import DownloadJob as DownloadJobConfig
from serving_stack.config.serving import ModelCacheConfig, PrewarmConfig, TargetConfig
from serving_stack.config.types import quantity_value
from serving_stack.errors import ConfigError
from serving_stack.facts.aws import AwsCatalog, AwsRegions, CsiAddon
from serving_stack.facts.catalog import BYTES_PER_GB, Catalog, CheckpointSizes, DownloadJob, ModelCacheFacts
from serving_stack.names import (
    GPU_PRODUCT_LABEL,
    MODEL_CACHE_CLAIM,
    POOL_LABEL,
    PREWARM_PROGRAM_CONFIG_MAP,
    WORKER_COMPONENT_TYPES,
)

KEY = "modelCache.checkpoints"


@dataclass(frozen=True)
class JobCheckpoints:
    """One download Job and the (env name, repo) pairs it fetches in this stack."""

    job: DownloadJob
    checkpoints: tuple[tuple[str, str], ...]

    @property
    def changed(self) -> bool:
        return self.checkpoints != self.job.checkpoints

    @property
    def env_names(self) -> list[str]:
        return [name for name, _ in self.checkpoints]


@dataclass(frozen=True)
class ModelCacheSelection:
    size: str
    jobs: tuple[JobCheckpoints, ...]

    @property
    def repos(self) -> set[str]:
        return {repo for job in self.jobs for _, repo in job.checkpoints}


def env_name_tuple(names: list[str]) -> str:
    """A Python tuple literal of env names, as upstream's download script loops over them."""
    return "(" + ", ".join(f'"{n}"' for n in names) + ("," if len(names) == 1 else "") + ")"


def env_tuple_pattern(names: list[str]) -> re.Pattern[str]:
    """Upstream's loop tuple (`("BASE_MODEL", "DFLASH_MODEL")`), whatever its spacing or trailing comma."""
    items = r"\s*,\s*".join(rf"[\"']{re.escape(n)}[\"']" for n in names)
    return re.compile(rf"\(\s*{items}\s*,?\s*\)")


def _derived_env_name(repo: str, base: str, taken: set[str]) -> str:
    suffix = repo[len(base) + 1 :] if repo.startswith(base + "-") else repo.rsplit("/", 1)[-1]
    stem = re.sub(r"[^A-Z0-9]+", "_", suffix.upper()).strip("_") + "_MODEL"
    name, counter = stem, 2
    while name in taken:
        name, counter = f"{stem}_{counter}", counter + 1
    return name


def _wanted(cache: ModelCacheConfig, facts: ModelCacheFacts) -> Optional[list[str]]:
    """The repos the stack asks for, or None for upstream's Jobs unchanged."""
    wanted = cache.checkpoints
    if wanted.base is None and wanted.drafts is None:
        return None
    primary = facts.jobs[0].repos
    base = wanted.base if wanted.base is not None else primary[0]
    drafts = wanted.drafts if wanted.drafts is not None else primary[1:]
    return list(dict.fromkeys([base, *drafts]))


def loaded_checkpoints(targets: Iterable[TargetConfig], catalog: Catalog) -> set[str]:
    """The repos the selected targets load (ids the catalog does not hold are left to the target checks)."""
    known = set(catalog.selectable)
    return {repo for t in targets if t.id in known for repo in catalog.recipe(t.id).checkpoints}


def select_model_cache(
    cache: ModelCacheConfig, facts: ModelCacheFacts, sizes: CheckpointSizes, loaded: Collection[str] = ()
) -> tuple[ModelCacheSelection, list[ConfigError]]:
    """What each download Job fetches and the claim's size (the configured one, else `cache_size`), and every
    checkpoint change the upstream script cannot take; `loaded`: the repos the selected targets load."""
    wanted, errors = _wanted(cache, facts), []
    if wanted is None:
        used = [job for job in facts.jobs if any(repo in loaded for repo in job.repos)]
        jobs = tuple(JobCheckpoints(job, job.checkpoints) for job in (used or facts.jobs))
    else:
        kept = [JobCheckpoints(job, tuple((n, r) for n, r in job.checkpoints if r in wanted)) for job in facts.jobs]
        fetched = {repo for job in kept for _, repo in job.checkpoints}
        taken = {name for job in facts.jobs for name, _ in job.checkpoints}
        added: list[tuple[str, str]] = []
        for repo in (r for r in wanted if r not in fetched):
            name = _derived_env_name(repo, wanted[0], taken)
            taken.add(name)
            added.append((name, repo))
        kept[0] = JobCheckpoints(kept[0].job, kept[0].checkpoints + tuple(added))
        jobs = tuple(job for job in kept if job.checkpoints)
        errors = [
            ConfigError(
                KEY,
                f"download Job {job.job.name!r} ({job.job.path}) does not list its env "
                f"names as {env_name_tuple(upstream)} in its script, so the stack cannot "
                "change what it fetches",
                "leave modelCache.checkpoints unset for this revision",
            )
            for job in jobs
            if job.changed
            and not env_tuple_pattern(upstream := [n for n, _ in job.job.checkpoints]).search(job.job.script)
        ]
    repos = {repo for job in jobs for _, repo in job.checkpoints}
    size = cache.size if cache.size is not None else cache_size(facts.size, repos, sizes)
    return ModelCacheSelection(size, jobs), errors


def set_pull_secret(pod_spec: dict[str, Any], secret: Optional[str]) -> None:
    if "imagePullSecrets" not in pod_spec:
        return
    if secret:
        pod_spec["imagePullSecrets"] = [{"name": secret}]
    else:
        del pod_spec["imagePullSecrets"]


def render_model_cache_pvc(claim: dict[str, Any], size: str, storage_class: str, namespace: str) -> dict[str, Any]:
    """Upstream's claim at the resolved `size` (`ModelCacheSelection.size`)."""
    pvc = copy.deepcopy(claim)
    pvc["metadata"]["namespace"] = namespace
    pvc["spec"]["storageClassName"] = storage_class
    pvc["spec"]["resources"]["requests"]["storage"] = size
    return pvc


def render_download_job(
    fetch: JobCheckpoints,
    download: DownloadJobConfig,
    namespace: str,
    pull_secret: Optional[str],
    downloader: list[str],
) -> dict[str, Any]:
    """An upstream download Job fetching `fetch.checkpoints` under their env names, on `download.image` with the
    pinned `downloader` requirements (`small_downloader`): where the stack changed the set, the checkpoint env
    entries and the loop tuple of upstream's script are rewritten, nothing else."""
    job = copy.deepcopy(fetch.job.manifest)
    job["metadata"]["namespace"] = namespace
    for field in ("activeDeadlineSeconds", "backoffLimit"):
        if getattr(download, field) is not None:
            job["spec"][field] = getattr(download, field)
    pod_spec = job["spec"]["template"]["spec"]
    set_pull_secret(pod_spec, pull_secret)
    small_downloader(pod_spec, download.image, downloader)
    (container,) = pod_spec["containers"]
    if fetch.changed:
        upstream_names = {name for name, _ in fetch.job.checkpoints}
        env = container.get("env", [])
        first = next(i for i, e in enumerate(env) if e["name"] in upstream_names)
        others = [e for e in env if e["name"] not in upstream_names]
        selected = [{"name": name, "value": repo} for name, repo in fetch.checkpoints]
        container["env"] = others[:first] + selected + others[first:]
        loop = env_tuple_pattern([name for name, _ in fetch.job.checkpoints])
        container["args"] = [loop.sub(env_name_tuple(fetch.env_names), str(a), count=1) for a in container["args"]]
    mark_downloaded(container, fetch.env_names)
    return job


FSX_FIRST_STEP_GIB, FSX_STEP_GIB = 1200, 2400


def gib(quantity: str) -> Optional[float]:
    """`1200Gi` / `2.4Ti` -> GiB; None for units the model cache does not use."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Gi|Ti)", quantity)
    return float(match[1]) * (1024 if match[2] == "Ti" else 1) if match else None


@dataclass(frozen=True)
class StoragePlan:
    """What `ModelCacheStorage` builds: the configured file system, with the FSx zone and capacity resolved."""

    config: ModelCacheStorageConfig
    storage_class_name: str
    csi_addon: CsiAddon
    fsx_zone: Optional[str] = None  # the FSx file system's AZ
    fsx_capacity_gib: int = 0  # the FSx file system's capacity: the claim's size
    claim_name: str = MODEL_CACHE_CLAIM


def fsx_availability_zone(aws: AwsConfig) -> Optional[str]:
    """`modelCacheStorage.fsx.availabilityZone`, else the one AZ all managed GPU pools share."""
    if aws.modelCacheStorage and aws.modelCacheStorage.fsx.availabilityZone:
        return aws.modelCacheStorage.fsx.availabilityZone
    zones = {p.availabilityZone for p in aws.nodePools if p.managed and p.availabilityZone}
    return zones.pop() if len(zones) == 1 else None


def check_storage(cache: ModelCacheConfig, aws: AwsConfig, size: str, regions: AwsRegions) -> list[ConfigError]:
    """`size`: the model-cache claim's, resolved. EFS has no mount target in a Local Zone (and the mount helper's
    cross-zone fallback needs describe permissions a node role lacks: AWS-FACTS.md, corrections 2026-12), so a
    managed Local Zone pool needs FSx, or a class the user states mounts there."""
    storage, errors = aws.modelCacheStorage, []
    local = [
        (index, pool)
        for index, pool in enumerate(aws.nodePools)
        if pool.managed and pool.availabilityZone and regions.local_zone(aws.region, pool.availabilityZone)
    ]
    if storage is None:
        if local and not cache.mountsInLocalZones:
            index, pool = local[0]
            return [
                ConfigError(
                    f"aws.nodePools[{index}].availabilityZone",
                    f"pool {pool.name!r} is in Local Zone {pool.availabilityZone}, where the model cache's storage "
                    f"class {cache.storageClassName!r} (not created by this stack) may not mount: EFS "
                    "has mount targets only in Availability Zones",
                    "aws.modelCacheStorage.backend fsx, or modelCache.mountsInLocalZones: true for a class that does",
                )
            ]
        return []
    create = aws.cluster.create if aws.cluster else None
    if create is None:
        problem = "the stack creates model-cache storage only for the cluster it creates"
        errors.append(ConfigError("aws.modelCacheStorage", problem, "aws.cluster.create"))
    if storage.backend == "efs" and local:
        index, pool = local[0]
        errors.append(
            ConfigError(
                "aws.modelCacheStorage.backend",
                f"efs cannot be mounted by pool {pool.name!r} (aws.nodePools[{index}]) in Local Zone "
                f"{pool.availabilityZone}: EFS has mount targets only in Availability Zones",
                "fsx (its clients reach it across the VPC), or the Local Zone pool removed",
            )
        )
    unused = "efs" if storage.backend == "fsx" else "fsx"
    if unused in storage.model_fields_set:
        errors.append(ConfigError(f"aws.modelCacheStorage.{unused}", f"set, but backend is {storage.backend}"))
    if storage.backend == "fsx":
        capacity = gib(size)
        if capacity is None or not (capacity == FSX_FIRST_STEP_GIB or (capacity > 0 and capacity % FSX_STEP_GIB == 0)):
            problem = (
                f"FSx for Lustre PERSISTENT_2 capacity must be {FSX_FIRST_STEP_GIB}Gi "
                f"or a multiple of {FSX_STEP_GIB}Gi (got {size})"
            )
            errors.append(ConfigError("modelCache.size", problem))
        zones = sorted({p.availabilityZone for p in aws.nodePools if p.managed and p.availabilityZone})
        zone, key = fsx_availability_zone(aws), "aws.modelCacheStorage.fsx.availabilityZone"
        if zone is None:
            errors.append(ConfigError(key, f"GPU pools are in {zones or 'no AZ'}; name the AZ of the file system"))
        elif create and zone not in create.availabilityZones:
            errors.append(ConfigError(key, f"{zone!r} is not a cluster AZ", ", ".join(create.availabilityZones)))
    return errors


def plan_storage(aws: Optional[AwsConfig], storage_class: str, size: str, facts: AwsCatalog) -> Optional[StoragePlan]:
    """What `ModelCacheStorage` builds (the config must have passed `check_storage`)."""
    storage = aws.modelCacheStorage if aws else None
    if aws is None or storage is None:
        return None
    addons = facts.platform.eksAddons
    if storage.backend == "efs":
        return StoragePlan(storage, storage_class, addons.efsCsiDriver)
    return StoragePlan(storage, storage_class, addons.fsxCsiDriver, fsx_availability_zone(aws), int(gib(size) or 0))


PROGRAM_FILE = Path(__file__).resolve().parents[2] / "prewarm" / "prewarm.py"
PROGRAM_MOUNT = "/opt/nemotron-prewarm"
STATE_DIR = "/var/lib/nemotron-prewarm"
STATE_VOLUME = "prewarm-state"
PROGRAM_VOLUME = "prewarm-program"


@dataclass(frozen=True)
class PrewarmPool:
    """One DaemonSet. `memory_limit` must hold every checkpoint it warms: page cache is charged to the cgroup
    that reads it, so a smaller limit evicts what was just warmed."""

    name: str
    node_affinity: dict[str, Any]
    tolerations: list[dict[str, Any]]
    checkpoints: list[str]
    memory_limit: str
    images: list[str]  # every image of the workers placed here, which the pre-pull DaemonSet pulls
    pull_secrets: list[dict[str, Any]]  # the workers' imagePullSecrets


def _pool_name(node_affinity: dict[str, Any]) -> str:
    expressions = [
        e
        for term in node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for e in term.get("matchExpressions", [])
    ]
    by_key = {e["key"]: e["values"] for e in expressions}
    values = by_key.get(POOL_LABEL) or by_key.get(GPU_PRODUCT_LABEL) or ["gpu"]
    return re.sub(r"[^a-z0-9-]+", "-", "-".join(values).lower()).strip("-")[:40]


def prewarm_pools(
    prewarm: PrewarmConfig, dgds_with_checkpoints: list[tuple[dict[str, Any], list[str]]], sizes: CheckpointSizes
) -> list[PrewarmPool]:
    """The DaemonSets: the workers of the rendered DGDs grouped by node affinity, each one's memory limit the
    configured one, else computed from what it warms."""
    if not prewarm.enabled:
        return []
    groups: dict[str, dict[str, Any]] = {}
    for dgd, checkpoints in dgds_with_checkpoints:
        for component in dgd["spec"]["components"]:
            if component["type"] not in WORKER_COMPONENT_TYPES:
                continue
            pod = component["podTemplate"]["spec"]
            affinity = pod["affinity"]["nodeAffinity"]
            group = groups.setdefault(
                json.dumps(affinity, sort_keys=True),
                {"affinity": affinity, "tolerations": [], "checkpoints": [], "images": [], "secrets": []},
            )
            containers = pod.get("initContainers", []) + pod["containers"]
            group["images"] = list(dict.fromkeys(group["images"] + [c["image"] for c in containers]))
            group["secrets"] += [s for s in pod.get("imagePullSecrets", []) if s not in group["secrets"]]
            group["tolerations"] += [t for t in pod.get("tolerations", []) if t not in group["tolerations"]]
            group["checkpoints"] += [c for c in checkpoints if c not in group["checkpoints"]]
    pools = [
        PrewarmPool(
            _pool_name(g["affinity"]),
            g["affinity"],
            g["tolerations"],
            g["checkpoints"],
            limit if (limit := prewarm.memoryLimit) is not None else prewarm_memory_limit(g["checkpoints"], sizes),
            sorted(g["images"]),
            g["secrets"],
        )
        for g in groups.values()
    ]
    names = [p.name for p in pools]
    return [
        dataclasses.replace(p, name=f"{p.name}-{index}") if names.count(p.name) > 1 else p
        for index, p in enumerate(pools)
    ]


def host_state_dir(namespace: str) -> str:
    """Where one stack's prewarm writes its readiness files on a node. Per namespace, so two stacks on one
    cluster (which may warm different checkpoints) never read each other's readiness."""
    return f"{STATE_DIR}/{namespace}"


def state_volume(host_dir: str) -> dict[str, Any]:
    return {"name": STATE_VOLUME, "hostPath": {"path": host_dir, "type": "DirectoryOrCreate"}}


def gate_workers(dgd: dict[str, Any], wait_timeout_seconds: int, host_dir: str, checkpoints: list[str]) -> None:
    """Give every worker an initContainer that waits (bounded) until its checkpoints are downloaded and its
    node is warm, so its pod (and kubelet's pull of its image) can start while the download Job still runs.

    It runs `prewarm.py --wait-ready` in the worker's own image (no extra pull) against the download markers on
    the model cache (`mark_downloaded`) and the node-local readiness file, within one `wait_timeout_seconds`:
    without the markers it fails (the kubelet retries it: a worker never loads weights that are not there);
    downloaded but not warm, it lets the worker load cold rather than never start.
    """
    for component in dgd["spec"]["components"]:
        if component["type"] not in WORKER_COMPONENT_TYPES:
            continue
        pod = component["podTemplate"]["spec"]
        main = pod["containers"][0]
        program = {"name": PROGRAM_VOLUME, "configMap": {"name": PREWARM_PROGRAM_CONFIG_MAP}}
        (cache,) = [m for m in main["volumeMounts"] if m["name"] == MODEL_CACHE_CLAIM and "subPath" not in m]
        # Where the worker reads the hub cache (HF_HOME), mounted at the same path here.
        root = next((e["value"] for e in main.get("env", []) if e["name"] == "HF_HOME"), cache["mountPath"])
        wait = (
            f"python3 {PROGRAM_MOUNT}/prewarm.py --wait-ready --state-dir {STATE_DIR} --timeout {wait_timeout_seconds} "
            f"--cache-root {root} --models {','.join(checkpoints)}; status=$?; "
            f"if [ $status -eq 1 ]; then echo 'node not warm after {wait_timeout_seconds}s; loading cold'; exit 0; fi; "
            "exit $status"
        )
        pod["initContainers"] = [
            {
                "name": "wait-for-prewarm",
                "image": main["image"],
                "command": ["sh", "-c", wait],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "32Mi"},
                    "limits": {"cpu": "100m", "memory": "128Mi"},
                },
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [
                    {"name": STATE_VOLUME, "mountPath": STATE_DIR, "readOnly": True},
                    {"name": PROGRAM_VOLUME, "mountPath": PROGRAM_MOUNT, "readOnly": True},
                    {"name": MODEL_CACHE_CLAIM, "mountPath": cache["mountPath"], "readOnly": True},
                ],
            }
        ]
        pod["volumes"] = [*pod.get("volumes", []), state_volume(host_dir), program]


# prewarm/prewarm.py's DOWNLOAD_MARKER (it ships alone; tests/test_download_gate.py checks they agree).
DOWNLOAD_MARKER = ".nemotron-downloaded"
MARK_DOWNLOADED_HEADER = "# nemotron: verify each checkpoint, then mark it downloaded (the workers' gate waits for it)"


def mark_downloaded(container: dict[str, Any], env_names: list[str]) -> None:
    """Append to a download Job's `python3 -c` script (after upstream's loop has returned): for each
    checkpoint, check the snapshot refs/main names is complete (no dangling file, every shard its index
    names) and write DOWNLOAD_MARKER, naming that revision, beside it; else fail the Job."""
    check = "\n".join(
        (
            "",
            MARK_DOWNLOADED_HEADER,
            "import json as _json, os as _os",
            "from pathlib import Path as _Path",
            f"for _env_name in {env_name_tuple(env_names)}:",
            '    _repo = _Path(_os.environ["HF_HOME"], "hub", "models--" + _os.environ[_env_name].replace("/", "--"))',
            '    _revision = (_repo / "refs" / "main").read_text().strip()',
            '    _snapshot = _repo / "snapshots" / _revision',
            '    _files = [_p for _p in _snapshot.rglob("*") if not _p.is_dir()]',
            "    _missing = [_p for _p in _files if not _p.exists()]",
            '    for _index in _snapshot.rglob("*.index.json"):',
            '        _shards = set(_json.loads(_index.read_text()).get("weight_map", {}).values())',
            "        _missing += [_index.parent / _s for _s in sorted(_shards) if not (_index.parent / _s).is_file()]",
            "    if not _files or _missing:",
            '        raise SystemExit(f"{_repo.name}@{_revision}: incomplete after the download: {_missing[:3]}")',
            f'    _scratch = _repo / "{DOWNLOAD_MARKER}.tmp"',
            '    _scratch.write_text(_json.dumps({"revision": _revision, "files": len(_files)}))',
            f'    _os.replace(_scratch, _repo / "{DOWNLOAD_MARKER}")',
            '    print(f"Verified {_repo.name}@{_revision}: {len(_files)} files", flush=True)',
        )
    )
    container["args"] = [*container["args"][:-1], container["args"][-1] + check + "\n"]


GIB = 2**30
# Beside the page cache of the checkpoints it warms, a prewarm pod holds the Python interpreter and its
# read threads' buffers (well under 1 GiB); the rest is margin for a checkpoint a little larger than listed.
PREWARM_HEADROOM_GIB = 2


DOWNLOADER_DIR = "/opt/downloader"
DOWNLOADER_VOLUME = "downloader"


def small_downloader(pod_spec: dict[str, Any], image: str, requirements: list[str]) -> None:
    """The download Job's pod on a small Python image instead of the runtime image: an init container pip
    installs the hash-pinned downloader (catalog/downloader.yaml) into a volume the download container reads
    through PYTHONPATH; upstream's command, arguments and env (HF_XET_HIGH_PERFORMANCE) run unchanged."""
    (container,) = pod_spec["containers"]
    mount = {"name": DOWNLOADER_VOLUME, "mountPath": DOWNLOADER_DIR}
    install = "\n".join(
        (
            "set -eu",
            "cat > /tmp/requirements.txt <<'EOF'",
            *requirements,
            "EOF",
            "pip install --no-cache-dir --disable-pip-version-check --require-hashes --only-binary=:all: "
            f"--target {DOWNLOADER_DIR} -r /tmp/requirements.txt",
        )
    )
    pod_spec["initContainers"] = [
        {
            "name": "install-downloader",
            "image": image,
            "command": ["sh", "-c", install],
            "securityContext": container.get("securityContext", {}),
            "volumeMounts": [mount],
        }
    ]
    container["image"] = image
    container["env"] = [*container.get("env", []), {"name": "PYTHONPATH", "value": DOWNLOADER_DIR}]
    container["volumeMounts"] = [*container.get("volumeMounts", []), {**mount, "readOnly": True}]
    pod_spec["volumes"] = [*pod_spec.get("volumes", []), {"name": DOWNLOADER_VOLUME, "emptyDir": {}}]


def checkpoint_bytes(repositories: Iterable[str], sizes: CheckpointSizes) -> int:
    return sum(sizes.size(repository).bytes for repository in dict.fromkeys(repositories))


def prewarm_memory_limit(warmed: Iterable[str], sizes: CheckpointSizes) -> str:
    """A prewarm pod's memory limit when the stack sets none: the checkpoints it reads, plus headroom."""
    return f"{math.ceil(checkpoint_bytes(warmed, sizes) / GIB) + PREWARM_HEADROOM_GIB}Gi"


def cache_size(upstream_size: str, downloaded: Iterable[str], sizes: CheckpointSizes) -> str:
    """The model cache's size when the stack sets none: upstream's claim, raised to hold every checkpoint
    the download Jobs fetch when upstream's is smaller."""
    needed = checkpoint_bytes(downloaded, sizes)
    return upstream_size if quantity_value(upstream_size) >= needed else f"{math.ceil(needed / GIB)}Gi"


def _too_small(key: str, value: str, what: str, repositories: list[str], sizes: CheckpointSizes) -> list[ConfigError]:
    needed = checkpoint_bytes(repositories, sizes)
    if quantity_value(value) >= needed:
        return []
    estimated = sum(sizes.size(repository).estimate for repository in repositories)
    basis = f", {estimated} of them estimates" if estimated else ""
    problem = (
        f"{value} cannot hold the {len(repositories)} checkpoints {what}: {needed / BYTES_PER_GB:g} GB "
        f"(catalog/checkpoints.yaml{basis})"
    )
    return [ConfigError(key, problem, f">= {math.ceil(needed / GIB)}Gi")]


def check_checkpoint_room(
    cache: ModelCacheConfig,
    size: str,
    downloaded: Iterable[str],
    loaded_by_nodes: Mapping[str, Iterable[str]],
    sizes: CheckpointSizes,
) -> list[ConfigError]:
    """The cache's size against every checkpoint downloaded; a configured `prewarm.memoryLimit` against the
    checkpoints the targets on one kind of node load (what one prewarm pod reads: page cache is charged to its
    cgroup). Defaults are computed from the same sizes, so only a configured value can be too small."""
    errors = _too_small("modelCache.size", size, "the download Jobs fetch", list(dict.fromkeys(downloaded)), sizes)
    limit = cache.prewarm.memoryLimit
    if not cache.prewarm.enabled or limit is None:
        return errors
    for nodes, loaded in sorted(loaded_by_nodes.items()):
        what = f"a prewarm pod on {nodes} nodes reads"
        errors += _too_small("modelCache.prewarm.memoryLimit", limit, what, list(dict.fromkeys(loaded)), sizes)
    return errors
