"""least-privilege against evasions found by probing the pack: hostPath volumes and Windows host processes,
RBAC that aggregates admin rights or spells out every verb, EKS access entries in system:masters, IAM wildcards
written with `?`, admin managed policies by name, resource policies of every kind open to principal "*" and
conditions that do not limit who calls. Each evasion is reported; what the stack itself does still passes.

One catalogue of probed evasions, each case beside the legitimate use that must still pass, so a new probe
lands next to the ones it resembles."""

from __future__ import annotations

import json

import pytest
from policy_helpers import DAEMON_SET, JOB, check_resource

from policy.nemotron_policies.pod_privileges import DEFAULT_ALLOWED_HOST_PATHS
from policy.nemotron_policies.rbac import GRANTS
from serving_stack.plan.model_cache import STATE_DIR

RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


def pod(volumes: list | None = None, mounts: list | None = None, context: dict | None = None, **spec: object) -> dict:
    container: dict = {"name": "main", "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"}
    if mounts is not None:
        container["volumeMounts"] = mounts
    if context is not None:
        container["securityContext"] = context
    return {"spec": {"template": {"spec": {"containers": [container], "volumes": volumes or [], **spec}}}}


def host_path(path: str, read_only: bool | None = None, config: dict | None = None) -> list[str]:
    mount: dict = {"name": "host", "mountPath": "/host"}
    if read_only is not None:
        mount["readOnly"] = read_only
    return check_resource("least-privilege", JOB, pod([{"name": "host", "hostPath": {"path": path}}], [mount]), config)


def test_the_default_allow_list_is_the_stacks_prewarm_state_dir():
    assert DEFAULT_ALLOWED_HOST_PATHS == [STATE_DIR]


@pytest.mark.parametrize("path", [STATE_DIR, f"{STATE_DIR}/", f"{STATE_DIR}/node-a"])
def test_the_prewarm_state_dir_may_be_mounted_read_write(path):
    assert host_path(path) == []
    assert host_path(path, read_only=True) == []


@pytest.mark.parametrize(
    "path", ["/", "/etc", "/var/lib", f"{STATE_DIR}-evil", f"{STATE_DIR}/../kubelet", "/run/containerd/containerd.sock"]
)
def test_other_host_paths_are_reported_read_only_or_not(path):
    (found,) = host_path(path)
    assert found.startswith(f"pod template mounts hostPath {path} (volume host) read-write;")
    assert host_path(path, read_only=True)[0].startswith(f"pod template mounts hostPath {path} (volume host) read-only")


def test_read_only_allow_list_entries_admit_only_read_only_mounts():
    config = {"allowedHostPaths": ["/var/log:ro"]}
    assert host_path("/var/log/pods", read_only=True, config=config) == []
    assert host_path("/var/log/pods", read_only=False, config=config) != []
    assert host_path(STATE_DIR, config=config) != []  # the config replaces the default
    assert host_path(STATE_DIR, config={"allowedHostPaths": []}) != []


def test_host_paths_of_persistent_volumes_and_unmounted_volumes_are_reported():
    volume = {"metadata": {"name": "pv"}, "spec": {"hostPath": {"path": "/"}, "capacity": {"storage": "1Gi"}}}
    assert check_resource("least-privilege", "kubernetes:core/v1:PersistentVolume", volume) == [
        "PersistentVolume pv is a hostPath volume (/) outside allowedHostPaths"
    ]
    assert check_resource("least-privilege", JOB, pod([{"name": "x", "hostPath": {"path": "/etc"}}])) != []


def test_device_plugins_keep_their_host_paths():
    plugin = pod([{"name": "dev", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}])
    assert check_resource("least-privilege", DAEMON_SET, plugin, parent_type="nemotron:kubernetes:DevicePlugins") == []


def test_windows_host_processes_are_reported_at_pod_and_container_level():
    windows = {"windowsOptions": {"hostProcess": True}}
    assert check_resource("least-privilege", JOB, pod(securityContext=windows)) == [
        "pod template sets securityContext.windowsOptions.hostProcess: true (a process on the node)"
    ]
    assert check_resource("least-privilege", JOB, pod(context=windows)) == [
        "container main of pod template sets windowsOptions.hostProcess: true (a process on the node)"
    ]
    assert check_resource("least-privilege", JOB, pod(context={"windowsOptions": {"hostProcess": False}})) == []


@pytest.mark.parametrize(
    ("selector", "reported"),
    [
        ({"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}, True),
        ({"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}, True),
        (
            {
                "matchExpressions": [
                    {"key": "rbac.authorization.k8s.io/aggregate-to-cluster-admin", "operator": "Exists"}
                ]
            },
            True,
        ),
        ({"matchLabels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}, True),
        ({}, True),
        ({"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}, False),
        ({"matchLabels": {"nemotron.nvidia.com/aggregate-to-reader": "true"}}, False),
    ],
)
def test_cluster_roles_aggregating_admin_rights_are_reported(selector, reported):
    role = {"metadata": {"name": "r"}, "aggregationRule": {"clusterRoleSelectors": [selector]}}
    assert bool(check_resource("least-privilege", f"{RBAC}ClusterRole", role)) == reported


def test_every_verb_spelled_out_is_every_verb():
    verbs = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
    role = {"metadata": {"name": "r"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": verbs}]}
    assert check_resource("least-privilege", f"{RBAC}ClusterRole", role) == [
        "ClusterRole r rules[0] grants every verb on every resource"
    ]


def test_reading_everything_is_not_every_verb_but_each_path_it_opens():
    """Read verbs on `*` are not "every verb": the wildcards are reported, then every escalation path of the data
    that a read verb opens (Secrets, exec through `get`, the kubelet API), one line each in the data's order."""
    read = ["get", "list", "watch"]
    role = {"metadata": {"name": "r"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": read}]}
    found = check_resource("least-privilege", f"{RBAC}ClusterRole", role)
    wildcards = [
        f'ClusterRole r rules[0] has "*" in {field}: it grants what exists now and whatever is added later; list them'
        for field in ("apiGroups", "resources")
    ]
    assert found[:2] == wildcards
    assert [m.partition(": it ")[2] for m in found[2:]] == [g.why for g in GRANTS if g.verbs & set(read)]
    role["rules"][0]["resources"] = ["pods", "services", "configmaps"]
    assert check_resource("least-privilege", f"{RBAC}ClusterRole", role) == wildcards[:1]
    role["rules"][0]["apiGroups"] = [""]
    assert check_resource("least-privilege", f"{RBAC}ClusterRole", role) == []


def test_access_entries_in_system_masters_are_reported_unless_named_cluster_admins():
    entry = {"clusterName": "c", "principalArn": "arn:aws:iam::123456789012:role/ci", "kubernetesGroups": ["viewers"]}
    assert check_resource("least-privilege", ACCESS_ENTRY, entry) == []
    entry["kubernetesGroups"] = ["viewers", "system:masters"]
    assert len(check_resource("least-privilege", ACCESS_ENTRY, entry)) == 1
    config = {"clusterAdminPrincipals": ["arn:aws:iam::123456789012:role/ci"]}
    assert check_resource("least-privilege", ACCESS_ENTRY, entry, config) == []


def granted(**statement: object) -> list[str]:
    document = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **statement}]})
    return check_resource("least-privilege", ROLE_POLICY, {"role": "r", "policy": document})


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ({"Action": "s3:?*", "Resource": "arn:aws:s3:::b/*"}, 'allows Action "s3:?*" (every s3 action)'),
        ({"Action": "?*", "Resource": "arn:aws:s3:::b"}, 'allows Action "?*" (every action of every service)'),
        ({"Action": "*?:*", "Resource": "arn:aws:s3:::b"}, 'allows Action "*?:*" (every action of every service)'),
        ({"Action": "iam:PassRole", "Resource": "arn:aws:iam::*:role/?*"}, "allows iam:PassRole on every resource"),
        ({"Action": "s3:Get*", "Resource": "?*"}, 'allows the action pattern "s3:Get*" on every resource'),
        ({"Action": "iam:PassRol?", "Resource": "*"}, 'allows the action pattern "iam:PassRol?" on every resource'),
    ],
)
def test_question_marks_are_wildcards_too(statement, problem):
    (found,) = granted(**statement)
    assert problem in found


def test_single_character_wildcards_on_named_resources_pass():
    assert granted(Action="s3:GetObjec?", Resource="arn:aws:s3:::models/*") == []
    assert granted(Action="iam:PassRole", Resource="arn:aws:iam::123456789012:role/sagemaker-?") == []


@pytest.mark.parametrize(
    "name",
    [
        "AWSCodeBuildAdminAccess",
        "AmazonEC2ContainerRegistryPowerUser",
        "AWSKeyManagementServicePowerUser",
        "job-function/SystemAdministrator",
        "AWSCloud9Administrator",
        "AWSLambda_FullAccess",
    ],
)
def test_admin_and_power_user_managed_policies_are_reported_by_name(name):
    assert check_resource("least-privilege", ATTACHMENT, {"policyArn": f"arn:aws:iam::aws:policy/{name}"}) != []


@pytest.mark.parametrize(
    "name",
    [
        "AmazonEKSClusterPolicy",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryReadOnly",
        "service-role/AmazonEFSCSIDriverPolicy",
        "service-role/AmazonEBSCSIDriverPolicy",
        "AmazonSSMManagedInstanceCore",
        "CloudWatchAgentServerPolicy",
    ],
)
def test_the_policies_a_stack_attaches_still_pass(name):
    assert check_resource("least-privilege", ATTACHMENT, {"policyArn": f"arn:aws:iam::aws:policy/{name}"}) == []


def open_policy(condition: dict | None = None) -> str:
    statement = {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}
    return json.dumps({"Statement": [{**statement, **({"Condition": condition} if condition else {})}]})


@pytest.mark.parametrize(
    ("condition", "open_"),
    [
        ({"Bool": {"aws:SecureTransport": "true"}}, True),
        ({"StringEquals": {"s3:ExistingObjectTag/public": "yes"}}, True),
        ({"StringNotEquals": {"aws:SourceAccount": "123456789012"}}, True),
        ({"StringLike": {"aws:SourceArn": "*"}}, True),
        ({"StringLike": {"aws:PrincipalArn": ["?*"]}}, True),
        ({"StringEqualsIfExists": {"aws:SourceVpce": "vpce-1"}}, True),
        ({"Null": {"aws:SourceArn": "false"}}, True),
        ({"StringEquals": {"aws:SourceAccount": "123456789012"}}, False),
        ({"ArnLike": {"aws:SourceArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/*"}}, False),
        ({"ForAnyValue:StringEquals": {"aws:PrincipalOrgID": ["o-abc"]}}, False),
        ({"StringEquals": {"AWS:SourceVpce": "vpce-1"}, "Bool": {"aws:SecureTransport": "true"}}, False),
        ({"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}, False),
    ],
)
def test_only_conditions_on_who_calls_close_an_open_principal(condition, open_):
    found = check_resource("least-privilege", BUCKET_POLICY, {"bucket": "b", "policy": open_policy(condition)})
    assert bool(found) == open_, found


def test_an_open_principal_without_a_condition_is_reported_as_before():
    (found,) = check_resource("least-privilege", BUCKET_POLICY, {"bucket": "b", "policy": open_policy()})
    assert 'allows principal "*" without a Condition' in found


@pytest.mark.parametrize(
    ("resource_type", "props"),
    [
        ("aws:efs/fileSystemPolicy:FileSystemPolicy", {"fileSystemId": "fs-1"}),
        ("aws:s3/accessPoint:AccessPoint", {"bucket": "b"}),
        ("aws:s3control/accessPointPolicy:AccessPointPolicy", {"accessPointArn": "arn:aws:s3:::ap"}),
        ("aws:secretsmanager/secretPolicy:SecretPolicy", {"secretArn": "arn:aws:secretsmanager:::secret:s"}),
        ("aws:secretsmanager/secret:Secret", {"name": "s"}),
        ("aws:sqs/queue:Queue", {"name": "q"}),
        ("aws:sns/topic:Topic", {"name": "t"}),
        ("aws:ecr/registryPolicy:RegistryPolicy", {}),
        ("aws:backup/vaultPolicy:VaultPolicy", {"backupVaultName": "v"}),
        ("aws:apigateway/restApiPolicy:RestApiPolicy", {"restApiId": "a"}),
    ],
)
def test_resource_policies_of_every_kind_are_judged(resource_type, props):
    assert check_resource("least-privilege", resource_type, {**props, "policy": open_policy()}) != []
    scoped = open_policy({"StringEquals": {"aws:PrincipalAccount": "123456789012"}})
    assert check_resource("least-privilege", resource_type, {**props, "policy": scoped}) == []


def test_resource_policies_under_other_input_names_are_judged():
    assert check_resource(
        "least-privilege", "aws:opensearch/domainPolicy:DomainPolicy", {"accessPolicies": open_policy()}
    )
    assert check_resource(
        "least-privilege", "aws:cloudwatch/logResourcePolicy:LogResourcePolicy", {"policyDocument": open_policy()}
    )
    assert check_resource(
        "least-privilege",
        "aws:s3control/multiRegionAccessPointPolicy:MultiRegionAccessPointPolicy",
        {"details": {"name": "m", "policy": open_policy()}},
    )


@pytest.mark.parametrize(
    ("props", "open_"),
    [
        ({"principal": "*"}, True),
        ({"principal": "*", "sourceArn": "arn:aws:s3:::b"}, False),
        ({"principal": "*", "sourceAccount": "123456789012"}, False),
        ({"principal": "*", "principalOrgId": "o-abc"}, False),
        ({"principal": "s3.amazonaws.com"}, False),
        ({"principal": "123456789012"}, False),
    ],
)
def test_lambda_permissions_for_every_principal_name_a_source(props, open_):
    permission = {"action": "lambda:InvokeFunction", "function": "f", **props}
    assert bool(check_resource("least-privilege", "aws:lambda/permission:Permission", permission)) == open_
