"""secret-handling: the Hugging Face token and every other credential reach pods only through a Secret
reference, never as a literal in a resource's inputs.

Every resource except the secret stores (a Kubernetes Secret's own data, Secrets Manager secret versions,
SecureString SSM parameters) and provider configurations is walked:
- container env: a credential-named variable (`*TOKEN*`, `*KEY*`, `*SECRET*`, `*PASSWORD*`, ...) with a
  literal `value`, or read from a ConfigMap, is a violation; `valueFrom.secretKeyRef` / `envFrom.secretRef`
  is the way;
- container args/command: a credential flag (`--hf-token`, `--api-key`) with a literal value;
- any other mapping (ConfigMap data, Helm values, a SageMaker model's environment): a credential-named key
  with a literal string value;
- any string anywhere that looks like a credential (`hf_...` tokens, `AKIA...` AWS keys, `nvapi-...` NGC
  keys, GitHub tokens, private keys).
A Pulumi secret written into such a field is still a literal in the pod spec or the cloud resource, so it
is reported too. Messages name the field, never the value.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

from pulumi_policy import ReportViolation, ResourceValidationArgs

from ..values import UNKNOWN, dig, plain

SECRET_STORES = frozenset({"kubernetes:core/v1:Secret", "aws:secretsmanager/secretVersion:SecretVersion"})
SSM_PARAMETER = "aws:ssm/parameter:Parameter"
CREDENTIAL_PATTERNS = [
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("an NGC API key", re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}")),
    ("a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
]
CREDENTIAL_WORDS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "APIKEY"})
# `KEY` alone is structural in Kubernetes (`configMapKeyRef.key`, tolerations) and in AWS (`hashKey`,
# `s3Key`); outside env-var names it is a credential only after one of these.
KEY_QUALIFIERS = frozenset({"API", "ACCESS", "SECRET", "PRIVATE", "AUTH", "SIGNING", "CLIENT"})
# Names that end like this hold a reference to a credential, not the credential.
REFERENCE_SUFFIXES = frozenset({
    "ARN", "ID", "IDS", "NAME", "REF", "PATH", "FILE", "DIR", "URL", "URI", "ENDPOINT", "TYPE", "MODE", "SECONDS",
    "TTL", "ENABLED", "HEADER", "ALGORITHM", "REGION", "PREFIX", "LENGTH", "SIZE",
})
NOT_A_CREDENTIAL_PREFIXES = frozenset({"EXISTING", "PUBLIC"})
ENV_STYLE = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.upper() for w in re.split(r"[^A-Za-z0-9]+|\s", spaced) if w]


def credential_name(name: str) -> bool:
    """Does this env var, key or flag name say it holds a credential?"""
    words = _words(name.lstrip("-"))
    if not words or words[-1] in REFERENCE_SUFFIXES or words[0] in NOT_A_CREDENTIAL_PREFIXES:
        return False
    if CREDENTIAL_WORDS.intersection(words):
        return True
    if ENV_STYLE.match(name):
        return "KEY" in words
    return any(word == "KEY" and index > 0 and words[index - 1] in KEY_QUALIFIERS for index, word in enumerate(words))


def literal(value: Any) -> bool:
    """A non-empty string that is not a reference to something else (`$(VAR)`, `${...}`, `{{...}}`, an ARN)."""
    return (isinstance(value, str) and value.strip() != ""
            and not value.startswith(("$(", "${", "{{", "arn:")))


def _env_problems(entries: list[Any], path: str) -> Iterator[str]:
    for entry in entries:
        name = dig(entry, "name")
        if not isinstance(name, str) or not credential_name(name):
            continue
        if literal(dig(entry, "value")):
            yield f"{path}[{name}] has a literal value; reference a Secret with valueFrom.secretKeyRef"
        elif dig(entry, "valueFrom", "configMapKeyRef") not in (None, UNKNOWN):
            yield f"{path}[{name}] is read from a ConfigMap; reference a Secret with valueFrom.secretKeyRef"


def _argument_problems(arguments: list[Any], path: str) -> Iterator[str]:
    for index, argument in enumerate(arguments):
        if not isinstance(argument, str) or not argument.startswith("--"):
            continue
        flag, has_value, value = argument.partition("=")
        if not has_value:
            value = arguments[index + 1] if index + 1 < len(arguments) else None
        if credential_name(flag) and literal(value) and not str(value).startswith("--"):
            yield f"{path}: {flag} has a literal value; pass it from a Secret-backed env var as $(VAR)"


def _problems(value: Any, path: str, key: str = "") -> Iterator[str]:
    if isinstance(value, str):
        for kind, pattern in CREDENTIAL_PATTERNS:
            if pattern.search(value):
                yield f"{path} holds what looks like {kind}"
        if key and credential_name(key) and literal(value):
            yield f"{path} is a credential-named field with a literal value; reference a Secret instead"
    elif isinstance(value, dict):
        for child_key, child in value.items():
            yield from _problems(child, f"{path}.{child_key}", str(child_key))
    elif isinstance(value, list):
        if key == "env":
            yield from _env_problems(value, path)
        elif key in ("args", "command"):
            yield from _argument_problems(value, path)
        for index, child in enumerate(value):
            yield from _problems(child, f"{path}[{index}]")


def validate_secret_handling(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type in SECRET_STORES or args.resource_type.startswith("pulumi:providers:"):
        return
    props = plain(args.props)
    if args.resource_type == SSM_PARAMETER and dig(props, "type") == "SecureString":
        return
    for problem in dict.fromkeys(_problems(props, "props")):
        report_violation(problem)
