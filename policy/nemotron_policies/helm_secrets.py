"""Credentials in Helm values that a name check alone misses: Alertmanager's secret fields, webhook URLs, and
configuration embedded as YAML text.

- Alertmanager types these fields `<secret>` (prometheus.io/docs/alerting/latest/configuration/: PagerDuty
  `routing_key`/`service_key`, Pushover `user_key`/`token`, Telegram `bot_token`, WeChat `api_secret`,
  VictorOps/OpsGenie `api_key`, SMTP `smtp_auth_password`/`smtp_auth_secret`, HTTP `password`,
  `bearer_token`, `credentials`, OAuth2 `client_secret`, and the URLs of the Slack, webhook, Discord, MS
  Teams, Webex, Rocket.Chat and Mattermost receivers) and reads each from a `*_file` instead: a literal value
  in a chart's values is the credential in a plain ConfigMap-like object.
- A webhook URL is its own credential (whoever has it posts): a literal URL under a webhook key
  (`webhook`, `webhookUrl`, `webhook_url`, `hookUrl`, `api_url`, `slack_api_url`, or `url` in a receiver's
  `*_configs` entry or a mapping named like a webhook) is reported unless it points inside the cluster (a
  Service name, `*.svc`, `*.cluster.local`).
- A string value that is a YAML or JSON mapping (kube-prometheus-stack `alertmanager.stringConfig`, a
  chart's `config: |` block) is read as the values it holds (`helm_documents`), by every check of
  secret-handling.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import yaml

from .credentials import literal

ALERTMANAGER_SECRET_FIELDS = frozenset(
    {
        "routing_key",
        "service_key",
        "user_key",
        "bot_token",
        "api_secret",
        "api_key",
        "smtp_auth_password",
        "smtp_auth_secret",
        "password",
        "bearer_token",
        "credentials",
        "client_secret",
        "token",
        "webhook_url",
        "slack_api_url",
    }
)
WEBHOOK_KEYS = frozenset({"webhook", "webhookurl", "webhook_url", "hookurl", "hook_url", "api_url", "slack_api_url"})
RECEIVER_LISTS = re.compile(r"^[a-z]+_configs$")
URL_KEYS = frozenset({"url", "uri", "endpoint"})
IN_CLUSTER_SUFFIXES = (".svc", ".cluster.local", ".svc.cluster.local")
MAX_EMBEDDING = 64  # nesting levels read, bounded against pathological inputs


def _outside_cluster(url: str) -> bool:
    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return True
    return "." in host and not host.endswith(IN_CLUSTER_SUFFIXES) and host not in ("localhost",)


def _embedded(value: str) -> Any:
    if "\n" not in value and not value.lstrip().startswith("{"):
        return None
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return None
    return parsed if isinstance(parsed, dict) else None


def helm_secret_fields(value: Any, path: str, key: str = "", in_receiver: bool = False) -> Iterator[str]:
    """Literal Alertmanager secrets and webhook URLs anywhere in Helm values (and YAML text inside them)."""
    if isinstance(value, dict):
        for child_key, child in value.items():
            yield from helm_secret_fields(child, f"{path}.{child_key}", str(child_key), in_receiver)
    elif isinstance(value, list):
        receiver = bool(RECEIVER_LISTS.match(key))
        for index, child in enumerate(value):
            yield from helm_secret_fields(child, f"{path}[{index}]", "", in_receiver or receiver)
    elif isinstance(value, str) and literal(value):
        lowered = key.lower()
        is_url = value.strip().lower().startswith(("http://", "https://"))
        webhook = lowered in WEBHOOK_KEYS or (lowered in URL_KEYS and in_receiver) or "webhook" in lowered
        if is_url and webhook and _outside_cluster(value):
            yield f"{path} is a literal webhook URL (the URL is the credential); read it from a Secret (url_file)"
        elif in_receiver and lowered in ALERTMANAGER_SECRET_FIELDS and not is_url:
            yield f"{path} is an Alertmanager secret with a literal value; read it from a Secret (*_file)"


def helm_documents(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(path, values) of Helm values and of every mapping embedded in them as YAML or JSON text."""
    if depth == 0:
        yield path, value
    if depth > MAX_EMBEDDING:
        return
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _embedded_documents(child, f"{path}.{key}", depth)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _embedded_documents(child, f"{path}[{index}]", depth)


def _embedded_documents(value: Any, path: str, depth: int) -> Iterator[tuple[str, Any]]:
    embedded = _embedded(value) if isinstance(value, str) else None
    if embedded is not None:
        where = f"{path} (embedded YAML)"
        yield where, embedded
        yield from helm_documents(embedded, where, depth + 1)
    elif isinstance(value, (dict, list)):
        yield from helm_documents(value, path, depth + 1)
