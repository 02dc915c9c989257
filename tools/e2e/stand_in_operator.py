"""A stand-in Dynamo operator and storage provisioner for the end-to-end harness.

    python -m tools.e2e.stand_in_operator --server URL --token T --deadline SECONDS [--storage-class NAME ...]

What it does, as the real operator does it (status fields from the DGD CRD in ../shared/reference; the
rollout from ai-dynamo/dynamo docs/pages/kubernetes/rolling-update.md, read 2026-12-02):
- a DynamoGraphDeployment gets the finalizer `nvidia.com/finalizer`, one Deployment per component (the
  component's `podTemplate`, `replicas`, owned by the DGD) and a Service for its frontend;
- worker components (`worker`, `prefill`, `decode`) are Deployment generations named after a hash of every
  worker's spec but its replicas (`<dgd>-<component>-<hash>`, label `nvidia.com/dynamo-worker-hash`, the DGD
  annotation `nvidia.com/current-worker-hash`). A spec change starts a managed rolling update: the new
  generation scales up at most `maxSurge` (25% of replicas, rounded up) ahead of the old one, and the old
  one scales down only as far as `maxUnavailable` (25%, rounded down) allows, so with fewer than four
  replicas the new generation starts one worker ahead and needs a spare worker's GPUs; the old generation is
  deleted once the new one is Ready (`status.rollingUpdate`). A replicas change scales the current
  generation in place;
- its status carries `state` (`pending` / `successful`, `failed` with reason
  `failed_to_reconcile_the_resources` and the error as message when applying its objects fails),
  `observedGeneration` and a `Ready` condition that is True only when every component runs the DGD's
  current generation and no old worker generation is left;
- on deletion it deletes the component Deployments, waits until they are gone, then removes its finalizer.
Stopped (as the harness does to show what an absent operator means), nothing removes the finalizer.

The storage part binds each Pending claim of a stand-in StorageClass to a new PersistentVolume and deletes
volumes whose claim is gone (what a CSI provisioner such as the EFS driver does). It polls twice a second
and exits after `--deadline` seconds.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import sys
import time
from typing import Any, Optional

from tools.e2e.kube import JSON, Kube, KubeError

FINALIZER = "nvidia.com/finalizer"
GRAPH_LABEL = "nvidia.com/dynamo-graph-deployment-name"
COMPONENT_LABEL = "nvidia.com/dynamo-component"
WORKER_HASH_LABEL = "nvidia.com/dynamo-worker-hash"
WORKER_HASH_ANNOTATION = "nvidia.com/current-worker-hash"
GENERATION_ANNOTATION = "nvidia.com/dgd-generation"
WORKER_TYPES = ("worker", "prefill", "decode")  # the component types a managed rolling update replaces
FAILED_REASON = "failed_to_reconcile_the_resources"  # the DGD controller's reason when a reconcile errs
STAND_IN_PROVISIONER = "e2e.nemotron.test/stand-in"
MANAGER = "stand-in-dynamo-operator"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _is_worker(component: JSON) -> bool:
    return component.get("type") in WORKER_TYPES


def worker_hash(dgd: JSON) -> str:
    """The hash of every worker's spec but its replicas and scaling adapter (what a rolling update keys on)."""
    specs = [
        {k: v for k, v in c.items() if k not in ("replicas", "scalingAdapter")}
        for c in dgd["spec"].get("components") or []
        if _is_worker(c)
    ]
    return hashlib.sha256(json.dumps(specs, sort_keys=True).encode()).hexdigest()[:8]


def component_name(dgd: JSON, component: JSON) -> str:
    base = f"{dgd['metadata']['name']}-{component['name'].lower()}"
    return f"{base}-{worker_hash(dgd)}" if _is_worker(component) else base


def _component_labels(dgd: JSON, component: JSON) -> dict[str, str]:
    labels = {GRAPH_LABEL: dgd["metadata"]["name"], COMPONENT_LABEL: component["name"]}
    return {**labels, WORKER_HASH_LABEL: worker_hash(dgd)} if _is_worker(component) else labels


def _owned_metadata(dgd: JSON, component: JSON) -> JSON:
    """What every object the operator makes for a component carries: its name, labels and owner."""
    meta = dgd["metadata"]
    owner = {"apiVersion": dgd["apiVersion"], "kind": dgd["kind"], "name": meta["name"], "uid": meta["uid"]}
    return {
        "name": component_name(dgd, component),
        "namespace": meta["namespace"],
        "labels": _component_labels(dgd, component),
        "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
    }


def component_deployment(dgd: JSON, component: JSON, replicas: Optional[int] = None) -> JSON:
    """The component's Deployment; `replicas` while a rolling update moves a worker between generations."""
    labels = _component_labels(dgd, component)
    template = component.get("podTemplate") or {}
    metadata = dict(template.get("metadata") or {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    generation = {GENERATION_ANNOTATION: str(dgd["metadata"]["generation"])}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**_owned_metadata(dgd, component), "annotations": generation},
        "spec": {
            "replicas": int(component.get("replicas", 1)) if replicas is None else replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": metadata, "spec": template.get("spec") or {"containers": []}},
        },
    }


def frontend_service(dgd: JSON, component: JSON) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _owned_metadata(dgd, component),
        "spec": {
            "selector": _component_labels(dgd, component),
            "ports": [{"name": "http", "port": 8000, "targetPort": 8000}],
        },
    }


def _api_message(error: KubeError) -> str:
    """The API server's own message for a refused write (a Status object's `message`), as err.Error() gives it."""
    try:
        return str(json.loads(error.body)["message"])
    except (ValueError, KeyError, TypeError):
        return str(error)


def surge_and_unavailable(replicas: int) -> tuple[int, int]:
    """The defaults (25% each; surge rounded up, unavailable down), at least one of them above zero."""
    surge, unavailable = math.ceil(replicas * 0.25), math.floor(replicas * 0.25)
    return (surge or 1, unavailable) if surge + unavailable == 0 else (surge, unavailable)


def rolling_step(desired: int, new: Optional[JSON], old: list[JSON]) -> tuple[int, list[int]]:
    """One step of the managed rolling update: (the new generation's replicas, each old generation's)."""
    surge, unavailable = surge_and_unavailable(desired)
    old_replicas = [int(d["spec"].get("replicas", 0)) for d in old]
    new_replicas = int(new["spec"].get("replicas", 0)) if new else 0
    target_new = min(desired, max(new_replicas, desired + surge - sum(old_replicas)))
    new_ready = int((new or {}).get("status", {}).get("readyReplicas", 0)) if new else 0
    old_ready = sum(int((d.get("status") or {}).get("readyReplicas", 0)) for d in old)
    removable = max(0, new_ready + old_ready - (desired - unavailable))
    scaled = []
    for replicas in old_replicas:
        cut = min(replicas, removable)
        scaled.append(replicas - cut)
        removable -= cut
    return target_new, scaled


def _rolled_out(deployment: JSON | None, generation: int) -> bool:
    if deployment is None:
        return False
    spec, status = deployment["spec"], deployment.get("status") or {}
    want = int(spec.get("replicas", 1))
    return (
        deployment["metadata"].get("annotations", {}).get(GENERATION_ANNOTATION) == str(generation)
        and status.get("observedGeneration", 0) >= deployment["metadata"]["generation"]
        and int(status.get("updatedReplicas", 0)) == want
        and int(status.get("readyReplicas", 0)) == want
        and int(status.get("replicas", 0)) == want
    )


class Operator:
    def __init__(self, kube: Kube, storage_classes: list[str]):
        self.kube = kube
        self.storage_classes = set(storage_classes)
        self.applied: dict[str, int] = {}  # DGD uid -> generation whose children were applied

    # --- DynamoGraphDeployments -----------------------------------------------------------------
    def reconcile_graph(self, dgd: JSON) -> None:
        meta = dgd["metadata"]
        if meta.get("deletionTimestamp"):
            self._finalize(dgd)
            return
        if FINALIZER not in (meta.get("finalizers") or []):
            self._patch(dgd, {"metadata": {"finalizers": [*(meta.get("finalizers") or []), FINALIZER]}})
        try:
            waiting, rolling = self._reconcile_children(dgd)
        except KubeError as error:
            if error.status in (404, 409):  # gone or changed meanwhile: next round
                raise
            self._set_status(dgd, "failed", FAILED_REASON, _api_message(error), None)
            return
        ready = not waiting
        message = "All resources are ready" if ready else f"waiting for: {', '.join(waiting)}"
        reason = "all_resources_are_ready" if ready else "some_resources_are_not_ready"
        self._set_status(dgd, "successful" if ready else "pending", reason, message, rolling)

    def _reconcile_children(self, dgd: JSON) -> tuple[list[str], Optional[JSON]]:
        """Applies the DGD's objects and moves its rolling update a step: (components not ready, rollingUpdate)."""
        meta = dgd["metadata"]
        namespace, name, generation = meta["namespace"], meta["name"], int(meta["generation"])
        components = dgd["spec"].get("components") or []
        if self.applied.get(meta["uid"]) != generation:
            for component in components:
                if not _is_worker(component):
                    self.kube.apply(component_deployment(dgd, component), MANAGER)
                if component.get("type") == "frontend":
                    self.kube.apply(frontend_service(dgd, component), MANAGER)
            if meta.get("annotations", {}).get(WORKER_HASH_ANNOTATION) != worker_hash(dgd):
                self._patch(dgd, {"metadata": {"annotations": {WORKER_HASH_ANNOTATION: worker_hash(dgd)}}})
            self.applied[meta["uid"]] = generation
        children = {d["metadata"]["name"]: d for d in self.kube.list("Deployment", namespace, f"{GRAPH_LABEL}={name}")}
        old_generations = 0
        for component in (c for c in components if _is_worker(c)):
            current = component_name(dgd, component)
            old = [
                d
                for n, d in sorted(children.items())
                if n != current and d["metadata"]["labels"].get(COMPONENT_LABEL) == component["name"]
            ]
            old_generations += len(old)
            self._roll_worker(dgd, component, children.get(current), old)
        waiting = [c["name"] for c in components if not _rolled_out(children.get(component_name(dgd, c)), generation)]
        status = dgd.get("status") or {}
        previous: JSON = status.get("rollingUpdate") or {}
        if old_generations:
            rolling = {"phase": "InProgress", "startTime": previous.get("startTime") or _now()}
            return waiting or ["the old worker generation"], rolling
        if previous.get("phase") == "InProgress" and not waiting:
            return waiting, {**previous, "phase": "Completed", "endTime": _now()}
        return waiting, previous or None

    def _roll_worker(self, dgd: JSON, component: JSON, new: Optional[JSON], old: list[JSON]) -> None:
        desired = int(component.get("replicas", 1))
        generation = str(dgd["metadata"]["generation"])
        target_new, scaled = rolling_step(desired, new, old) if old else (desired, [])
        applied = (new or {}).get("metadata", {}).get("annotations", {}).get(GENERATION_ANNOTATION)
        if new is None or applied != generation or int(new["spec"].get("replicas", 0)) != target_new:
            self.kube.apply(component_deployment(dgd, component, target_new), MANAGER)
        new_ready = int(((new or {}).get("status") or {}).get("readyReplicas", 0))
        for deployment, replicas in zip(old, scaled, strict=True):
            meta = deployment["metadata"]
            if replicas == 0 and new_ready >= desired:
                self.kube.delete("Deployment", meta["name"], meta["namespace"])
            elif replicas != int(deployment["spec"].get("replicas", 0)):
                self.kube.patch("Deployment", meta["name"], {"spec": {"replicas": replicas}}, meta["namespace"])

    def _set_status(self, dgd: JSON, state: str, reason: str, message: str, rolling: Optional[JSON]) -> None:
        generation = int(dgd["metadata"]["generation"])
        status = dgd.get("status") or {}
        condition: JSON = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
        ready_fields = {"status": str(state == "successful"), "reason": reason, "message": message}
        fields = {"state": state, "observedGeneration": generation, "rollingUpdate": rolling}
        if {k: status.get(k) for k in fields} == fields and {k: condition.get(k) for k in ready_fields} == ready_fields:
            return
        ready = {"type": "Ready", **ready_fields, "observedGeneration": generation, "lastTransitionTime": _now()}
        update = {k: v for k, v in {**fields, "conditions": [ready]}.items() if v is not None}
        self._patch(dgd, {"status": update}, "status")

    def _patch(self, dgd: JSON, patch: JSON, subresource: str = "") -> None:
        meta = dgd["metadata"]
        self.kube.patch("DynamoGraphDeployment", meta["name"], patch, meta["namespace"], subresource)

    def _finalize(self, dgd: JSON) -> None:
        meta = dgd["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        children = self.kube.list("Deployment", namespace, f"{GRAPH_LABEL}={name}")
        for child in children:
            if not child["metadata"].get("deletionTimestamp"):
                self.kube.delete("Deployment", child["metadata"]["name"], namespace)
        if children:
            return
        finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
        if FINALIZER in (meta.get("finalizers") or []):
            self._patch(dgd, {"metadata": {"finalizers": finalizers}})
        self.applied.pop(meta["uid"], None)

    # --- storage ---------------------------------------------------------------------------------
    def reconcile_storage(self) -> None:
        for claim in self.kube.list("PersistentVolumeClaim"):
            spec, meta = claim["spec"], claim["metadata"]
            if spec.get("storageClassName") not in self.storage_classes or spec.get("volumeName"):
                continue
            if (claim.get("status") or {}).get("phase") != "Pending" or meta.get("deletionTimestamp"):
                continue
            volume = f"pv-{meta['namespace']}-{meta['name']}"[:63]
            if self.kube.get("PersistentVolume", volume):
                continue
            self.kube.create(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": volume, "labels": {"e2e.nemotron.test/stand-in": "true"}},
                    "spec": {
                        "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                        "accessModes": spec.get("accessModes") or ["ReadWriteMany"],
                        "storageClassName": spec["storageClassName"],
                        "persistentVolumeReclaimPolicy": "Retain",
                        "claimRef": {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
                        "hostPath": {"path": f"/tmp/e2e-volumes/{volume}"},
                    },
                }
            )
        for released in self.kube.list("PersistentVolume", selector="e2e.nemotron.test/stand-in=true"):
            if (released.get("status") or {}).get("phase") == "Released":
                self.kube.delete("PersistentVolume", released["metadata"]["name"])

    def run_once(self) -> None:
        self.reconcile_storage()
        for dgd in self.kube.list("DynamoGraphDeployment"):
            try:
                self.reconcile_graph(dgd)
            except KubeError as error:
                if error.status not in (404, 409):  # gone or changed meanwhile: next round
                    raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--deadline", type=float, default=1800)
    parser.add_argument("--storage-class", action="append", default=[])
    args = parser.parse_args(argv)
    operator = Operator(Kube(args.server, args.token), args.storage_class)
    end = time.monotonic() + args.deadline
    while time.monotonic() < end:
        try:
            operator.run_once()
        except (KubeError, OSError) as error:  # OSError: the API server restarting or stopped: try again
            print(f"stand-in operator: {error}", file=sys.stderr, flush=True)
        time.sleep(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def stand_in_storage_class(name: str) -> dict[str, Any]:
    """A StorageClass the stand-in provisions (the dev stack names an existing class such as `efs-ap`)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": STAND_IN_PROVISIONER,
        "volumeBindingMode": "Immediate",
        "reclaimPolicy": "Delete",
    }
