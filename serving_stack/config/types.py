"""Value types of the stack config: strings checked against patterns, with errors in words, and `Block`."""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import pydantic

SEMVER = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
QUANTITY = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"
HF_REPO = r"^[A-Za-z0-9][\w.-]*/[\w.-]+$"
# An image reference pinned by a semver tag (the Dynamo operator's admission rule) or by digest.
PINNED_IMAGE = r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(:" + SEMVER[1:-1] + r"|@sha256:[a-f0-9]{64})$"



def matching(pattern: str, what: str) -> Any:
    """A string type whose error says what is allowed in words, not as a regular expression."""

    def check(value: str) -> str:
        if not re.match(pattern, value):
            raise ValueError(f"must be {what}")
        return value

    return Annotated[str, pydantic.AfterValidator(check)]


DnsLabel = matching(DNS_LABEL, "a DNS label (lower-case letters, digits and '-', at most 63)")
SemVer = matching(SEMVER, "a semantic version such as 1.4.0")
Quantity = matching(QUANTITY, "a Kubernetes quantity such as 300Gi")
HfRepo = matching(HF_REPO, "a Hugging Face repo id such as nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4")
PinnedImage = matching(PINNED_IMAGE, "an image pinned by a semver tag or an @sha256 digest (no 'latest')")
Registry = matching(r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$", "a registry path such as nvcr.io/nvidia/ai-dynamo")
StorageClassName = matching(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "a StorageClass name (DNS subdomain)")


class Block(pydantic.BaseModel):
    """Base for config blocks: camelCase keys exactly as in `Pulumi.<stack>.yaml`, unknown keys rejected."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


KubernetesVersion = matching(r"^1\.\d+$", "a Kubernetes minor version such as 1.33")
# An Availability Zone (us-east-1a) or a Local Zone (us-east-1-dfw-2a); which zones exist, and which kind a
# setting accepts, is checked against catalog/aws_regions.yaml while planning.
AvailabilityZone = matching(r"^[a-z]{2}(-[a-z]+)+-\d(-[a-z]{3}-\d)?[a-z]$",
                            "a zone name such as us-east-1a (or a Local Zone such as us-east-1-dfw-2a)")
Region = matching(r"^[a-z]{2}(-[a-z]+)+-\d$", "a region name such as us-east-1")
SubnetId = matching(r"^subnet-[0-9a-f]{8,17}$", "a subnet id such as subnet-0123456789abcdef0")
SecurityGroupId = matching(r"^sg-[0-9a-f]{8,17}$", "a security group id such as sg-0123456789abcdef0")
VpcId = matching(r"^vpc-[0-9a-f]{8,17}$", "a VPC id such as vpc-0123456789abcdef0")
ReservationId = matching(r"^cr-[0-9a-f]{8,17}$", "a capacity reservation id such as cr-0123456789abcdef0")
Cidr = matching(r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$", "an IPv4 CIDR such as 203.0.113.0/24")
Fabric = Literal["efa", "ib", "none"]
