"""Values a committed stack may hold for the offline render but a real `pulumi up` must not deploy.

A documentation CIDR (RFC 5737 / RFC 3849) as an allowed range, an account id AWS uses in its examples, an
S3 URI in a bucket S3 reserves for documentation, or a container whose image tag this repository has not read: each renders (so a fresh clone can review the
whole stack) and is listed in summary.md under what to set; the program outside the offline render refuses
the first one with a line naming its key. The offline render allows them only when asked
(`python -m tools.render --placeholders`, what `make render` runs), as it does the out-of-band secrets.
"""

from __future__ import annotations

import ipaddress
import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

from serving_stack.errors import ConfigError, key_path, walk
from serving_stack.facts.placeholders import PlaceholderFacts

# Set by the offline render around its run of the program; never set for `pulumi up`.
ALLOW_ENV = "NEMOTRON_RENDER_PLACEHOLDERS"
ACCOUNT_IN_ARN = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(\d{12}):")
S3_BUCKET = re.compile(r"^s3://([^/]+)")
HOST_REFERENCE = re.compile(r"^([a-z0-9-]+(?:\.[a-z0-9-]+)+)(?::\d+)?(?:/|$)")


@dataclass(frozen=True)
class Placeholder:
    """`key`: where the value is set (a config key path, or a data file and its key); `what`: why it cannot
    be deployed; `set_to`: what to set instead."""

    key: str
    value: str
    what: str
    set_to: str

    def line(self) -> str:
        return f"`{self.key}` = `{self.value}`: {self.what}; set {self.set_to}"

    def error(self) -> ConfigError:
        return ConfigError(
            self.key,
            f"{self.value} is a placeholder ({self.what}) that `pulumi up` cannot deploy",
            f"{self.set_to} (the offline render accepts it with --placeholders)",
        )


def placeholders_allowed() -> bool:
    return os.environ.get(ALLOW_ENV) == "1"


def _documentation_network(text: str, facts: PlaceholderFacts) -> str | None:
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None
    for reserved in facts.documentationNetworks:
        block = ipaddress.ip_network(reserved.cidr)
        if network.version == block.version and network.subnet_of(block):  # type: ignore[arg-type]
            return reserved.cidr
    return None


def _url_host(text: str) -> str | None:
    """The host of a URL (`https://192.0.2.10:9090/x` -> 192.0.2.10) or of a registry or image reference
    (`registry.example.com/team/image:1.0` -> registry.example.com: a first segment with a dot), else None."""
    if "://" not in text:
        reference = HOST_REFERENCE.match(text)
        return reference[1] if reference else None
    try:
        return urllib.parse.urlsplit(text).hostname
    except ValueError:
        return None


def _in_domain(host: str, domain: str) -> bool:
    return host.lower().rstrip(".") == domain or host.lower().rstrip(".").endswith(f".{domain}")


def _reason(text: str, facts: PlaceholderFacts) -> tuple[str, str] | None:
    """(why `text` cannot be deployed, what to set instead), or None for a real value."""
    host, block = _url_host(text), _documentation_network(text, facts)
    if block is None and host is not None:
        block = _documentation_network(host, facts)
    else:
        host = None  # a CIDR such as 203.0.113.0/24 is an allowed range, not a host
    domain = next((d.domain for d in facts.exampleDomains if host and _in_domain(host, d.domain)), None)
    if domain is not None:
        return f"{domain} is reserved for examples", "the host it must reach"
    if block is not None:
        set_to = "the CIDR it must allow" if host is None else "the host it must reach"
        return f"inside {block}, reserved for documentation", set_to
    bucket = S3_BUCKET.match(text)
    reserved = [p.prefix for p in facts.exampleBucketPrefixes if bucket and bucket.group(1).startswith(p.prefix)]
    if reserved:
        return f"S3 reserves bucket names starting {reserved[0]} for documentation", "your bucket"
    match = ACCOUNT_IN_ARN.match(text)
    account = match.group(1) if match else text
    if account in {a.id for a in facts.exampleAccounts}:
        return f"account {account} is an AWS documentation example", "your account's value"
    return None


def config_placeholders(raw_config: dict[str, Any], facts: PlaceholderFacts) -> tuple[Placeholder, ...]:
    """Every documentation CIDR or address (also as a URL's host), example domain, example account id and
    example bucket in the stack's config, by key path."""
    return tuple(
        Placeholder(key_path(parts), text, *reason)
        for parts, text in walk(raw_config)
        if isinstance(text, str) and (reason := _reason(text, facts))
    )


def refuse_unless_allowed(placeholders: tuple[Placeholder, ...], allowed: bool) -> None:
    if placeholders and not allowed:
        raise ConfigError.combined([p.error() for p in placeholders])
