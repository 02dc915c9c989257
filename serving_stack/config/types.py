"""Value types of the stack config (strings checked against patterns, with errors and schema in words, free-form
values without credentials) and `Block`, the base of every config block."""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import re
import unicodedata
import urllib.parse
from decimal import Decimal
from typing import Annotated, Any, Literal

import pydantic
import pydantic_core

from serving_stack.credentials import credential_name, literal, shapes
from serving_stack.errors import bounded, key_path, walk
from serving_stack.names import HF_REPO

SEMVER = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
QUANTITY = r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?"
# An image pinned by a semver tag (the Dynamo operator's admission rule) or a digest; a tag may stand beside
# the digest (`repo:1.2.3@sha256:...`): the runtime pulls by the digest.
PINNED_IMAGE = (
    r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(:"
    + SEMVER[1:-1]
    + r"|(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[a-f0-9]{64})$"
)
MAX_STRING = 256  # the longest string the config needs: an AWS tag value (AWS allows 256 characters)
MAX_SAFE_INTEGER = 2**53  # Pulumi carries numbers as protobuf doubles (float64): larger integers lose digits
CREDENTIAL_ERROR = "credential"  # a validation error whose input an error line must not repeat (errors.py)


def _ascii(value: str) -> str:
    """The value if ASCII, else an error naming the first other character's position, itself and its Unicode
    name (a fullwidth digit, a Cyrillic look-alike, a typographic hyphen)."""
    for position, character in enumerate(value, start=1):
        if not character.isascii():
            name = f"U+{ord(character):04X} {unicodedata.name(character, 'unnamed')}"
            problem = f"character {position} is {character!r} ({name}), not ASCII"
            raise ValueError(f"must be ASCII (the API takes no other characters): {problem}")
    return value


@dataclasses.dataclass(frozen=True)
class Allowed(pydantic.AfterValidator):
    """A check whose error, and whose schema (`x-allowed`), say what is allowed in words, not as a regex."""

    what: str = ""

    def __get_pydantic_json_schema__(self, schema: Any, handler: pydantic.GetJsonSchemaHandler) -> Any:
        return {**handler(schema), "x-allowed": self.what}


def matching(pattern: str, what: str) -> Allowed:
    """The whole value (`re.fullmatch`: `$` also matches before a final newline) matches `pattern`, in ASCII:
    every pattern here is an identifier an API reads as ASCII, and `\\d` or `\\w` would take fullwidth digits."""

    def check(value: str) -> str:
        if not re.fullmatch(pattern, _ascii(value), flags=re.ASCII):
            raise ValueError(f"must be {what}")
        return value

    return Allowed(check, what)


QUANTITY_UNITS = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    **{unit: Decimal(1000) ** power for power, unit in enumerate("kMGTPE", 1)},
    **{f"{unit}i": Decimal(1024) ** power for power, unit in enumerate("KMGTPE", 1)},
}


def quantity_value(quantity: str) -> Decimal:
    """`300Gi` -> bytes, `500m` -> 0.5 (Kubernetes quantity syntax, binary, decimal and milli suffixes)."""
    match = re.fullmatch(QUANTITY, quantity)
    if match is None:
        raise ValueError(f"{quantity!r} is not a Kubernetes quantity")
    return Decimal(match[1]) * QUANTITY_UNITS[match[2] or ""]


def bounded_quantity(what: str, minimum: str, maximum: str) -> Allowed:
    """A quantity string with a lower and an upper bound, both said in the error."""

    def check(value: str) -> str:
        if not re.fullmatch(QUANTITY, value):
            raise ValueError(f"must be {what}")
        if not quantity_value(minimum) <= quantity_value(value) <= quantity_value(maximum):
            raise ValueError(f"must be between {minimum} and {maximum}")
        return value

    return Allowed(check, f"{what}, {minimum}..{maximum}")


# AWS General Reference, "Amazon Resource Names (ARNs)": arn:partition:service:region:account-id:resource, the
# partitions aws, aws-cn and aws-us-gov; a region empty for global services (IAM).
ARN_PARTITIONS = ("aws", "aws-cn", "aws-us-gov")
ARN_RESOURCES = {
    # IAM User Guide, "IAM identifiers": role/ and user/ with an optional path; names of [\w+=,.@-].
    "iam": (r"(role|user)/([\w+=,.@-]+/)*[\w+=,.@-]{1,128}", "role/<name> or user/<name>", False),
    # AWS KMS Developer Guide, "Key identifiers": a key id is a UUID, or mrk- and 32 hex digits (multi-Region).
    "kms": (
        r"key/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})",
        "key/<key id>",
        True,
    ),
}


def aws_arn(service: str) -> Allowed:
    """The one ARN parser of the config: the six parts, a known partition, the region a service needs (a region
    name, or none for IAM), a 12-digit account and the service's resource form; the error names the bad part."""
    pattern, resource_form, regional = ARN_RESOURCES[service]
    form = f"arn:aws:{service}:{'<region>' if regional else ''}:<12-digit account>:{resource_form}"

    def check(value: str) -> str:
        parts = _ascii(value).split(":", 5)
        if len(parts) != 6 or parts[0] != "arn":
            raise ValueError(f"must be an ARN of six ':'-separated parts, {form}")
        _, partition, named_service, region, account, resource = parts
        problems = [
            (partition not in ARN_PARTITIONS, f"partition {partition!r} is not one of {', '.join(ARN_PARTITIONS)}"),
            (named_service != service, f"service {named_service!r} is not {service}"),
            (regional and not re.fullmatch(REGION, region), f"region {region!r} is not a region name"),
            (not regional and region != "", f"region must be empty for {service}"),
            (not re.fullmatch(r"\d{12}", account), f"account {account!r} is not 12 digits"),
            (
                not re.fullmatch(pattern, resource, flags=re.ASCII),
                f"resource {bounded(resource, 40)} is not {resource_form}",
            ),
        ]
        problem = next((text for wrong, text in problems if wrong), None)
        if problem:
            raise ValueError(f"must be {form}: {problem}")
        return value

    return Allowed(check, form)


def aws_id(prefix: str, what: str) -> Allowed:
    return matching(rf"^{prefix}-[0-9a-f]{{8,17}}$", f"{what} such as {prefix}-0123456789abcdef0")


# Identifiers, versions and names an API reads (instance types, model ids, target ids): ASCII only.
AsciiText = Annotated[str, pydantic.Field(min_length=1), pydantic.AfterValidator(_ascii)]


def _no_url_credentials(url: str) -> str:
    """A URL in the stack file carries no credential: no userinfo (RFC 3986 3.2.1: `user:password@`, or a token
    as the user) and no credential-shaped query parameter (`catalog/credentials.yaml`)."""
    kinds = ["a user or password (user:password@)"] if "@" in urllib.parse.urlsplit(url).netloc else shapes(url)
    if kinds:
        raise pydantic_core.PydanticCustomError(
            CREDENTIAL_ERROR,
            f"holds {kinds[0]}: a credential does not belong in plain config; "
            "put it in a Kubernetes Secret the component reads, or reach the service without one",
        )
    return url


# An http(s) URL: ASCII (RFC 3986; an internationalised host is written in punycode), no whitespace, no credential.
HttpUrl = Annotated[
    str, matching(r"https?://[^\s]+", "an http:// or https:// URL"), pydantic.AfterValidator(_no_url_credentials)
]
DnsLabel = Annotated[str, matching(DNS_LABEL, "a DNS label (lower-case letters, digits and '-', at most 63)")]
# Kubernetes apimachinery validation: a label value (IsValidLabelValue) and a qualified name (IsQualifiedName: label
# and taint keys, extended resource names): at most 63 alphanumerics, '-', '_' or '.' between alphanumerics, a key
# optionally after a DNS subdomain prefix and '/'.
_K8S_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
LabelValue = Annotated[
    str, matching(f"{_K8S_NAME}?", "a Kubernetes label value (at most 63 letters, digits, '-', '_', '.')")
]
QualifiedName = Annotated[
    str,
    pydantic.Field(max_length=317),
    matching(
        rf"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_K8S_NAME}",
        "a Kubernetes qualified name such as nvidia.com/gpu (a DNS prefix and '/', then at most 63 letters, digits, "
        "'-', '_', '.')",
    ),
]
SemVer = Annotated[str, matching(SEMVER, "a semantic version such as 1.4.0")]
# Numbers the APIs hold in 32 or 64 bits: Kubernetes `int32`/`int64` fields (Job backoffLimit,
# activeDeadlineSeconds) and the AWS APIs' `Integer` (EKS NodegroupScalingConfig, Application Auto Scaling).
# A larger value fails only at `up`, so the config refuses it.
Int32 = Annotated[int, pydantic.Field(le=2**31 - 1)]
Int64 = Annotated[int, pydantic.Field(le=2**63 - 1)]
# An EC2 instance type, family.size (m7i.2xlarge, p6-b200.48xlarge, m7i-flex.large, c6in.metal, r8i.metal-48xl);
# whether it exists is EC2's to say: the instance facts hold only the GPU types.
INSTANCE_TYPE = r"[a-z][a-z0-9]*(-[a-z0-9]+)*\.([0-9]*(nano|micro|small|medium|large|xlarge)|metal(-[0-9]+xl)?)"
InstanceType = Annotated[str, matching(INSTANCE_TYPE, "an EC2 instance type such as m7i.2xlarge (family.size)")]
StorageSize = Annotated[str, bounded_quantity("a storage size such as 300Gi", "1Gi", "64Ti")]
MemorySize = Annotated[str, bounded_quantity("a memory size such as 64Gi", "64Mi", "2Ti")]
CpuQuantity = Annotated[str, bounded_quantity("a CPU quantity such as 2 or 500m", "0.01", "256")]
HfRepo = Annotated[
    str, matching(HF_REPO, "a Hugging Face repo id such as nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4")
]
PinnedImage = Annotated[
    str, matching(PINNED_IMAGE, "an image pinned by a semver tag or an @sha256 digest, or both (no bare 'latest')")
]
# A Dynamo runtime image: the operator's admission reads the runtime version from a semantic-version tag
# (tools/e2e/admission_rules.yaml, runtime-version-resolvable) and refuses a DGD whose main image has none, so
# a digest-only pin passes PINNED_IMAGE but would be refused at `pulumi up`; the digest stays optional. The tag is
# what that rule's `versionPattern` admits (a `v` prefix and a missing patch number too), within the OCI
# distribution spec's tag: at most 128 characters, no `+` (`[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`).
RUNTIME_VERSION = r"[vV]?[0-9]+\.[0-9]+(\.[0-9]+)?(-[0-9A-Za-z][0-9A-Za-z.-]*)?"
RUNTIME_IMAGE = (
    r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+:(?=[^@]{1,128}(@|$))" + RUNTIME_VERSION + r"(@sha256:[a-f0-9]{64})?$"
)
VersionedImage = Annotated[
    str,
    matching(
        RUNTIME_IMAGE,
        "an image with a semver tag, the runtime version the Dynamo operator admits it by (repo:1.5.0, v1.5.0 "
        "or 1.5, optionally @sha256:<digest> after it)",
    ),
]
Registry = Annotated[
    str, matching(r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$", "a registry path such as nvcr.io/nvidia/ai-dynamo")
]
StorageClassName = Annotated[
    str, matching(r"^(?=.{1,253}\Z)[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "a StorageClass name (DNS subdomain)")
]
KubernetesVersion = Annotated[str, matching(r"^1\.\d+$", "a Kubernetes minor version such as 1.33")]
# An Availability Zone (us-east-1a) or a Local Zone (us-east-1-dfw-2a); which zones exist, and which kind a
# setting accepts, is checked against catalog/aws_regions.yaml while planning.
ZONE = r"^[a-z]{2}(-[a-z]+)+-\d(-[a-z]{3}-\d)?[a-z]$"
AvailabilityZone = Annotated[
    str, matching(ZONE, "a zone name such as us-east-1a (or a Local Zone such as us-east-1-dfw-2a)")
]
REGION = r"^[a-z]{2}(-[a-z]+)+-\d$"
Region = Annotated[str, matching(REGION, "a region name such as us-east-1")]
SubnetId = Annotated[str, aws_id("subnet", "a subnet id")]
SnapshotId = Annotated[str, aws_id("snap", "an EBS snapshot id")]
SecurityGroupId = Annotated[str, aws_id("sg", "a security group id")]
VpcId = Annotated[str, aws_id("vpc", "a VPC id")]
ReservationId = Annotated[str, aws_id("cr", "a capacity reservation id")]
Fabric = Literal["efa", "ib", "none"]


def _ipv4_cidr(value: str, network: bool = False) -> str:
    """An IPv4 CIDR; a `network` one names a network, not a host in it (the subnets are carved from it)."""
    try:
        parsed = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        raise ValueError("must be an IPv4 CIDR such as 203.0.113.0/24") from None
    if "/" not in value:
        raise ValueError("must be an IPv4 CIDR with a prefix length, such as 203.0.113.0/24")
    if network and str(parsed.network_address) != value.partition("/")[0]:
        raise ValueError(f"has host bits set: use {parsed}")
    return value


Cidr = Annotated[str, Allowed(_ipv4_cidr, "an IPv4 CIDR such as 203.0.113.0/24")]
NetworkCidr = Annotated[str, Allowed(lambda v: _ipv4_cidr(v, network=True), "an IPv4 network CIDR such as 10.0.0.0/16")]


def _aws_tag(text: str, what: str) -> str:
    """AWS tag characters ("Tag naming limits and requirements": ^([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)$), with
    spaces as Unicode Zs only: no line or paragraph separators, no control characters."""
    if not all(c in "_.:/=+-@" or unicodedata.category(c)[0] in "LN" or unicodedata.category(c) == "Zs" for c in text):
        raise ValueError(f"a tag {what} holds letters, digits, spaces and _ . : / = + - @ only (AWS tag rules)")
    return text


def _aws_tag_key(key: str) -> str:
    if key.lower().startswith("aws:"):
        raise ValueError("the tag key prefix aws: is reserved for AWS")
    if not 1 <= len(key) <= 128:
        raise ValueError("a tag key is 1-128 characters")
    return _aws_tag(key, "key")


def _aws_tags(tags: dict[str, str]) -> dict[str, str]:
    if len(tags) > 40:  # the stack adds its own (Name, pool) to the 50 AWS allows per resource
        raise ValueError(f"{len(tags)} tags; at most 40 (AWS allows 50 per resource, the stack adds its own)")
    return tags


AwsTags = Annotated[
    dict[
        Annotated[str, Allowed(_aws_tag_key, "an AWS tag key: 1-128 characters, not aws:*")],
        Annotated[str, pydantic.Field(max_length=256), Allowed(lambda v: _aws_tag(v, "value"), "an AWS tag value")],
    ],
    pydantic.AfterValidator(_aws_tags),
]


def _free_form_values(values: dict[str, Any]) -> dict[str, Any]:
    """Free-form values (Helm values, SLO overrides, engine options) hold only numbers that JSON and Pulumi
    carry exactly, and no credential (`serving_stack.credentials`: a credential-named key with a literal value,
    or a value shaped like a token, key or webhook URL): the stack file is committed in plain text."""
    nodes = list(walk(values))
    for parts, value in nodes:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{key_path(parts)} is {value}: JSON (resources.json, Helm values) has no NaN or infinity")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
            # An integer past uint64 reaches the program as a float already (the CLI's YAML reads 10^30 as 1e30).
            raise ValueError(f"{key_path(parts)} is beyond 2^53, which Pulumi's float64 numbers cannot hold exactly")
    for parts, value in nodes:
        key = parts[-1] if parts else None
        # Not `passwordKey: password`, the name of a key inside a Secret (a credential spelled as a plain
        # lower-case word still meets the policy pack at render).
        if (
            isinstance(key, str)
            and credential_name(key)
            and literal(value)
            and not (key.endswith("Key") and re.fullmatch(r"[a-z][a-z.-]{0,62}", value))
        ):
            raise pydantic_core.PydanticCustomError(
                CREDENTIAL_ERROR,
                f"{key_path(parts)} holds a credential in plain config: put it in a Kubernetes Secret "
                "and refer to it (existingSecret, secretKeyRef), or set it with pulumi config set --secret",
            )
        for kind in shapes(value) if isinstance(value, str) else ():
            raise pydantic_core.PydanticCustomError(
                CREDENTIAL_ERROR, f"{key_path(parts)} holds {kind}: a secret does not belong in plain config"
            )
    return values


FreeFormValues = Annotated[dict[str, Any], pydantic.AfterValidator(_free_form_values)]
FreeFormStrings = Annotated[dict[str, str], pydantic.AfterValidator(_free_form_values)]  # engine options


class Block(pydantic.BaseModel):
    """Base for config blocks: camelCase keys exactly as in `Pulumi.<stack>.yaml`, unknown keys rejected, and
    strict types: `'2'`, `2.0` or `true` is not a count, `"yes"` or `1` not a boolean. No string (key or value)
    is longer than MAX_STRING, so no check further on can echo a megabyte of input; no number is infinite or
    NaN (YAML's `.inf`, `.nan`), which no AWS or Kubernetes field accepts. The docstring under each field is
    its description (schema, docs/configuration.md)."""

    model_config = pydantic.ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        str_max_length=MAX_STRING,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )
