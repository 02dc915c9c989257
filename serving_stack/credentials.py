"""What a credential in a free-form config value looks like: the names and value shapes of
`catalog/credentials.yaml` (the policy pack deploys alone and keeps the same table in its own module)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

TABLE = yaml.load((Path(__file__).parents[1] / "catalog" / "credentials.yaml").read_text(), Loader=yaml.CSafeLoader)
NAMES: dict[str, Any] = {key: frozenset(words) for key, words in TABLE["names"].items() if key != "source"}
SHAPES = [(shape["kind"], re.compile(shape["pattern"])) for shape in TABLE["shapes"]]
ENV_STYLE = re.compile(r"^[A-Z][A-Z0-9_]*$")


def credential_name(name: str) -> bool:
    """Does this key or env var name say it holds a credential?"""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name.lstrip("-"))
    words = [w.upper() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]
    if not words or words[-1] in NAMES["referenceSuffixes"] or words[0] in NAMES["notCredentialPrefixes"]:
        return False
    if NAMES["words"].intersection(words):
        return True
    if ENV_STYLE.match(name):
        return "KEY" in words
    return any(word == "KEY" and i > 0 and words[i - 1] in NAMES["keyQualifiers"] for i, word in enumerate(words))


def literal(value: Any) -> bool:
    """A non-empty string that is not a reference to something else (`$(VAR)`, `${...}`, `{{...}}`, an ARN)."""
    return isinstance(value, str) and value.strip() != "" and not value.startswith(("$(", "${", "{{", "arn:"))


def _registry_auth(value: str) -> bool:
    try:
        auths = json.loads(value).get("auths") if "auths" in value else None
    except (ValueError, AttributeError):
        return False
    keys = set(TABLE["registryAuth"]["entryKeys"])
    return isinstance(auths, dict) and any(isinstance(entry, dict) and keys & set(entry) for entry in auths.values())


def shapes(value: str) -> list[str]:
    """What `value` looks like, for every credential shape it matches."""
    found = [kind for kind, pattern in SHAPES if pattern.search(value)]
    return [*found, TABLE["registryAuth"]["kind"]] if _registry_auth(value) else found
