"""What a credential looks like: by the name it is stored under, and by the shape of the value itself.

URLs with a password (an empty user name too) or a credential in their query, and Authorization headers with
a literal value count as shapes. Names: words such as TOKEN, SECRET, PASSWORD, AUTH, CREDENTIALS, APIKEY (env-style names also KEY), unless
the name ends like a reference (`*_ARN`, `*_PATH`, `*_SECRET_NAME`). Shapes: token formats with a known
prefix (Hugging Face `hf_`, AWS access key ids `AKIA`/`ASIA`, NGC `nvapi-`, GitHub, Slack, OpenAI, Google),
private keys, JWTs, AWS secret access keys, URLs with a password, chat webhook URLs, Docker registry auth (`{"auths": ...}`),
and, where literals are handed to a process (env values, ConfigMap and Helm values), random-looking tokens:
32+ characters of a token alphabet with a per-character entropy that identifiers and words do not reach.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

SHAPES = [
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("an AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "an AWS secret access key",
        re.compile(
            r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])"
            r"(?=[A-Za-z0-9/+]*[0-9])(?=[A-Za-z0-9/+]*[/+])[A-Za-z0-9/+]{40}"
            r"(?![A-Za-z0-9/+=])"
        ),
    ),
    ("an NGC API key", re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}")),
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an OpenAI API key", re.compile(r"\bsk-(proj-)?[A-Za-z0-9_-]{32,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a URL with a password", re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:(?!\$\(|\$\{|\{\{)[^/\s@]+@")),
    (
        "a URL with a credential in its query",
        re.compile(
            r"(?i)[a-z][a-z0-9+.-]*://[^\s?#]*\?(?:[^\s#]*&)?(?:api[_-]?key|apikey|key|token|access[_-]?token|"
            r"auth[_-]?token|secret|client[_-]?secret|password|passwd|sig|signature|x-amz-signature|"
            r"x-amz-security-token)=(?!\$\(|\$\{|\{\{)[^&\s#]{4,}"
        ),
    ),
    (
        "an Authorization header with a literal credential",
        re.compile(
            r"(?i)\bauthorization\s*[=:]\s*(?:bearer|basic|token|apikey)\s+(?!\$\(|\$\{|\{\{)[A-Za-z0-9._~+/=-]{6,}"
        ),
    ),
    # The secret of an incoming webhook is its path: whoever has the URL posts to the channel.
    (
        "a chat webhook URL",
        re.compile(
            r"https://(hooks\.slack\.com/services/|[a-z0-9.-]*webhook\.office\.com/|discord(app)?\.com/api/webhooks/)\S+"
        ),
    ),
]
REGISTRY_CONFIG_KEYS = frozenset({".dockerconfigjson", ".dockercfg"})
TOKEN = re.compile(r"^[A-Za-z0-9+/=_-]{32,256}$")
RANDOM_TOKEN_ENTROPY = 4.3  # bits per character: random base62 reaches ~4.7 at 32 chars, identifiers ~4.0

CREDENTIAL_WORDS = frozenset(
    {
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "APIKEY",
        "AUTH",
        "BEARER",
    }
)
# `KEY` alone is structural in Kubernetes (`configMapKeyRef.key`, tolerations) and in AWS (`hashKey`,
# `s3Key`); outside env-var names it is a credential only after one of these.
KEY_QUALIFIERS = frozenset({"API", "ACCESS", "SECRET", "PRIVATE", "AUTH", "SIGNING", "CLIENT"})
# Names that end like this hold a reference to a credential, not the credential.
REFERENCE_SUFFIXES = frozenset(
    {
        "ARN",
        "ID",
        "IDS",
        "NAME",
        "REF",
        "PATH",
        "FILE",
        "DIR",
        "URL",
        "URI",
        "ENDPOINT",
        "TYPE",
        "MODE",
        "SECONDS",
        "TTL",
        "ENABLED",
        "HEADER",
        "ALGORITHM",
        "REGION",
        "PREFIX",
        "LENGTH",
        "SIZE",
        "METHOD",
        "PROVIDER",
        "MODES",
    }
)
NOT_A_CREDENTIAL_PREFIXES = frozenset({"EXISTING", "PUBLIC"})
ENV_STYLE = re.compile(r"^[A-Z][A-Z0-9_]*$")
CACHED_VALUE_CHARS = 256  # values up to this long (labels, names, flags) repeat; longer ones are not kept
_Result = TypeVar("_Result")


def _cached_when_short(function: Callable[[str], _Result]) -> Callable[[str], _Result]:
    """`function` (pure) with its results for strings up to CACHED_VALUE_CHARS kept: a render repeats a few
    hundred names and labels across resources, while large Helm values or scripts are not worth holding."""
    cached = functools.lru_cache(maxsize=4096)(function)

    @functools.wraps(function)
    def call(value: str) -> _Result:
        return cached(value) if len(value) <= CACHED_VALUE_CHARS else function(value)

    call.cache_info = cached.cache_info  # type: ignore[attr-defined]
    return call


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.upper() for w in re.split(r"[^A-Za-z0-9]+|\s", spaced) if w]


@_cached_when_short
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
    return isinstance(value, str) and value.strip() != "" and not value.startswith(("$(", "${", "{{", "arn:"))


REFERENCE = re.compile(r"\$\([A-Za-z_][A-Za-z0-9_.-]*\)")
WORD_SEPARATORS = re.compile(r"[\s'\"`,;:()\[\]{}<>|&\\]+")


def residue(value: str) -> str:
    """A value with its Kubernetes `$(VAR)` references taken out: a reference to an unset variable stays in the
    value as written, so `$(UNSET)<token>` still hands the token to the process."""
    return REFERENCE.sub("", value)


def token_words(value: str) -> list[str]:
    """The random-looking tokens among the words of a value (`$(VAR)` references removed): a token inside a
    shell script, a header or after a flag."""
    words = WORD_SEPARATORS.split(residue(value))
    found = [w for w in words if random_token(w)]
    found += [w.split("=", 1)[1] for w in words if "=" in w.strip("=") and random_token(w.split("=", 1)[1])]
    return found


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def random_token(value: Any) -> bool:
    """A string that looks generated rather than written: a long token of high per-character entropy with
    letters and digits."""
    return (
        isinstance(value, str)
        and bool(TOKEN.match(value))
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and _entropy(value) >= RANDOM_TOKEN_ENTROPY
    )


def registry_auth(value: Any) -> bool:
    """A Docker registry config (`config.json` / `.dockerconfigjson`) carrying credentials."""
    if not isinstance(value, str) or "auths" not in value:
        return False
    try:
        parsed = json.loads(value)
    except ValueError:
        return False
    auths = parsed.get("auths") if isinstance(parsed, dict) else None
    return isinstance(auths, dict) and any(
        isinstance(entry, dict) and ({"auth", "password", "identitytoken", "registrytoken"} & set(entry))
        for entry in auths.values()
    )


def shapes(value: str) -> Iterator[str]:
    """What `value` looks like, for every credential shape it matches."""
    yield from _shapes(value)


@_cached_when_short
def _shapes(value: str) -> tuple[str, ...]:
    found = [kind for kind, pattern in SHAPES if pattern.search(value)]
    return (*found, "Docker registry credentials") if registry_auth(value) else tuple(found)


def decoded(value: Any) -> Any:
    """The text of a base64 value (ConfigMap `binaryData`), or None if it is not base64 text."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
