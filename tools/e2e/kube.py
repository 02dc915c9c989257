"""A small Kubernetes REST client for the end-to-end harness (the standard library and a bearer token).

The harness's API server listens on loopback with a self-signed certificate and a static admin token, so
this client skips certificate verification; it is never pointed anywhere else.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Optional

JSON = dict[str, Any]

# Where each kind the harness touches lives: (group/version path prefix, plural, namespaced).
KINDS: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Service": ("/api/v1", "services", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Secret": ("/api/v1", "secrets", True),
    "PersistentVolume": ("/api/v1", "persistentvolumes", False),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "CronJob": ("/apis/batch/v1", "cronjobs", True),
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses", False),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "DynamoGraphDeployment": ("/apis/nvidia.com/v1beta1", "dynamographdeployments", True),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "HorizontalPodAutoscaler": ("/apis/autoscaling/v2", "horizontalpodautoscalers", True),
    "ValidatingWebhookConfiguration": (
        "/apis/admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        False,
    ),
    "PrometheusRule": ("/apis/monitoring.coreos.com/v1", "prometheusrules", True),
    "ServiceMonitor": ("/apis/monitoring.coreos.com/v1", "servicemonitors", True),
    "PodMonitor": ("/apis/monitoring.coreos.com/v1", "podmonitors", True),
}


class KubeError(Exception):
    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Kube:
    server: str
    token: str

    def _path(self, kind: str, namespace: Optional[str] = None, name: Optional[str] = None) -> str:
        prefix, plural, namespaced = KINDS[kind]
        where = f"/namespaces/{namespace}" if namespaced and namespace else ""
        return f"{prefix}{where}/{plural}" + (f"/{name}" if name else "")

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            with urllib.request.urlopen(req, context=context, timeout=30) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise KubeError(error.code, error.read().decode(errors="replace")) from None
        return json.loads(text) if text.lstrip().startswith(("{", "[")) else text or None

    def list(self, kind: str, namespace: Optional[str] = None, selector: str = "") -> list[JSON]:
        query = "?" + urllib.parse.urlencode({"labelSelector": selector}) if selector else ""
        return list(self.request("GET", self._path(kind, namespace) + query).get("items") or [])

    def get(self, kind: str, name: str, namespace: Optional[str] = None) -> Optional[JSON]:
        try:
            return dict(self.request("GET", self._path(kind, namespace, name)))
        except KubeError as error:
            if error.status == 404:
                return None
            raise

    def create(self, obj: JSON) -> JSON:
        namespace = obj.get("metadata", {}).get("namespace")
        return dict(self.request("POST", self._path(obj["kind"], namespace), obj))

    def apply(self, obj: JSON, manager: str = "nemotron-e2e") -> JSON:
        """Server-side apply, as `kubectl apply --server-side --force-conflicts` does."""
        meta = obj["metadata"]
        path = self._path(obj["kind"], meta.get("namespace"), meta["name"])
        query = "?" + urllib.parse.urlencode({"fieldManager": manager, "force": "true"})
        return dict(self.request("PATCH", path + query, obj, "application/apply-patch+yaml"))

    def patch(self, kind: str, name: str, patch: JSON, namespace: Optional[str] = None, subresource: str = "") -> JSON:
        path = self._path(kind, namespace, name) + (f"/{subresource}" if subresource else "")
        return dict(self.request("PATCH", path, patch, "application/merge-patch+json"))

    def delete(self, kind: str, name: str, namespace: Optional[str] = None) -> None:
        try:
            self.request("DELETE", self._path(kind, namespace, name), {"propagationPolicy": "Background"})
        except KubeError as error:
            if error.status != 404:
                raise

    def wait_for(self, what: str, check: Any, timeout: float = 60.0, interval: float = 0.5) -> Any:
        """Polls `check()` until it returns something truthy; raises TimeoutError naming `what`."""
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(interval)
