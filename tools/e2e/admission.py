"""The Dynamo operator's DGD admission rules as a validating webhook on loopback, for the end-to-end harness.

The rules are data (tools/e2e/admission_rules.yaml: upstream file, function and commit of each, and the
field error the real webhook returns); `refusals` evaluates them on an AdmissionReview's old and new
object; `Webhook` serves them over TLS on 127.0.0.1 with a self-signed certificate made at start, and
`webhook_configuration` is the ValidatingWebhookConfiguration that points the API server at it (its
caBundle). The harness starts it before the operator and stops it in `stop()`.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any, Optional

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

JSON = dict[str, Any]
RULES_FILE = Path(__file__).with_name("admission_rules.yaml")
WEBHOOK_NAME = "vdynamographdeployment.nvidia.com"
PATH = "/validate-nvidia-com-v1beta1-dynamographdeployment"
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Rule:
    id: str
    operations: tuple[str, ...]
    check: str
    path: str
    type: str
    detail: str
    spec: JSON  # the rule's whole entry (its check's own parameters: field, container, versionPattern)


def load_rules(path: Path = RULES_FILE) -> tuple[bool, tuple[Rule, ...]]:
    """(whether Grove is enabled in the stand-in operator's configuration, the rules)."""
    data = yaml.safe_load(path.read_text())
    rules = tuple(
        Rule(r["id"], tuple(r["operations"]), r["check"], r["path"], r["type"], " ".join(r["detail"].split()), r)
        for r in data["rules"]
    )
    return bool(data["groveEnabled"]), rules


def _components(dgd: Optional[JSON]) -> list[JSON]:
    return list(((dgd or {}).get("spec") or {}).get("components") or [])


def _main_image(component: JSON, container: str) -> str:
    containers = ((component.get("podTemplate") or {}).get("spec") or {}).get("containers") or []
    return str(next((c.get("image") or "" for c in containers if c.get("name") == container), ""))


def _image_tag(image: str) -> str:
    """runtimeversion.imageTag: the text after the last colon of the reference, digest removed."""
    ref = image.strip().split("@", 1)[0]
    colon = ref.rfind(":")
    return ref[colon + 1 :] if colon > ref.rfind("/") else ""


def _multinode(component: JSON) -> bool:
    """IsMultinode: multinode set with more than one node (the CRD defaults nodeCount to 2)."""
    multinode = component.get("multinode")
    return multinode is not None and int(multinode.get("nodeCount", 2)) > 1


# Each check: (rule, new DGD, old DGD or None, grove enabled) -> (component index or None, value) per refusal.
Finding = tuple[Optional[int], Any]
Check = Callable[[Rule, JSON, Optional[JSON], bool], Iterator[Finding]]


def _component_field_without_grove(rule: Rule, new: JSON, old: Optional[JSON], grove: bool) -> Iterator[Finding]:
    for index, component in enumerate(_components(new)):
        if component.get(rule.spec["field"]) is not None and not grove:
            yield index, None


def _spec_field_without_grove(rule: Rule, new: JSON, old: Optional[JSON], grove: bool) -> Iterator[Finding]:
    if (new.get("spec") or {}).get(rule.spec["field"]) and not grove:
        yield None, None


def _no_components(rule: Rule, new: JSON, old: Optional[JSON], grove: bool) -> Iterator[Finding]:
    if not _components(new):
        yield None, None


def _unresolvable_runtime_version(rule: Rule, new: JSON, old: Optional[JSON], grove: bool) -> Iterator[Finding]:
    container, pattern = rule.spec["container"], re.compile(rule.spec["versionPattern"])
    previous = {c.get("name"): c for c in _components(old)}
    for index, component in enumerate(_components(new)):
        image, override = _main_image(component, container), component.get("runtimeVersionOverride") or ""
        if not image or override or pattern.match(_image_tag(image).strip()):
            continue
        before = previous.get(component.get("name")) or {}
        if before and (_main_image(before, container), before.get("runtimeVersionOverride") or "") == (image, ""):
            continue  # the ratchet: an unchanged legacy tuple stays admitted
        yield index, None


def _paired(new: JSON, old: Optional[JSON]) -> Iterator[tuple[int, JSON, JSON]]:
    """(index in new, new component, old component) for each component of the same name."""
    previous = {c.get("name"): c for c in _components(old)}
    for index, component in enumerate(_components(new)):
        if component.get("name") in previous:
            yield index, component, previous[component.get("name")]


def _replicas_with_scaling_adapter(rule: Rule, new: JSON, old: Optional[JSON], grove: bool) -> Iterator[Finding]:
    for index, after, before in _paired(new, old):
        adapter = after.get("scalingAdapter") is not None or before.get("scalingAdapter") is not None
        if adapter and int(after.get("replicas", 1)) != int(before.get("replicas", 1)):
            yield index, None


def _multinode_toggled(rule: Rule, new: JSON, old: Optional[JSON], grove: bool) -> Iterator[Finding]:
    for index, after, before in _paired(new, old):
        if _multinode(after) != _multinode(before):
            yield index, after.get("multinode")


def _topology_constraint_changed(rule: Rule, new: JSON, old: Optional[JSON], grove: bool) -> Iterator[Finding]:
    for index, after, before in _paired(new, old):
        constraint, previous = after.get("topologyConstraint"), before.get("topologyConstraint")
        if constraint is None and previous is None:
            continue
        if constraint is None or previous is None or constraint.get("packDomain") != previous.get("packDomain"):
            yield index, constraint


CHECKS: dict[str, Check] = {
    "component-field-without-grove": _component_field_without_grove,
    "spec-field-without-grove": _spec_field_without_grove,
    "no-components": _no_components,
    "unresolvable-runtime-version": _unresolvable_runtime_version,
    "replicas-with-scaling-adapter": _replicas_with_scaling_adapter,
    "multinode-toggled": _multinode_toggled,
    "topology-constraint-changed": _topology_constraint_changed,
}


def refusals(operation: str, new: JSON, old: Optional[JSON], grove: bool, rules: tuple[Rule, ...]) -> list[str]:
    """The field errors the real webhook returns for this request, as field.Error prints them."""
    errors = []
    for rule in rules:
        if operation not in rule.operations:
            continue
        for index, value in CHECKS[rule.check](rule, new, old if operation == "UPDATE" else None, grove):
            shown = f" {json.dumps(value)}:" if rule.type == "Invalid value" else ""
            errors.append(f"{rule.path.format(index=index)}: {rule.type}:{shown} {rule.detail}")
    return errors


def invalid_message(name: str, errors: list[str]) -> str:
    """k8serrors.NewInvalid's message: one error bare, several in brackets."""
    listed = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f'DynamoGraphDeployment.nvidia.com "{name}" is invalid: {listed}'


def review_response(review: JSON, grove: bool, rules: tuple[Rule, ...]) -> JSON:
    request = review["request"]
    new, old = request.get("object") or {}, request.get("oldObject")
    # A terminating DGD gets only the metadata rules (ValidateTerminatingUpdate): its finalizer must go.
    terminating = bool((new.get("metadata") or {}).get("deletionTimestamp"))
    errors = [] if terminating else refusals(request["operation"], new, old, grove, rules)
    response: JSON = {"uid": request["uid"], "allowed": not errors}
    if errors:
        name = (new.get("metadata") or {}).get("name", "")
        response["status"] = {"code": 422, "reason": "Invalid", "message": invalid_message(name, errors)}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def self_signed(work: Path) -> tuple[Path, Path, bytes]:
    """(certificate file, key file, PEM) for 127.0.0.1, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "stand-in-dynamo-webhook")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))  # any skew between this process and the API server
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(IPv4Address(LOOPBACK))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_file, key_file = work / "webhook.crt", work / "webhook.key"
    cert_file.write_bytes(pem)
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file, pem


class Webhook:
    """The rules served on 127.0.0.1 over TLS in a thread of the harness's process, until `stop()`."""

    def __init__(self, work: Path, rules_file: Path = RULES_FILE):
        self.grove, self.rules = load_rules(rules_file)
        cert_file, key_file, self.ca_pem = self_signed(work)
        grove, rules = self.grove, self.rules

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body = json.dumps(review_response(review, grove, rules)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # quiet: the harness logs elsewhere
                return

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, name="dgd-webhook", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.server.server_address[1]}{PATH}"

    def configuration(self) -> JSON:
        """The ValidatingWebhookConfiguration for DGD creates and updates (not its status), failing closed."""
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "stand-in-dynamo-operator"},
            "webhooks": [
                {
                    "name": WEBHOOK_NAME,
                    "clientConfig": {"url": self.url, "caBundle": base64.b64encode(self.ca_pem).decode()},
                    "rules": [
                        {
                            "apiGroups": ["nvidia.com"],
                            "apiVersions": ["v1beta1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["dynamographdeployments"],
                            "scope": "Namespaced",
                        }
                    ],
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 10,
                }
            ],
        }

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
