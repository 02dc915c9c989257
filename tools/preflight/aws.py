"""The AWS side of the preflight: what the account and Region say about the stack, with the user's own
credentials (boto3's chain: environment, profile, SSO), always in the Region the stack names.

- each managed GPU pool's zone exists for the account (a Local Zone opted in) and offers its instance type
  (ec2 DescribeAvailabilityZones, DescribeInstanceTypeOfferings with location type availability-zone);
- the EC2 vCPU quotas (Service Quotas; codes and names in tools/preflight/data/quotas.yaml) against the
  pools' maximum sizes (vCPUs from catalog/instance_types.yaml; the system node group's from
  DescribeInstanceTypes), per family group and purchase option;
- each capacityReservationId: found, of the pool's kind (ODCR or Capacity Block), instance type and zone,
  active or scheduled (a block that has not started holds no nodes), not ended or ending, big enough;
- the SageMaker endpoint-instance quota of each endpoint's instance type against its instance counts;
- the EKS version a created cluster asks for, offered in standard support in the Region (eks
  DescribeClusterVersions; DescribeAddonVersions where that is refused); an existing cluster's version.

A call that fails (no permission, a throttle that outlasts the retries) is a warning naming the IAM action,
never a pass. Credentials that are missing or refused stop the run (exit 2) before any check.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

import boto3
import botocore.config
import botocore.exceptions

from serving_stack.errors import bounded
from serving_stack.facts import load_facts
from serving_stack.plan.cluster import CreatedCluster, KubeconfigCluster
from serving_stack.plan.pools import ResolvedPool
from tools.preflight.facts import Ec2Quota, QuotasFile, load_permissions, load_quotas
from tools.preflight.findings import Finding, blocker, warning
from tools.preflight.stack import PreflightStack

Client = Any  # a botocore client
ClientFactory = Callable[[str, str], Client]  # (service, region) -> client
# A Capacity Block ends at its EndDate; EKS scales its node group to 0 forty minutes before (AWS-FACTS.md).
ENDING_SOON = datetime.timedelta(days=1)
USABLE_STATES = ("active", "scheduled")
WAITING_STATES = ("pending", "payment-pending", "assessing", "delayed")
# The credential errors that mean "these are not usable credentials" (STS GetCallerIdentity's errors).
CREDENTIAL_ERRORS = ("InvalidClientTokenId", "ExpiredToken", "ExpiredTokenException", "SignatureDoesNotMatch")


class AwsInputError(Exception):
    """Credentials missing or refused: bad input (exit 2), one line."""


def boto3_clients() -> ClientFactory:
    """Clients of one boto3 session (the user's own credentials), each pinned to the Region it is asked for;
    botocore's standard retries, bounded timeouts."""
    session = boto3.session.Session()
    config = botocore.config.Config(
        retries={"mode": "standard", "max_attempts": 4}, connect_timeout=10, read_timeout=30
    )
    return lambda service, region: session.client(service, region_name=region, config=config)


@dataclass
class Calls:
    """Every AWS call goes through `call`: a failure becomes a warning naming the IAM action to grant."""

    clients: ClientFactory
    failures: list[Finding] = field(default_factory=list)

    def client(self, service: str, region: str) -> Client:
        return self.clients(service, region)

    def call(self, key: str, service: str, region: str, operation: str, **params: Any) -> Optional[dict[str, Any]]:
        try:
            return dict(getattr(self.client(service, region), _method(operation))(**params))
        except botocore.exceptions.ClientError as error:
            self.failures.append(failed_call(key, service, operation, region, error))
        except botocore.exceptions.BotoCoreError as error:
            self.failures.append(failed_call(key, service, operation, region, error))
        return None

    def pages(
        self, key: str, service: str, region: str, operation: str, items: str, **params: Any
    ) -> Optional[list[Any]]:
        """Every item of a paginated answer, or None when a page failed (reported)."""
        try:
            paginator = self.client(service, region).get_paginator(_method(operation))
            return [item for page in paginator.paginate(**params) for item in page.get(items, [])]
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as error:
            self.failures.append(failed_call(key, service, operation, region, error))
            return None


def failed_call(key: str, service: str, operation: str, region: str, error: Exception) -> Finding:
    """A call that failed: a warning naming the IAM action to grant (tools/preflight/data/permissions.yaml)."""
    action = next(
        (c.action for c in load_permissions().calls if c.service == service and c.operation == operation),
        f"{service}:{operation}",
    )
    return warning(
        key,
        f"could not check: {service} {operation} in {region} failed ({bounded(str(error), 160, quote=False)})",
        f"grant {action} (docs/preflight.md lists every call) and rerun",
    )


def _method(operation: str) -> str:
    """`DescribeInstanceTypeOfferings` -> `describe_instance_type_offerings` (botocore's own mapping)."""
    return str(botocore.xform_name(operation))


def regions_used(stack: PreflightStack) -> list[str]:
    regions = [stack.plan.aws.region] if stack.plan.aws else []
    return list(dict.fromkeys([*regions, *(e.region for e in stack.plan.sagemaker)]))


def check_credentials(clients: ClientFactory, region: str) -> str:
    """The caller's ARN; `AwsInputError` when there are no usable credentials."""
    try:
        return str(clients("sts", region).get_caller_identity()["Arn"])
    except botocore.exceptions.NoCredentialsError:
        raise AwsInputError(
            "AWS credentials: none found (environment, shared config or SSO); sign in (aws sso login, or "
            "export AWS_PROFILE) and rerun"
        ) from None
    except botocore.exceptions.ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code in CREDENTIAL_ERRORS:
            raise AwsInputError(f"AWS credentials: refused by STS ({code}); renew them and rerun") from None
        raise AwsInputError(f"AWS credentials: {bounded(str(error), 200, quote=False)}") from None
    except botocore.exceptions.BotoCoreError as error:
        raise AwsInputError(f"AWS: {bounded(str(error), 200, quote=False)}") from None


def aws_findings(stack: PreflightStack, clients: ClientFactory, now: datetime.datetime) -> list[Finding]:
    """Every AWS finding of the stack (none when it uses no AWS). Raises `AwsInputError` for credentials."""
    regions = regions_used(stack)
    if not regions:
        return []
    check_credentials(clients, regions[0])
    calls = Calls(clients)
    quotas = load_quotas()
    findings: list[Finding] = []
    if stack.plan.aws is not None:
        pools = PoolKeys.of(stack)
        findings += zone_findings(pools, calls, stack.plan.aws.region)
        findings += reservation_findings(pools, calls, stack.plan.aws.region, now)
        findings += vcpu_quota_findings(stack, pools, calls, quotas)
        findings += eks_findings(stack, calls)
    findings += endpoint_quota_findings(stack, calls, quotas)
    return findings + calls.failures


@dataclass(frozen=True)
class PoolKeys:
    """The managed pools the stack creates, each with its index in `aws.nodePools` (for the key paths)."""

    pools: tuple[tuple[int, ResolvedPool], ...]

    @classmethod
    def of(cls, stack: PreflightStack) -> PoolKeys:
        index = {pool.name: i for i, pool in enumerate(stack.config.aws.nodePools)} if stack.config.aws else {}
        return cls(tuple((index[p.name], p) for p in stack.plan.pools if p.managed and p.instance_type))

    def __iter__(self) -> Iterator[tuple[int, ResolvedPool]]:
        return iter(self.pools)


def _key(index: int, field_name: str) -> str:
    return f"aws.nodePools[{index}].{field_name}"


def _names(values: Iterable[str]) -> str:
    return ", ".join(sorted(values)) or "none"


# --- zones and offerings ----------------------------------------------------------------------------


def zone_findings(pools: PoolKeys, calls: Calls, region: str) -> list[Finding]:
    zoned = [(i, p) for i, p in pools if p.availability_zone]
    if not zoned:
        return []
    first_key = _key(zoned[0][0], "availabilityZone")
    zones = calls.call(first_key, "ec2", region, "DescribeAvailabilityZones", AllAvailabilityZones=True)
    types = sorted({p.instance_type for _, p in zoned if p.instance_type})
    offerings = calls.pages(
        first_key,
        "ec2",
        region,
        "DescribeInstanceTypeOfferings",
        "InstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": types}],
    )
    offered: dict[str, set[str]] = defaultdict(set)
    for offering in offerings or []:
        offered[offering["InstanceType"]].add(offering["Location"])
    known = {z["ZoneName"]: z for z in (zones or {}).get("AvailabilityZones", [])}
    findings = []
    for index, pool in zoned:
        zone, key = str(pool.availability_zone), _key(index, "availabilityZone")
        if zones is not None:
            problem = _zone_problem(zone, known, region)
            if problem is not None:
                findings.append(problem(key))
                continue
        # A Capacity Block pool is judged by its block (zone and type): blocks are sold where no offering is listed.
        if offerings is None or pool.capacity_type == "capacity-block":
            continue
        where = offered.get(str(pool.instance_type), set())
        if zone not in where:
            elsewhere = f"offered in {_names(where)}" if where else f"offered in no zone of {region}"
            findings.append(
                blocker(
                    key,
                    f"{pool.instance_type} is not offered in {zone}; {elsewhere}",
                    "set another zone" if where else "choose another Region or instance type",
                )
            )
    return findings


def _zone_problem(zone: str, known: dict[str, Any], region: str) -> Optional[Callable[[str], Finding]]:
    info = known.get(zone)
    if info is None:
        return lambda key: blocker(
            key, f"{zone} is not a zone this account has in {region} (it has {_names(known)})", "set one of them"
        )
    if info.get("OptInStatus") == "not-opted-in":
        group = info.get("GroupName", zone)
        return lambda key: blocker(
            key,
            f"{zone} is a {info.get('ZoneType', 'zone')} the account has not opted in to (zone group {group})",
            f"aws ec2 modify-availability-zone-group --group-name {group} --opt-in-status opted-in --region {region}",
        )
    if info.get("State", "available") != "available":
        return lambda key: warning(
            key, f"{zone} is {info['State']}", "check the AWS Health Dashboard or set another zone"
        )
    return None


# --- capacity reservations and Capacity Blocks ------------------------------------------------------------


def reservation_findings(pools: PoolKeys, calls: Calls, region: str, now: datetime.datetime) -> list[Finding]:
    findings = []
    for index, pool in pools:
        reservation_id = pool.capacity_reservation_id
        if not reservation_id:
            continue
        key = _key(index, "capacityReservationId")
        try:
            answer = calls.client("ec2", region).describe_capacity_reservations(CapacityReservationIds=[reservation_id])
        except botocore.exceptions.ClientError as error:
            if "NotFound" in error.response.get("Error", {}).get("Code", ""):
                findings.append(
                    blocker(
                        key,
                        f"{reservation_id} does not exist in {region} for this account",
                        "set the id `aws ec2 describe-capacity-reservations` lists, or buy the capacity first",
                    )
                )
            else:
                findings.append(failed_call(key, "ec2", "DescribeCapacityReservations", region, error))
            continue
        except botocore.exceptions.BotoCoreError as error:
            findings.append(failed_call(key, "ec2", "DescribeCapacityReservations", region, error))
            continue
        (reservation,) = answer["CapacityReservations"]
        findings += _reservation_problems(index, pool, reservation, now)
    return findings


def _reservation_problems(
    index: int, pool: ResolvedPool, reservation: dict[str, Any], now: datetime.datetime
) -> list[Finding]:
    rid = reservation["CapacityReservationId"]
    kind = reservation.get("ReservationType", "default")
    wanted_kind = "capacity-block" if pool.capacity_type == "capacity-block" else "default"
    what = "Capacity Block" if kind == "capacity-block" else "On-Demand Capacity Reservation"
    start, end = reservation.get("StartDate"), reservation.get("EndDate")
    dates = f"{_when(start)} to {_when(end) if end else 'no end'}"
    findings: list[Finding] = []
    if kind != wanted_kind:
        findings.append(
            blocker(
                _key(index, "capacityType"),
                f"{rid} is a{'' if kind == 'capacity-block' else 'n'} {what}, but the pool's capacityType is {pool.capacity_type}",
                f"set capacityType: {'capacity-block' if kind == 'capacity-block' else 'odcr'}",
            )
        )
    if reservation["InstanceType"] != pool.instance_type:
        findings.append(
            blocker(
                _key(index, "instanceType"),
                f"{rid} reserves {reservation['InstanceType']}, not {pool.instance_type}",
                f"set instanceType: {reservation['InstanceType']}, or a reservation of {pool.instance_type}",
            )
        )
    if reservation["AvailabilityZone"] != pool.availability_zone:
        findings.append(
            blocker(
                _key(index, "availabilityZone"),
                f"{rid} is in {reservation['AvailabilityZone']}, not {pool.availability_zone}: instances launch only in its zone",
                f"set availabilityZone: {reservation['AvailabilityZone']}",
            )
        )
    if reservation.get("InstancePlatform", "Linux/UNIX") != "Linux/UNIX":
        findings.append(
            blocker(
                _key(index, "capacityReservationId"),
                f"{rid} is for {reservation['InstancePlatform']}; EKS nodes are Linux/UNIX",
                "use a Linux/UNIX reservation",
            )
        )
    state = reservation["State"]
    key = _key(index, "capacityReservationId")
    ended = end is not None and end <= now
    if state not in USABLE_STATES or ended:
        if state in WAITING_STATES and not ended:
            findings.append(
                warning(key, f"{what} {rid} is {state} ({dates}): not usable yet", "wait until it is active")
            )
        else:
            findings.append(
                blocker(
                    key,
                    f"{what} {rid} is {'expired' if ended and state in USABLE_STATES else state} ({dates})",
                    "buy a new one and set its id, or set capacityType: on-demand and remove capacityReservationId",
                )
            )
        return findings
    if state == "scheduled" or (start is not None and start > now):
        if pool.desired_size > 0:
            findings.append(
                blocker(
                    key,
                    f"{what} {rid} starts {_when(start)} ({dates}): until then no node launches, and the node group "
                    f"waits for desiredSize {pool.desired_size}",
                    "set minSize and desiredSize to 0 until it starts, or run `pulumi up` after the start",
                )
            )
        else:
            findings.append(
                warning(key, f"{what} {rid} starts {_when(start)} ({dates})", "scale the pool up once it is active")
            )
    elif end is not None and end - now < ENDING_SOON:
        findings.append(
            warning(
                key,
                f"{what} {rid} ends {_when(end)}: EC2 terminates its instances before then",
                "extend it or buy the next block before relying on these nodes",
            )
        )
    total = int(reservation.get("TotalInstanceCount", 0))
    if total < pool.desired_size:
        findings.append(
            blocker(
                _key(index, "desiredSize"),
                f"{rid} holds {total} instance(s), fewer than desiredSize {pool.desired_size}",
                f"set desiredSize (and minSize) to at most {total}, or reserve more",
            )
        )
    elif total < pool.max_size:
        findings.append(
            warning(
                _key(index, "maxSize"),
                f"{rid} holds {total} instance(s), fewer than maxSize {pool.max_size}: scaling past it fails",
                f"set maxSize: {total}, or reserve more",
            )
        )
    available = reservation.get("AvailableInstanceCount")
    if state == "active" and available is not None and int(available) < min(pool.desired_size, total):
        findings.append(
            warning(
                key,
                f"{rid} has {available} of {total} instance(s) free; the pool wants {pool.desired_size} "
                "(other instances, or this stack's own nodes, use the rest)",
                "free them, or lower desiredSize",
            )
        )
    return findings


def _when(moment: Optional[datetime.datetime]) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC") if moment else "now"


# --- vCPU quotas -------------------------------------------------------------------------------------------


@dataclass
class QuotaNeed:
    quota: Ec2Quota
    vcpus: int = 0
    users: list[tuple[str, str]] = field(default_factory=list)  # (config key, "name: n x vcpus")


def vcpu_quota_findings(stack: PreflightStack, pools: PoolKeys, calls: Calls, quotas: QuotasFile) -> list[Finding]:
    region = stack.plan.aws.region if stack.plan.aws else ""
    instance_facts = load_facts().aws.instance_types
    needs: dict[str, QuotaNeed] = {}
    findings: list[Finding] = []

    def add(key: str, label: str, instance_type: str, count: int, vcpus: int, capacity_type: str) -> None:
        purchase = quotas.ec2.purchaseOptions.get(capacity_type)
        if purchase is None or count == 0:
            return
        family = instance_type.split(".")[0]
        quota = quotas.ec2.quota_for(family, purchase)
        if quota is None:
            findings.append(
                warning(
                    key,
                    f"no {purchase} vCPU quota is known for the {family} family (tools/preflight/data/quotas.yaml)",
                    "check the account's EC2 quotas in the Service Quotas console",
                )
            )
            return
        need = needs.setdefault(quota.code, QuotaNeed(quota))
        need.vcpus += count * vcpus
        need.users.append((key, f"{label} {count} x {vcpus}"))

    for index, pool in pools:
        facts = instance_facts.get(str(pool.instance_type))
        if facts is not None:
            add(
                _key(index, "maxSize"),
                pool.name,
                str(pool.instance_type),
                pool.max_size,
                facts.vcpus,
                pool.capacity_type,
            )
    cluster = stack.plan.cluster
    if isinstance(cluster, CreatedCluster):
        system = cluster.system_nodes
        answer = calls.call(
            "aws.systemNodeGroup.instanceTypes",
            "ec2",
            region,
            "DescribeInstanceTypes",
            InstanceTypes=list(system.instance_types),
        )
        sizes = {t["InstanceType"]: int(t["VCpuInfo"]["DefaultVCpus"]) for t in (answer or {}).get("InstanceTypes", [])}
        if sizes:  # the largest type the group may launch, maxSize times
            largest = max(sizes, key=lambda name: (sizes[name], name))
            add("aws.systemNodeGroup.maxSize", "system", largest, system.max_size, sizes[largest], "on-demand")
    for code in sorted(needs):  # one call per quota, in code order
        findings += _judge_quota(needs[code], calls, region, quotas.ec2.serviceCode)
    return findings


def _judge_quota(need: QuotaNeed, calls: Calls, region: str, service_code: str) -> list[Finding]:
    key = need.users[0][0]
    quota = _ec2_quota(calls, key, region, service_code, need.quota.code)
    if quota is None:
        return []
    name, value = quota.get("QuotaName", ""), float(quota.get("Value", 0))
    if name and name != need.quota.name:
        return [
            warning(
                key,
                f"quota {need.quota.code} is named {bounded(name)} in {region}, not {need.quota.name!r}: "
                "not judged (tools/preflight/data/quotas.yaml may be stale)",
                "correct the code in tools/preflight/data/quotas.yaml",
            )
        ]
    if value >= need.vcpus:
        return []
    others = ", ".join(k for k, _ in need.users[1:])
    counted = "; ".join(text for _, text in need.users) + (f" (with {others})" if others else "")
    return [
        blocker(
            key,
            f"{need.vcpus} vCPUs of {need.quota.name!r} needed at maxSize ({counted}), "
            f"the account's quota {need.quota.code} in {region} is {value:g}",
            f"aws service-quotas request-service-quota-increase --service-code {service_code} "
            f"--quota-code {need.quota.code} --desired-value {need.vcpus} --region {region}, or lower maxSize",
        )
    ]


def _ec2_quota(calls: Calls, key: str, region: str, service_code: str, code: str) -> Optional[dict[str, Any]]:
    """The applied value, or AWS's default where none is applied (GetServiceQuota's NoSuchResourceException)."""
    client = calls.client("service-quotas", region)
    try:
        return dict(client.get_service_quota(ServiceCode=service_code, QuotaCode=code)["Quota"])
    except botocore.exceptions.ClientError as error:
        if error.response.get("Error", {}).get("Code") != "NoSuchResourceException":
            calls.failures.append(failed_call(key, "service-quotas", "GetServiceQuota", region, error))
            return None
    except botocore.exceptions.BotoCoreError as error:
        calls.failures.append(failed_call(key, "service-quotas", "GetServiceQuota", region, error))
        return None
    answer = calls.call(
        key, "service-quotas", region, "GetAWSDefaultServiceQuota", ServiceCode=service_code, QuotaCode=code
    )
    return dict(answer["Quota"]) if answer else None


# --- SageMaker endpoint instances --------------------------------------------------------------------------


def endpoint_quota_findings(stack: PreflightStack, calls: Calls, quotas: QuotasFile) -> list[Finding]:
    index = {e.name: i for i, e in enumerate(stack.config.sagemaker.endpoints)}
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for endpoint in stack.plan.sagemaker:
        groups[(endpoint.region, endpoint.variant.instance_type)].append(endpoint)
    findings: list[Finding] = []
    listed: dict[str, Optional[dict[str, float]]] = {}
    for (region, instance_type), endpoints in groups.items():
        first = f"sagemaker.endpoints[{index[endpoints[0].name]}]"
        if region not in listed:
            listed[region] = _sagemaker_quotas(calls, f"{first}.instanceType", region, quotas.sagemaker.serviceCode)
        values = listed[region]
        if values is None:
            continue
        name = quotas.sagemaker.endpoint_quota_name(instance_type)
        if name not in values:
            findings.append(
                warning(
                    f"{first}.instanceType",
                    f"no Service Quota named {name!r} in {region}: SageMaker may not host {instance_type} there",
                    "check the SageMaker AI instance types of the Region, or choose another instance type",
                )
            )
            continue
        value = values[name]
        initial = sum(e.variant.initial_instance_count for e in endpoints)
        peak = sum(
            max(e.scaling.max_capacity if e.scaling.enabled else 0, e.variant.initial_instance_count) for e in endpoints
        )
        if value < initial:
            findings.append(
                blocker(
                    f"{first}.initialInstanceCount",
                    f"{initial} {instance_type} instance(s) for endpoints at `up`, the quota {name!r} in {region} is {value:g}",
                    f"request an increase of {name!r} to at least {initial} (Service Quotas console, or "
                    f"aws service-quotas request-service-quota-increase --service-code {quotas.sagemaker.serviceCode} ...)",
                )
            )
        elif value < max(peak, 2 * initial):
            findings.append(
                warning(
                    f"{first}.autoscaling.maxCapacity",
                    f"the quota {name!r} in {region} is {value:g}: below autoscaling's {peak} or the {2 * initial} "
                    "a blue/green update runs (a second fleet beside the first)",
                    f"request an increase of {name!r} to {max(peak, 2 * initial)}",
                )
            )
    return findings


def _sagemaker_quotas(calls: Calls, key: str, region: str, service_code: str) -> Optional[dict[str, float]]:
    """QuotaName -> value: the applied quotas over AWS's defaults."""
    defaults = calls.pages(
        key, "service-quotas", region, "ListAWSDefaultServiceQuotas", "Quotas", ServiceCode=service_code
    )
    applied = calls.pages(key, "service-quotas", region, "ListServiceQuotas", "Quotas", ServiceCode=service_code)
    if defaults is None and applied is None:
        return None
    return {q["QuotaName"]: float(q["Value"]) for q in [*(defaults or []), *(applied or [])] if "Value" in q}


# --- EKS ----------------------------------------------------------------------------------------------------


def eks_findings(stack: PreflightStack, calls: Calls) -> list[Finding]:
    cluster, region = stack.plan.cluster, stack.plan.aws.region if stack.plan.aws else ""
    if isinstance(cluster, CreatedCluster):
        return _offered_version(cluster, calls, region)
    if isinstance(cluster, KubeconfigCluster) and cluster.eks is not None and stack.config.aws is not None:
        existing = stack.config.aws.cluster.existing if stack.config.aws.cluster else None
        answer = _describe_cluster(calls, cluster.eks.name, region)
        if isinstance(answer, Finding):
            return [answer]
        stated = existing.kubernetesVersion if existing else None
        if answer is not None and stated is not None and answer["cluster"]["version"] != stated:
            return [
                blocker(
                    "aws.cluster.existing.kubernetesVersion",
                    f"cluster {cluster.eks.name} runs Kubernetes {answer['cluster']['version']}, not {stated}",
                    f'set kubernetesVersion: "{answer["cluster"]["version"]}"',
                )
            ]
    return []


def _describe_cluster(calls: Calls, name: str, region: str) -> Any:
    try:
        return calls.client("eks", region).describe_cluster(name=name)
    except botocore.exceptions.ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return blocker(
                "aws.cluster.existing.name",
                f"no EKS cluster {name} in {region} for this account",
                "set the cluster's name",
            )
        return failed_call("aws.cluster.existing.name", "eks", "DescribeCluster", region, error)
    except botocore.exceptions.BotoCoreError as error:
        return failed_call("aws.cluster.existing.name", "eks", "DescribeCluster", region, error)


VERSION_KEY = "aws.cluster.create.kubernetesVersion"


def _offered_version(cluster: CreatedCluster, calls: Calls, region: str) -> list[Finding]:
    """DescribeClusterVersions (status per version); where it is refused, DescribeAddonVersions for the
    version (an empty answer: EKS offers no add-on, so no cluster, of that version)."""
    version = cluster.kubernetes_version
    try:
        paginator = calls.client("eks", region).get_paginator("describe_cluster_versions")
        offered = [v for page in paginator.paginate() for v in page.get("clusterVersions", [])]
    except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError):
        return _addon_fallback(cluster, calls, region)
    row = next((v for v in offered if v.get("clusterVersion") == version), None)
    standard = sorted(v["clusterVersion"] for v in offered if v.get("versionStatus") == "STANDARD_SUPPORT")
    if row is None:
        return [
            blocker(
                VERSION_KEY, f"EKS in {region} does not offer Kubernetes {version}", f"set one of {_names(standard)}"
            )
        ]
    if row.get("versionStatus") != "STANDARD_SUPPORT":
        return [
            blocker(
                VERSION_KEY,
                f"Kubernetes {version} is {row.get('versionStatus')} in {region}; the stack creates clusters with "
                "upgradePolicy STANDARD, which EKS accepts only in standard support",
                f"set one of {_names(standard)}",
            )
        ]
    return []


def _addon_fallback(cluster: CreatedCluster, calls: Calls, region: str) -> list[Finding]:
    addon = cluster.addons[0].name if cluster.addons else "vpc-cni"
    answer = calls.call(
        VERSION_KEY,
        "eks",
        region,
        "DescribeAddonVersions",
        kubernetesVersion=cluster.kubernetes_version,
        addonName=addon,
    )
    if answer is not None and not answer.get("addons"):
        return [
            blocker(
                VERSION_KEY,
                f"EKS in {region} lists no {addon} add-on for Kubernetes {cluster.kubernetes_version}: it offers no such clusters",
                "set a version EKS offers (aws eks describe-cluster-versions)",
            )
        ]
    return []
