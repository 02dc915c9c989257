"""A stand-in Dynamo operator and storage provisioner for the end-to-end harness.

    python -m tools.e2e.stand_in_operator --server URL --token T --deadline SECONDS [--storage-class NAME ...]

What it does, as the real operator does it (status fields from the DGD CRD in ../shared/reference):
- a DynamoGraphDeployment gets the finalizer `nvidia.com/finalizer`, one Deployment per component (the
  component's `podTemplate`, `replicas`, owned by the DGD) and a Service for its frontend;
- its status carries `state` (`pending` / `successful`), `observedGeneration` and a `Ready` condition that
  is True only when every component Deployment has rolled out the DGD's current generation;
- on deletion it deletes the component Deployments, waits until they are gone, then removes its finalizer.
Stopped (as the harness does to show what an absent operator means), nothing removes the finalizer.

The storage part binds each Pending claim of a stand-in StorageClass to a new PersistentVolume and deletes
volumes whose claim is gone (what a CSI provisioner such as the EFS driver does). It polls twice a second
and exits after `--deadline` seconds.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from typing import Any

from tools.e2e.kube import JSON, Kube, KubeError

FINALIZER = "nvidia.com/finalizer"
GRAPH_LABEL = "nvidia.com/dynamo-graph-deployment-name"
COMPONENT_LABEL = "nvidia.com/dynamo-component"
STAND_IN_PROVISIONER = "e2e.nemotron.test/stand-in"
MANAGER = "stand-in-dynamo-operator"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def component_name(dgd: JSON, component: JSON) -> str:
    return f"{dgd['metadata']['name']}-{component['name'].lower()}"


def _owner(dgd: JSON) -> list[JSON]:
    return [
        {
            "apiVersion": dgd["apiVersion"],
            "kind": dgd["kind"],
            "name": dgd["metadata"]["name"],
            "uid": dgd["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _component_labels(dgd: JSON, component: JSON) -> dict[str, str]:
    return {GRAPH_LABEL: dgd["metadata"]["name"], COMPONENT_LABEL: component["name"]}


def _owned_metadata(dgd: JSON, component: JSON) -> JSON:
    """What every object the operator makes for a component carries: its name, labels and owner."""
    return {
        "name": component_name(dgd, component),
        "namespace": dgd["metadata"]["namespace"],
        "labels": _component_labels(dgd, component),
        "ownerReferences": _owner(dgd),
    }


def component_deployment(dgd: JSON, component: JSON) -> JSON:
    labels = _component_labels(dgd, component)
    template = component.get("podTemplate") or {}
    metadata = dict(template.get("metadata") or {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    generation = {"nvidia.com/dgd-generation": str(dgd["metadata"]["generation"])}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**_owned_metadata(dgd, component), "annotations": generation},
        "spec": {
            "replicas": int(component.get("replicas", 1)),
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


def _rolled_out(deployment: JSON | None, generation: int) -> bool:
    if deployment is None:
        return False
    spec, status = deployment["spec"], deployment.get("status") or {}
    want = int(spec.get("replicas", 1))
    return (
        deployment["metadata"].get("annotations", {}).get("nvidia.com/dgd-generation") == str(generation)
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
        namespace, name = meta["namespace"], meta["name"]
        if meta.get("deletionTimestamp"):
            self._finalize(dgd)
            return
        if FINALIZER not in (meta.get("finalizers") or []):
            self.kube.patch(
                "DynamoGraphDeployment",
                name,
                {"metadata": {"finalizers": [*(meta.get("finalizers") or []), FINALIZER]}},
                namespace,
            )
        components = dgd["spec"].get("components") or []
        generation = int(meta["generation"])
        if self.applied.get(meta["uid"]) != generation:
            for component in components:
                self.kube.apply(component_deployment(dgd, component), MANAGER)
                if component.get("type") == "frontend":
                    self.kube.apply(frontend_service(dgd, component), MANAGER)
            self.applied[meta["uid"]] = generation
        children = {d["metadata"]["name"]: d for d in self.kube.list("Deployment", namespace, f"{GRAPH_LABEL}={name}")}
        waiting = [c["name"] for c in components if not _rolled_out(children.get(component_name(dgd, c)), generation)]
        ready = not waiting
        status = dgd.get("status") or {}
        condition: JSON = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
        if (
            status.get("observedGeneration") == generation
            and condition.get("status") == str(ready)
            and status.get("state") == ("successful" if ready else "pending")
        ):
            return
        self.kube.patch(
            "DynamoGraphDeployment",
            name,
            {
                "status": {
                    "state": "successful" if ready else "pending",
                    "observedGeneration": generation,
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": str(ready),
                            "observedGeneration": generation,
                            "lastTransitionTime": _now(),
                            "reason": "all_resources_are_ready" if ready else "some_resources_are_not_ready",
                            "message": "All resources are ready" if ready else f"waiting for: {', '.join(waiting)}",
                        }
                    ],
                }
            },
            namespace,
            subresource="status",
        )

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
            self.kube.patch("DynamoGraphDeployment", name, {"metadata": {"finalizers": finalizers}}, namespace)
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
        except KubeError as error:
            print(f"stand-in operator: {error}", file=sys.stderr, flush=True)
        except OSError as error:  # API server restarting or stopped: try again
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
