"""The AWS side of the preflight, with the user's own credentials (boto3's chain), always in the Region the stack
names: each managed GPU pool's zone and instance-type offering, its capacity reservation or block, the EC2 vCPU
quotas at every pool's maxSize (tools/preflight/data/quotas.yaml), the SageMaker endpoint-instance quotas and
the EKS version (docs/preflight.md lists each check and call). A call that fails is a warning naming the IAM
action, never a pass; credentials that are missing or refused stop the run (exit 2) before any check.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Callable
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
from tools.preflight.stack import Finding, PreflightStack, blocker, warning

Client = Any  # a botocore client
ClientFactory = Callable[[str, str], Client]  # (service, region) -> client
AwsError = (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError)
# A Capacity Block ends at its EndDate; EKS scales its node group to 0 forty minutes before (AWS-FACTS.md).
ENDING_SOON = datetime.timedelta(days=1)
USABLE_STATES = ("active", "scheduled")
WAITING_STATES = ("pending", "payment-pending", "assessing", "delayed")
# The credential errors that mean "these are not usable credentials" (STS GetCallerIdentity's errors).
CREDENTIAL_ERRORS = ("InvalidClientTokenId", "ExpiredToken", "ExpiredTokenException", "SignatureDoesNotMatch")
VERSION_KEY = "aws.cluster.create.kubernetesVersion"


class AwsInputError(Exception):
    """Credentials missing or refused: bad input (exit 2), one line."""


def boto3_clients() -> ClientFactory:
    """Clients of one boto3 session, each pinned to the Region asked for; standard retries, bounded timeouts."""
    session = boto3.session.Session()
    config = botocore.config.Config(
        retries={"mode": "standard", "max_attempts": 4}, connect_timeout=10, read_timeout=30
    )
    return lambda service, region: session.client(service, region_name=region, config=config)


def _code(error: Exception) -> str:
    return str(getattr(error, "response", {}).get("Error", {}).get("Code", ""))


@dataclass
class Calls:
    """Every AWS call goes through `call`: a failure becomes a warning naming the IAM action to grant."""

    clients: ClientFactory
    failures: list[Finding] = field(default_factory=list)

    def call(
        self, key: str, service: str, region: str, operation: str, items: str = "", raising: str = "", **params: Any
    ) -> Any:
        """The answer (every item of a paginated answer when `items` names them), or None when the call failed
        (reported). A `ClientError` whose code contains `raising` is the caller's to handle."""
        method = botocore.xform_name(operation)
        try:
            client = self.clients(service, region)
            if items:
                return [i for page in client.get_paginator(method).paginate(**params) for i in page.get(items, [])]
            return dict(getattr(client, method)(**params))
        except AwsError as error:
            if raising and raising in _code(error):
                raise
            self.failures.append(failed_call(key, service, operation, region, error))
            return None


def failed_call(key: str, service: str, operation: str, region: str, error: Exception) -> Finding:
    """A call that failed: a warning naming the IAM action to grant (tools/preflight/data/permissions.yaml)."""
    calls = load_permissions().calls
    action = next(
        (c.action for c in calls if (c.service, c.operation) == (service, operation)), f"{service}:{operation}"
    )
    return warning(
        key,
        f"could not check: {service} {operation} in {region} failed ({bounded(str(error), 160, quote=False)})",
        f"grant {action} (docs/preflight.md lists every call) and rerun",
    )


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
        if _code(error) in CREDENTIAL_ERRORS:
            raise AwsInputError(f"AWS credentials: refused by STS ({_code(error)}); renew them and rerun") from None
        raise AwsInputError(f"AWS credentials: {bounded(str(error), 200, quote=False)}") from None
    except botocore.exceptions.BotoCoreError as error:
        raise AwsInputError(f"AWS: {bounded(str(error), 200, quote=False)}") from None


def aws_findings(stack: PreflightStack, clients: ClientFactory, now: datetime.datetime) -> list[Finding]:
    """Every AWS finding of the stack (none when it uses no AWS). Raises `AwsInputError` for credentials."""
    regions = regions_used(stack)
    if not regions:
        return []
    check_credentials(clients, regions[0])
    calls, quotas, findings = Calls(clients), load_quotas(), []
    if stack.plan.aws is not None:
        pools, region = managed_pools(stack), stack.plan.aws.region
        findings += zone_findings(pools, calls, region) + reservation_findings(pools, calls, region, now)
        findings += vcpu_quota_findings(stack, pools, calls, quotas) + eks_findings(stack, calls)
    return findings + endpoint_quota_findings(stack, calls, quotas) + calls.failures


PoolKeys = tuple[tuple[int, ResolvedPool], ...]  # (index in `aws.nodePools`, for the key paths; pool)


def managed_pools(stack: PreflightStack) -> PoolKeys:
    """The managed pools the stack creates, each with its index in `aws.nodePools`."""
    index = {pool.name: i for i, pool in enumerate(stack.config.aws.nodePools)} if stack.config.aws else {}
    return tuple((index[p.name], p) for p in stack.plan.pools if p.managed and p.instance_type)


def _key(index: int, field_name: str) -> str:
    return f"aws.nodePools[{index}].{field_name}"


def _names(values: Any) -> str:
    return ", ".join(sorted(values)) or "none"


def zone_findings(pools: PoolKeys, calls: Calls, region: str) -> list[Finding]:
    zoned = [(i, p) for i, p in pools if p.availability_zone]
    if not zoned:
        return []
    key = _key(zoned[0][0], "availabilityZone")
    zones = calls.call(key, "ec2", region, "DescribeAvailabilityZones", AllAvailabilityZones=True)
    types = sorted({str(p.instance_type) for _, p in zoned})
    filters = [{"Name": "instance-type", "Values": types}]
    offerings = calls.call(
        key,
        "ec2",
        region,
        "DescribeInstanceTypeOfferings",
        "InstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=filters,
    )
    offered: dict[str, set[str]] = defaultdict(set)
    for offering in offerings or []:
        offered[offering["InstanceType"]].add(offering["Location"])
    known = {z["ZoneName"]: z for z in (zones or {}).get("AvailabilityZones", [])}
    findings = []
    for index, pool in zoned:
        zone, key = str(pool.availability_zone), _key(index, "availabilityZone")
        info = known.get(zone, {})
        if zones is not None and not info:
            problem = f"{zone} is not a zone this account has in {region} (it has {_names(known)})"
            findings.append(blocker(key, problem, "set one of them"))
        elif zones is not None and info.get("OptInStatus") == "not-opted-in":
            group = info.get("GroupName", zone)
            problem = f"{zone} is a {info.get('ZoneType', 'zone')} the account has not opted in to (zone group {group})"
            fix = f"aws ec2 modify-availability-zone-group --group-name {group} --opt-in-status opted-in --region {region}"
            findings.append(blocker(key, problem, fix))
        elif zones is not None and info.get("State", "available") != "available":
            fix = "check the AWS Health Dashboard or set another zone"
            findings.append(warning(key, f"{zone} is {info['State']}", fix))
        # A Capacity Block pool is judged by its block (zone and type): blocks are sold where no offering is listed.
        elif offerings is not None and pool.capacity_type != "capacity-block":
            where = offered.get(str(pool.instance_type), set())
            if zone not in where:
                elsewhere = f"offered in {_names(where)}" if where else f"offered in no zone of {region}"
                fix = "set another zone" if where else "choose another Region or instance type"
                findings.append(blocker(key, f"{pool.instance_type} is not offered in {zone}; {elsewhere}", fix))
    return findings


def reservation_findings(pools: PoolKeys, calls: Calls, region: str, now: datetime.datetime) -> list[Finding]:
    findings = []
    for index, pool in ((i, p) for i, p in pools if p.capacity_reservation_id):
        rid, key = pool.capacity_reservation_id, _key(index, "capacityReservationId")
        try:
            answer = calls.call(
                key, "ec2", region, "DescribeCapacityReservations", raising="NotFound", CapacityReservationIds=[rid]
            )
        except botocore.exceptions.ClientError:
            fix = "set the id `aws ec2 describe-capacity-reservations` lists, or buy the capacity first"
            findings.append(blocker(key, f"{rid} does not exist in {region} for this account", fix))
            continue
        if answer is not None:
            (reservation,) = answer["CapacityReservations"]
            findings += _reservation_problems(index, pool, reservation, now)
    return findings


def _reservation_problems(
    index: int, pool: ResolvedPool, found: dict[str, Any], now: datetime.datetime
) -> list[Finding]:
    rid, kind = found["CapacityReservationId"], found.get("ReservationType", "default")
    block = kind == "capacity-block"
    what = "Capacity Block" if block else "On-Demand Capacity Reservation"
    start, end = found.get("StartDate"), found.get("EndDate")
    dates = f"{_when(start)} to {_when(end) if end else 'no end'}"
    key, state, ended = _key(index, "capacityReservationId"), found["State"], end is not None and end <= now
    total = int(found.get("TotalInstanceCount", 0))
    checks: list[tuple[bool, Callable[[str, str, str], Finding], str, str, str]] = [
        (
            kind != ("capacity-block" if pool.capacity_type == "capacity-block" else "default"),
            blocker,
            "capacityType",
            f"{rid} is a{'' if block else 'n'} {what}, but the pool's capacityType is {pool.capacity_type}",
            f"set capacityType: {'capacity-block' if block else 'odcr'}",
        ),
        (
            found["InstanceType"] != pool.instance_type,
            blocker,
            "instanceType",
            f"{rid} reserves {found['InstanceType']}, not {pool.instance_type}",
            f"set instanceType: {found['InstanceType']}, or a reservation of {pool.instance_type}",
        ),
        (
            found["AvailabilityZone"] != pool.availability_zone,
            blocker,
            "availabilityZone",
            f"{rid} is in {found['AvailabilityZone']}, not {pool.availability_zone}: instances launch only in its zone",
            f"set availabilityZone: {found['AvailabilityZone']}",
        ),
        (
            found.get("InstancePlatform", "Linux/UNIX") != "Linux/UNIX",
            blocker,
            "capacityReservationId",
            f"{rid} is for {found.get('InstancePlatform')}; EKS nodes are Linux/UNIX",
            "use a Linux/UNIX reservation",
        ),
    ]
    findings = [make(_key(index, name), problem, fix) for wrong, make, name, problem, fix in checks if wrong]
    if state in WAITING_STATES and not ended:
        waiting = warning(key, f"{what} {rid} is {state} ({dates}): not usable yet", "wait until it is active")
        return [*findings, waiting]
    if state not in USABLE_STATES or ended:
        gone = "expired" if ended and state in USABLE_STATES else state
        fix = "buy a new one and set its id, or set capacityType: on-demand and remove capacityReservationId"
        return [*findings, blocker(key, f"{what} {rid} is {gone} ({dates})", fix)]
    available = found.get("AvailableInstanceCount")
    checks = [
        (
            (state == "scheduled" or (start is not None and start > now)) and pool.desired_size > 0,
            blocker,
            "capacityReservationId",
            f"{what} {rid} starts {_when(start)} ({dates}): until then no node launches, and the node group "
            f"waits for desiredSize {pool.desired_size}",
            "set minSize and desiredSize to 0 until it starts, or run `pulumi up` after the start",
        ),
        (
            (state == "scheduled" or (start is not None and start > now)) and pool.desired_size == 0,
            warning,
            "capacityReservationId",
            f"{what} {rid} starts {_when(start)} ({dates})",
            "scale the pool up once it is active",
        ),
        (
            state != "scheduled" and (start is None or start <= now) and end is not None and end - now < ENDING_SOON,
            warning,
            "capacityReservationId",
            f"{what} {rid} ends {_when(end)}: EC2 terminates its instances before then",
            "extend it or buy the next block before relying on these nodes",
        ),
        (
            total < pool.desired_size,
            blocker,
            "desiredSize",
            f"{rid} holds {total} instance(s), fewer than desiredSize {pool.desired_size}",
            f"set desiredSize (and minSize) to at most {total}, or reserve more",
        ),
        (
            pool.desired_size <= total < pool.max_size,
            warning,
            "maxSize",
            f"{rid} holds {total} instance(s), fewer than maxSize {pool.max_size}: scaling past it fails",
            f"set maxSize: {total}, or reserve more",
        ),
        (
            state == "active" and available is not None and int(available) < min(pool.desired_size, total),
            warning,
            "capacityReservationId",
            f"{rid} has {available} of {total} instance(s) free; the pool wants {pool.desired_size} "
            "(other instances, or this stack's own nodes, use the rest)",
            "free them, or lower desiredSize",
        ),
    ]
    return findings + [make(_key(index, name), problem, fix) for wrong, make, name, problem, fix in checks if wrong]


def _when(moment: Optional[datetime.datetime]) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC") if moment else "now"


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
            problem = f"no {purchase} vCPU quota is known for the {family} family (tools/preflight/data/quotas.yaml)"
            findings.append(warning(key, problem, "check the account's EC2 quotas in the Service Quotas console"))
            return
        need = needs.setdefault(quota.code, QuotaNeed(quota))
        need.vcpus += count * vcpus
        need.users.append((key, f"{label} {count} x {vcpus}"))

    for index, pool in pools:
        instance_type = str(pool.instance_type)
        if instance_type in instance_facts:
            vcpus = instance_facts[instance_type].vcpus
            add(_key(index, "maxSize"), pool.name, instance_type, pool.max_size, vcpus, pool.capacity_type)
    if isinstance(stack.plan.cluster, CreatedCluster):
        system = stack.plan.cluster.system_nodes
        types = list(system.instanceTypes)
        answer = calls.call(
            "aws.systemNodeGroup.instanceTypes", "ec2", region, "DescribeInstanceTypes", InstanceTypes=types
        )
        sizes = {t["InstanceType"]: int(t["VCpuInfo"]["DefaultVCpus"]) for t in (answer or {}).get("InstanceTypes", [])}
        if sizes:  # the largest type the group may launch, maxSize times
            largest = max(sizes, key=lambda name: (sizes[name], name))
            add("aws.systemNodeGroup.maxSize", "system", largest, system.maxSize, sizes[largest], "on-demand")
    for code in sorted(needs):  # one call per quota, in code order
        findings += _judge_quota(needs[code], calls, region, quotas.ec2.serviceCode)
    return findings


def _judge_quota(need: QuotaNeed, calls: Calls, region: str, service: str) -> list[Finding]:
    key, code = need.users[0][0], need.quota.code
    quota = {"ServiceCode": service, "QuotaCode": code}
    try:  # the applied value, else AWS's default (GetServiceQuota's NoSuchResourceException)
        answer = calls.call(key, "service-quotas", region, "GetServiceQuota", raising="NoSuchResource", **quota)
    except botocore.exceptions.ClientError:
        answer = calls.call(key, "service-quotas", region, "GetAWSDefaultServiceQuota", **quota)
    if answer is None:
        return []
    name, value = answer["Quota"].get("QuotaName", ""), float(answer["Quota"].get("Value", 0))
    if name and name != need.quota.name:
        return [
            warning(
                key,
                f"quota {code} is named {bounded(name)} in {region}, not {need.quota.name!r}: "
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
            f"the account's quota {code} in {region} is {value:g}",
            f"aws service-quotas request-service-quota-increase --service-code {service} "
            f"--quota-code {code} --desired-value {need.vcpus} --region {region}, or lower maxSize",
        )
    ]


def endpoint_quota_findings(stack: PreflightStack, calls: Calls, quotas: QuotasFile) -> list[Finding]:
    index = {e.name: i for i, e in enumerate(stack.config.sagemaker.endpoints)}
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for endpoint in stack.plan.sagemaker:
        groups[(endpoint.region, endpoint.config.instanceType)].append(endpoint)
    service = quotas.sagemaker.serviceCode
    findings: list[Finding] = []
    listed: dict[str, Optional[dict[str, float]]] = {}
    for (region, instance_type), endpoints in groups.items():
        first = f"sagemaker.endpoints[{index[endpoints[0].name]}]"
        if region not in listed:  # QuotaName -> value: the applied quotas over AWS's defaults
            pages = [
                calls.call(f"{first}.instanceType", "service-quotas", region, operation, "Quotas", ServiceCode=service)
                for operation in ("ListAWSDefaultServiceQuotas", "ListServiceQuotas")
            ]
            found = [q for page in pages for q in page or [] if "Value" in q]
            listed[region] = None if pages == [None, None] else {q["QuotaName"]: float(q["Value"]) for q in found}
        values, name = listed[region], quotas.sagemaker.endpoint_quota_name(instance_type)
        if values is None:
            continue
        if name not in values:
            problem = f"no Service Quota named {name!r} in {region}: SageMaker may not host {instance_type} there"
            fix = "check the SageMaker AI instance types of the Region, or choose another instance type"
            findings.append(warning(f"{first}.instanceType", problem, fix))
            continue
        value, initial = values[name], sum(e.config.initialInstanceCount for e in endpoints)
        peak = sum(
            max(s.maxCapacity if (s := e.config.autoscaling).enabled else 0, e.config.initialInstanceCount)
            for e in endpoints
        )
        if value < initial:
            problem = f"{initial} {instance_type} instance(s) for endpoints at `up`, the quota {name!r} in {region} is {value:g}"
            fix = (
                f"request an increase of {name!r} to at least {initial} (Service Quotas console, or "
                f"aws service-quotas request-service-quota-increase --service-code {service} ...)"
            )
            findings.append(blocker(f"{first}.initialInstanceCount", problem, fix))
        elif value < max(peak, 2 * initial):
            problem = (
                f"the quota {name!r} in {region} is {value:g}: below autoscaling's {peak} or the {2 * initial} "
                "a blue/green update runs (a second fleet beside the first)"
            )
            fix = f"request an increase of {name!r} to {max(peak, 2 * initial)}"
            findings.append(warning(f"{first}.autoscaling.maxCapacity", problem, fix))
    return findings


def eks_findings(stack: PreflightStack, calls: Calls) -> list[Finding]:
    cluster, region = stack.plan.cluster, stack.plan.aws.region if stack.plan.aws else ""
    if isinstance(cluster, CreatedCluster):
        return _offered_version(cluster, calls, region)
    if not (isinstance(cluster, KubeconfigCluster) and cluster.eks is not None and stack.config.aws is not None):
        return []
    existing, name = stack.config.aws.cluster.existing if stack.config.aws.cluster else None, cluster.eks.name
    key = "aws.cluster.existing.name"
    try:
        answer = calls.call(key, "eks", region, "DescribeCluster", raising="ResourceNotFound", name=name)
    except botocore.exceptions.ClientError:
        return [blocker(key, f"no EKS cluster {name} in {region} for this account", "set the cluster's name")]
    stated, running = existing.kubernetesVersion if existing else None, answer["cluster"]["version"] if answer else None
    if running is None or stated is None or running == stated:
        return []
    return [
        blocker(
            "aws.cluster.existing.kubernetesVersion",
            f"cluster {name} runs Kubernetes {running}, not {stated}",
            f'set kubernetesVersion: "{running}"',
        )
    ]


def _offered_version(cluster: CreatedCluster, calls: Calls, region: str) -> list[Finding]:
    """DescribeClusterVersions (status per version); where it is refused, DescribeAddonVersions for the
    version (an empty answer: EKS offers no add-on, so no cluster, of that version)."""
    version = cluster.create.kubernetesVersion
    try:
        paginator = calls.clients("eks", region).get_paginator("describe_cluster_versions")
        offered = [v for page in paginator.paginate() for v in page.get("clusterVersions", [])]
    except AwsError:
        addon = cluster.addons[0].name if cluster.addons else "vpc-cni"
        params = {"kubernetesVersion": version, "addonName": addon}
        answer = calls.call(VERSION_KEY, "eks", region, "DescribeAddonVersions", **params)
        if answer is None or answer.get("addons"):
            return []
        return [
            blocker(
                VERSION_KEY,
                f"EKS in {region} lists no {addon} add-on for Kubernetes {version}: it offers no such clusters",
                "set a version EKS offers (aws eks describe-cluster-versions)",
            )
        ]
    row = next((v for v in offered if v.get("clusterVersion") == version), None)
    standard = _names(v["clusterVersion"] for v in offered if v.get("versionStatus") == "STANDARD_SUPPORT")
    if row is None:
        return [blocker(VERSION_KEY, f"EKS in {region} does not offer Kubernetes {version}", f"set one of {standard}")]
    if row.get("versionStatus") == "STANDARD_SUPPORT":
        return []
    return [
        blocker(
            VERSION_KEY,
            f"Kubernetes {version} is {row.get('versionStatus')} in {region}; the stack creates clusters with "
            "upgradePolicy STANDARD, which EKS accepts only in standard support",
            f"set one of {standard}",
        )
    ]
