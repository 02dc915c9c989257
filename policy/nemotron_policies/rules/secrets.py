"""secret-handling: the Hugging Face token and every other credential reach pods only through a Secret
reference, never as a literal in a resource's inputs.

Every resource except the secret stores (a Kubernetes Secret's own data, Secrets Manager secret versions,
SecureString SSM parameters) is checked:
- provider configurations: static AWS credentials (`accessKey`, `secretKey`, `token`, a literal
  `webIdentityToken`) and kubeconfigs with embedded user credentials (`token`, `client-key-data`, `password`,
  an auth provider's tokens; an `exec` plugin and the certificate authority pass);
- EC2 user data (launch templates, instances), base64-decoded (and gunzipped), MIME multipart parts each read, as text: a
  credential shape, a random-looking token, or a credential-named assignment (`export HF_TOKEN=...`,
  `password = "..."` in a NodeConfig's containerd config) with a literal value;
- header lists (`customHeaders`, `headers`: `Name=value,...` text or a mapping): a credential-named header or
  `Authorization` with a literal value (KEDA reads credentials from an `authenticationRef`);
- every env list (`env`, and `envs` of v1alpha1 Dynamo resources), wherever it sits: a credential-named
  variable with a literal `value` or read from a ConfigMap, and a random-looking token whatever its name;
- container args/command: a credential flag (`--hf-token`, `--api-key`) with a literal value, and a
  random-looking token anywhere in an argument (inside a `sh -c` script, after a short flag such as `-k`);
- `$(VAR)` references are taken out of env values and arguments before they are judged: Kubernetes leaves a
  reference to an unset variable as written, so `$(UNSET)<token>` still hands the token over;
- ConfigMaps: Docker registry config keys (`.dockerconfigjson`, `.dockercfg`) or registry auth in any key,
  and `binaryData` decoded before it is read;
- every other mapping (ConfigMap data, Helm values, a SageMaker model's environment): a credential-named key
  with a literal string value, and in ConfigMap data and Helm values a random-looking token;
- Helm values, the text of their `valueYamlFiles` string assets and YAML or JSON text embedded in either:
  also Alertmanager's secret fields (`routing_key`, `bot_token`...) and webhook URLs outside the cluster
  (`helm_secrets.py`);
- any string anywhere shaped like a credential (`credentials.SHAPES`).
A Pulumi secret written into such a field is still a literal in the pod spec or the cloud resource, so it
is reported too. Messages name the field, never the value.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator
from email import message_from_string
from typing import Any

import yaml
from pulumi_policy import ReportViolation, ResourceValidationArgs

from ..credentials import REGISTRY_CONFIG_KEYS, credential_name, decoded, literal, random_token, shapes, token_words
from ..helm_images import value_files
from ..helm_secrets import helm_documents, helm_secret_fields
from ..kinds import helm_values, is_helm, is_kind, kubernetes_objects
from ..values import UNKNOWN, as_dict, as_list, dig, plain

SECRET_VERSION = "aws:secretsmanager/secretVersion:SecretVersion"
SSM_PARAMETER = "aws:ssm/parameter:Parameter"
ENV_LISTS = frozenset({"env", "envs"})
HEADER_KEYS = frozenset({"customheaders", "headers", "httpheaders", "extraheaders"})
USER_DATA = {
    "aws:ec2/launchTemplate:LaunchTemplate": ("userData",),
    "aws:ec2/instance:Instance": ("userData", "userDataBase64"),
    "aws:ec2/launchConfiguration:LaunchConfiguration": ("userData", "userDataBase64"),
    "aws:ec2/spotInstanceRequest:SpotInstanceRequest": ("userData", "userDataBase64"),
}
ASSIGNMENT = re.compile(r"""(?m)^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*[=:]\s*["']?([^"'\s#]+)""")
AWS_PROVIDER_CREDENTIALS = ("accessKey", "secretKey", "token")
KUBECONFIG_USER_CREDENTIALS = ("token", "client-key-data", "password")
AUTH_PROVIDER_CREDENTIALS = ("id-token", "refresh-token", "access-token", "client-secret")


def _env_problems(entries: list[Any], path: str) -> Iterator[str]:
    for entry in entries:
        name, value = dig(entry, "name"), dig(entry, "value")
        if not isinstance(name, str):
            continue
        tokens = token_words(value) if isinstance(value, str) else []
        if credential_name(name):
            if literal(value) or tokens:
                yield f"{path}[{name}] has a literal value; reference a Secret with valueFrom.secretKeyRef"
            elif dig(entry, "valueFrom", "configMapKeyRef") not in (None, UNKNOWN):
                yield f"{path}[{name}] is read from a ConfigMap; reference a Secret with valueFrom.secretKeyRef"
        elif tokens:
            yield f"{path}[{name}] holds a random-looking token; reference a Secret with valueFrom.secretKeyRef"


def _argument_problems(arguments: list[Any], path: str) -> Iterator[str]:
    for index, argument in enumerate(arguments):
        if not isinstance(argument, str):
            continue
        if token_words(argument):
            yield f"{path}[{index}] holds a random-looking token; pass it from a Secret-backed env var as $(VAR)"
        if not argument.startswith("--"):
            continue
        flag, has_value, inline = argument.partition("=")
        value = inline if has_value else (arguments[index + 1] if index + 1 < len(arguments) else None)
        if credential_name(flag) and literal(value) and not str(value).startswith("--"):
            yield f"{path}: {flag} has a literal value; pass it from a Secret-backed env var as $(VAR)"


def _header_problems(value: Any, path: str) -> Iterator[str]:
    """Credential headers with literal values in `Name=value,...` text or a mapping of headers."""
    if isinstance(value, str):
        pairs = [item.partition("=")[::2] if "=" in item else item.partition(":")[::2] for item in value.split(",")]
    else:
        pairs = [(str(k), v) for k, v in as_dict(value).items()]
    for name, header_value in pairs:
        name = name.strip()
        if (credential_name(name) or name.lower() == "authorization") and literal(header_value):
            yield f"{path} sends header {name} with a literal value; pass credentials from a Secret (KEDA: authenticationRef)"


def _problems(value: Any, path: str, key: str = "", tokens: bool = False) -> Iterator[str]:
    """Findings in any value: credential shapes everywhere, credential-named keys with literal values, env
    and argument lists, and (where `tokens`) random-looking tokens."""
    if key.lower() in HEADER_KEYS:
        yield from _header_problems(value, path)
    if isinstance(value, str):
        for kind in shapes(value):
            yield f"{path} holds what looks like {kind}"
        if key and credential_name(key) and literal(value):
            yield f"{path} is a credential-named field with a literal value; reference a Secret instead"
        elif tokens and random_token(value):
            yield f"{path} holds a random-looking token; keep credentials in a Secret"
    elif isinstance(value, dict):
        for child_key, child in value.items():
            yield from _problems(child, f"{path}.{child_key}", str(child_key), tokens)
    elif isinstance(value, list):
        if key in ENV_LISTS:
            yield from _env_problems(value, path)
        elif key in ("args", "command"):
            yield from _argument_problems(value, path)
        for index, child in enumerate(value):
            yield from _problems(child, f"{path}[{index}]", "", tokens)


def _config_map_problems(data: Any, binary: Any, path: str) -> Iterator[str]:
    """ConfigMap data is handed to processes: registry configs, decoded binary data and random tokens count."""
    for section, entries in (("data", data), ("binaryData", binary)):
        for key, value in as_dict(entries).items():
            where = f"{path}.{section}.{key}"
            if key in REGISTRY_CONFIG_KEYS:
                yield (
                    f"{where} is a Docker registry config; registry credentials belong in a "
                    "kubernetes.io/dockerconfigjson Secret"
                )
            elif section == "binaryData":
                yield from _problems(decoded(value), f"{where} (decoded)", str(key), tokens=True)
            else:
                yield from _problems(value, where, str(key), tokens=True)


def _walk(resource_type: str, props: Any) -> Iterator[str]:
    """Findings of a resource: its inputs, with ConfigMap data and Helm values read as handed to processes,
    and the objects a YAML component carries as text read as objects."""
    objects = kubernetes_objects(resource_type, props)
    if any(o.kind == "ConfigMap" and o.group == "" and not o.where for o in objects):
        yield from _config_map_problems(dig(props, "data"), dig(props, "binaryData"), "props")
        props = {k: v for k, v in as_dict(props).items() if k not in ("data", "binaryData")}
    if is_helm(resource_type):
        files = [(f"props.{where}", parsed) for where, parsed in value_files(props)]
        for source, document in [("props.values", helm_values(resource_type, props)), *files]:
            for path, embedded in helm_documents(document, source):
                yield from _problems(embedded, path, "values", tokens=True)
                yield from helm_secret_fields(embedded, path)
        props = {k: v for k, v in as_dict(props).items() if k not in ("values", "valueYamlFiles")}
    yield from _problems(props, "props")
    for obj in objects:
        if obj.where.startswith("yaml"):
            yield from _problems(obj.body, f"props.{obj.where}")
        if obj.where and obj.kind == "ConfigMap" and obj.group == "":
            yield from _config_map_problems(dig(obj.body, "data"), dig(obj.body, "binaryData"), f"props.{obj.where}")


def _text_problems(text: str, path: str) -> Iterator[str]:
    """Credentials in a script or configuration text: shapes, random tokens, credential-named assignments."""
    for kind in shapes(text):
        yield f"{path} holds what looks like {kind}"
    if token_words(text):
        yield f"{path} holds a random-looking token"
    for name, value in ASSIGNMENT.findall(text):
        if credential_name(name) and literal(value) and not value.startswith("$"):
            yield f"{path} sets {name} to a literal value; fetch it at boot (Secrets Manager, SSM SecureString)"


GZIP_MAGIC = b"\x1f\x8b"
MAX_USER_DATA = 1 << 20  # bytes read out of compressed user data (EC2 takes 16 KB; more is a gzip bomb)


def _gunzipped(value: str) -> str | None:
    """The text of gzip-compressed user data (cloud-init and nodeadm read it, base64-encoded as EC2 takes it),
    or None if it is not gzip."""
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw.startswith(GZIP_MAGIC):
        return None
    try:
        return zlib.decompressobj(wbits=31).decompress(raw, MAX_USER_DATA).decode("utf-8", "replace")
    except zlib.error:
        return None


def _user_data_problems(resource_type: str, props: Any) -> Iterator[str]:
    for field in USER_DATA.get(resource_type, ()):
        value = dig(props, field)
        if not isinstance(value, str):
            continue
        text = _gunzipped(value) or decoded(value) or value
        parts = [(f"props.{field} (decoded)", text)]
        if text.lstrip().startswith(("MIME-Version", "Content-Type")):
            message = message_from_string(text)
            parts = [
                (f"props.{field} (MIME part {index})", payload.decode("utf-8", "replace"))
                for index, part in enumerate(message.walk())
                if not part.is_multipart() and isinstance(payload := part.get_payload(decode=True), bytes)
            ]
        for where, part_text in parts:
            yield from _text_problems(part_text, where)


def _provider_problems(resource_type: str, props: Any) -> Iterator[str]:
    """Credentials written into a provider's settings (and so into every state file and preview)."""
    if resource_type == "pulumi:providers:aws":
        for field in AWS_PROVIDER_CREDENTIALS:
            if literal(dig(props, field)):
                yield f"provider setting {field} is a static AWS credential; use a profile, an assumed role or OIDC"
        if literal(dig(props, "assumeRoleWithWebIdentity", "webIdentityToken")):
            yield "provider setting assumeRoleWithWebIdentity.webIdentityToken is a literal token; use webIdentityTokenFile"
    elif resource_type == "pulumi:providers:kubernetes":
        kubeconfig = dig(props, "kubeconfig")
        try:
            parsed = yaml.safe_load(kubeconfig) if isinstance(kubeconfig, str) else kubeconfig
        except yaml.YAMLError:
            parsed = None
        for index, user in enumerate(as_list(dig(parsed, "users"))):
            fields = [f for f in KUBECONFIG_USER_CREDENTIALS if literal(dig(user, "user", f))]
            fields += [
                f"auth-provider.config.{f}"
                for f in AUTH_PROVIDER_CREDENTIALS
                if literal(dig(user, "user", "auth-provider", "config", f))
            ]
            for field in fields:
                yield (
                    f"provider setting kubeconfig users[{index}].user.{field} embeds a cluster credential; use an "
                    "exec plugin (aws eks get-token) or a context of the user's own kubeconfig"
                )
    else:
        for key, value in as_dict(props).items():
            if credential_name(str(key)) and literal(value):
                yield f"provider setting {key} holds a literal credential; read it from the environment"


def validate_secret_handling(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if is_kind(args.resource_type, "", "Secret") or args.resource_type == SECRET_VERSION:
        return
    props = plain(args.props)
    if args.resource_type.startswith("pulumi:providers:"):
        for problem in dict.fromkeys(_provider_problems(args.resource_type, props)):
            report_violation(problem, None)
        return
    for problem in dict.fromkeys(_user_data_problems(args.resource_type, props)):
        report_violation(problem, None)
    if args.resource_type == SSM_PARAMETER and dig(props, "type") == "SecureString":
        return
    for problem in dict.fromkeys(_walk(args.resource_type, props)):
        report_violation(problem, None)
