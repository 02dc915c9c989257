"""The preflight's cluster side against the real control plane of the scenarios (tools/e2e/harness.py: a real
API server with the DGD CRD, the monitoring CRDs and namespace, the stand-in StorageClasses) and the real
Pulumi CLI. Stacks are the committed dev stack and variants of it written in the test; expected keys and
names come from their data and from what the API server answers.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pulumi.automation import ConfigValue

from tools.e2e.engine import PROJECT_NAME, Project, stack_config
from tools.e2e.fake_nodes import declared_gpu_nodes, declared_nodes
from tools.mock_runtime import PROJECT_DIR
from tools.preflight import cli
from tools.preflight.facts import load_kubernetes
from tools.preflight.kube import _pod_specs, _requests
from tools.preflight.stack import Finding

sys.path.insert(0, str(PROJECT_DIR / "tests"))
from catalog_picks import pick
from preflight_helpers import write_project

KEY = PROJECT_NAME + ":"
DEV = {k.removeprefix(KEY): v for k, v in stack_config("dev").items()}
CONTEXT = DEV["kubernetes"]["cluster"]["context"]


@pytest.fixture
def kubeconfig(cluster, tmp_path, monkeypatch) -> Path:
    """The harness's cluster under the context the dev stack names, as the only kubeconfig."""
    path = cluster.plane.kubeconfig_with_context(tmp_path / "kubeconfig", CONTEXT)
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


def _run(tmp_path: Path, config: dict[str, Any], name: str = "pf") -> tuple[Any, list[Finding]]:
    root = write_project(tmp_path / f"project-{name}", {name: config})
    return cli.run(name, root)


def _with_nodes_for(cluster, tmp_path: Path, config: dict[str, Any], drop: str = "") -> None:
    """The nodes the stack's config declares (tools/e2e/fake_nodes.py), without resource `drop`."""
    nodes = declared_nodes(declared_gpu_nodes(config))
    for node in nodes:
        for field in ("capacity", "allocatable"):
            node["status"][field].pop(drop, None)
    cluster.replace_nodes(nodes)


def _blockers(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.key, f.problem) for f in findings if f.severity == "blocker"]


def test_the_committed_dev_stack_on_a_cluster_that_has_what_it_needs(cluster, kubeconfig, tmp_path):
    _with_nodes_for(cluster, tmp_path, DEV)
    _, findings = cli.run("dev", PROJECT_DIR)
    assert _blockers(findings) == []
    provisioner = cluster.kube.get("StorageClass", DEV["modelCache"]["storageClassName"])["provisioner"]
    if provisioner not in load_kubernetes().provisioners.readWriteMany:  # the stand-in's provisioner is unknown
        assert any(f.key == "modelCache.storageClassName" and provisioner in f.problem for f in findings)


def test_a_missing_storage_class_is_a_blocker_naming_the_key_and_the_classes_there(cluster, kubeconfig, tmp_path):
    config = copy.deepcopy(DEV)
    config["modelCache"]["storageClassName"] = f"{DEV['modelCache']['storageClassName']}-absent"
    assert cluster.kube.get("StorageClass", config["modelCache"]["storageClassName"]) is None
    _with_nodes_for(cluster, tmp_path, config)
    _, findings = _run(tmp_path, config)
    classes = sorted(c["metadata"]["name"] for c in cluster.kube.list("StorageClass"))
    assert _blockers(findings) == [
        (
            "modelCache.storageClassName",
            f"no StorageClass {config['modelCache']['storageClassName']} on the cluster (it has {', '.join(classes)})",
        )
    ]


def test_a_read_write_once_class_is_a_blocker(cluster, kubeconfig, tmp_path):
    provisioner = next(iter(load_kubernetes().provisioners.readWriteOnceOnly))
    name = "preflight-rwo"
    if cluster.kube.get("StorageClass", name) is None:
        cluster.kube.create(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": provisioner,
            }
        )
    config = copy.deepcopy(DEV)
    config["modelCache"]["storageClassName"] = name
    _with_nodes_for(cluster, tmp_path, config)
    _, findings = _run(tmp_path, config)
    (blocker,) = _blockers(findings)
    assert blocker[0] == "modelCache.storageClassName" and provisioner in blocker[1]


def test_a_namespace_the_stack_writes_into_but_does_not_create(cluster, kubeconfig, tmp_path):
    """Monitoring on an existing Prometheus (install: false): its rules go into monitoring.namespace."""
    config = copy.deepcopy(DEV)
    namespace = "preflight-absent-monitoring"
    assert cluster.kube.get("Namespace", namespace) is None
    config["monitoring"] = {
        "enabled": True,
        "namespace": namespace,
        "prometheus": {"install": False, "releaseLabel": "prometheus", "url": "http://prometheus.example:9090"},
    }
    _with_nodes_for(cluster, tmp_path, config)
    _, findings = _run(tmp_path, config)
    assert (
        "monitoring.namespace",
        f"namespace {namespace} does not exist; the stack writes into it but does not create it",
    ) in _blockers(findings)


def test_the_serving_namespace_as_the_shipped_provider_meets_it(cluster, kubeconfig, tmp_path):
    """An admin's namespace (enforcing baseline): the stack creating it is a blocker (4.29+ fails `already exists`
    and never adopts), and with createNamespace false the stated level is compared with its enforce label."""
    config, kube = copy.deepcopy(DEV), cluster.kube
    namespace = config["kubernetes"]["namespace"] = DEV["kubernetes"]["namespace"] + "-preflight-admin"
    enforce = "pod-security.kubernetes.io/enforce"
    kube.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {enforce: "baseline"}}}
    )
    try:
        _with_nodes_for(cluster, tmp_path, config)
        blockers = _blockers(_run(tmp_path, config, "create")[1])
        assert [k for k, problem in blockers if "already exists" in problem] == ["kubernetes.createNamespace"], blockers
        config["kubernetes"].update(createNamespace=False, namespacePodSecurity="privileged")
        blockers = _blockers(_run(tmp_path, config, "privileged")[1])
        assert (
            "kubernetes.namespacePodSecurity",
            f"namespace {namespace} enforces Pod Security baseline (its {enforce} "
            "label); the stack states privileged: its pods would be refused",
        ) in blockers, blockers
        config["kubernetes"]["namespacePodSecurity"] = "baseline"
        findings = _run(tmp_path, config, "baseline")[1]
        assert not [f for f in findings if f.key.startswith("kubernetes.")], findings
    finally:
        kube.delete("Namespace", namespace)
        kube.wait_for(f"namespace {namespace} to go", lambda: kube.get("Namespace", namespace) is None, timeout=120)


def test_a_group_the_cluster_does_not_serve_names_the_switch_that_would_install_it(cluster, kubeconfig, tmp_path):
    """KEDA's kinds without `installKeda`: the harness's API server serves no keda.sh."""
    (target,) = DEV["targets"]
    config = {
        **copy.deepcopy(DEV),
        "autoscaling": {
            "installKeda": False,
            "prometheusUrl": "http://prometheus.example:9090",
            "targets": {target["id"]: {"maxReplicaSets": 2}},
        },
    }
    _with_nodes_for(cluster, tmp_path, config)
    _, findings = _run(tmp_path, config)
    assert [k for k, p in _blockers(findings) if "keda.sh" in p] == [load_kubernetes().groupKeys["keda.sh"].key]


def test_no_node_advertising_a_requested_resource_is_a_blocker_naming_the_target(cluster, kubeconfig, tmp_path):
    """A disaggregated target of upstream's InfiniBand fabric: its workers request `rdma/ib` on a cluster the
    stack does not build (the real-engine run waited out its 85-minute budget for a node that has it)."""
    # The model cache as upstream's (every checkpoint the target loads), not dev's one-checkpoint list.
    cache = {"storageClassName": DEV["modelCache"]["storageClassName"]}
    config = {**copy.deepcopy(DEV), "targets": [{"id": pick(disaggregated=True, fabric="ib").id}], "modelCache": cache}
    stack, _ = cli.load_stack("ib", write_project(tmp_path / "project-ib", {"ib": config}))
    requested = {r for obj in stack.objects for spec in _pod_specs(obj.get("spec")) for r in _requests(spec)}
    assert "rdma/ib" in requested, requested
    _with_nodes_for(cluster, tmp_path, config, drop="rdma/ib")
    _, findings = _run(tmp_path, config)
    keys = {k for k, p in _blockers(findings) if "rdma/ib" in p}
    assert keys == {"targets[0]"}


def test_the_operator_version_is_read_from_its_deployment(cluster, kubeconfig, tmp_path):
    from serving_stack.facts import load_facts

    namespace, version = "preflight-dynamo", "0.0.1"
    assert version != load_facts().platform.chart.version
    labels = {"app.kubernetes.io/part-of": "dynamo-operator", "control-plane": "controller-manager"}
    cluster.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "dynamo-platform-dynamo-operator-controller-manager",
            "namespace": namespace,
            "labels": labels,
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"control-plane": "controller-manager"}},
            "template": {
                "metadata": {"labels": {"control-plane": "controller-manager"}},
                "spec": {
                    "containers": [
                        {
                            "name": "manager",
                            "image": "nvcr.io/nvidia/ai-dynamo/kubernetes-operator:0.0.1",
                            "args": [f"--operator-version={version}"],
                        }
                    ]
                },
            },
        },
    }
    cluster.kube.create(deployment)
    try:
        _with_nodes_for(cluster, tmp_path, DEV)
        _, findings = cli.run("dev", PROJECT_DIR)
        assert any(f.key == "dynamo.platform.install" and f"is version {version}" in f.problem for f in findings)
    finally:
        cluster.kube.delete("Deployment", deployment["metadata"]["name"], namespace)


def _exec_kubeconfig(cluster, path: Path, script: str) -> Path:
    """The harness's cluster reached through an exec credential plugin (as `aws eks get-token` is)."""
    plugin = path.parent / "plugin.py"
    plugin.write_text(script)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {"server": cluster.plane.server, "insecure-skip-tls-verify": True}}],
        "users": [
            {
                "name": "exec",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": sys.executable,
                        "args": [str(plugin)],
                    }
                },
            }
        ],
        "contexts": [{"name": CONTEXT, "context": {"cluster": "e2e", "user": "exec"}}],
    }
    path.write_text(json.dumps(document))
    return path


def test_an_exec_credential_plugin_reaches_the_cluster_and_its_failure_is_bad_input(
    cluster, tmp_path, monkeypatch, capsys
):
    token = cluster.plane.token
    good = f"import json\nprint(json.dumps({{'apiVersion': 'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential', 'status': {{'token': {token!r}}}}}))\n"
    for name in ("good", "bad"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("KUBECONFIG", str(_exec_kubeconfig(cluster, tmp_path / "good" / "kubeconfig", good)))
    _with_nodes_for(cluster, tmp_path, DEV)
    _, findings = cli.run("dev", PROJECT_DIR)
    assert _blockers(findings) == []
    bad = "import sys\nprint('error: the SSO session has expired', file=sys.stderr)\nsys.exit(1)\n"
    monkeypatch.setenv("KUBECONFIG", str(_exec_kubeconfig(cluster, tmp_path / "bad" / "kubeconfig", bad)))
    assert cli.main(["--stack", "dev"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "kubernetes.cluster.context" in err and "SSO session has expired" in err


def test_secrets_read_through_the_real_pulumi_cli(project: Project, cluster):
    """The dev stack with a pull Secret (which needs ngcApiKey): a blocker until `pulumi config set --secret`."""
    stack = "preflight-secrets"
    config = {KEY + k: v for k, v in DEV.items()}
    config[KEY + "dynamo"] = {**DEV["dynamo"], "imagePullSecret": "ngc-pull"}
    project.write_stack(stack, config)
    project.init(stack)

    def preflight() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tools.preflight", "--stack", stack, "--project-dir", str(project.root)],
            cwd=PROJECT_DIR,
            env=project.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    before = preflight()
    assert "Traceback" not in before.stderr, before.stderr
    assert "note: secrets: read with `pulumi config --json" in before.stdout
    assert any(line.startswith("blocker: ngcApiKey: secret not set") for line in before.stdout.splitlines()), (
        before.stdout
    )
    project.stack(stack).set_config(KEY + "ngcApiKey", ConfigValue("nvapi-e2e-only", secret=True))
    after = preflight()
    assert not any(line.startswith("blocker: ngcApiKey") for line in after.stdout.splitlines()), after.stdout


def test_a_dgd_version_the_cluster_does_not_serve_names_the_platform_switch(cluster, kubeconfig, tmp_path):
    """The DGD CRD with the version the stack writes no longer served (an older platform): a blocker naming
    `dynamo.platform.install` and the versions served. The CRD is restored afterwards."""
    stack, _ = cli.load_stack("dev", PROJECT_DIR)
    (written,) = {o["apiVersion"] for o in stack.objects if o["kind"] == "DynamoGraphDeployment"}
    group, version = written.split("/")
    name = f"dynamographdeployments.{group}"
    crd = cluster.kube.get("CustomResourceDefinition", name)
    original = copy.deepcopy(crd["spec"]["versions"])
    changed = [{**v, "served": v["name"] != version} for v in original]
    cluster.kube.patch("CustomResourceDefinition", name, {"spec": {"versions": changed}})
    try:
        cluster.kube.wait_for(
            f"{written} to leave discovery", lambda: _unserved(cluster, f"/apis/{written}"), timeout=60
        )
        _with_nodes_for(cluster, tmp_path, DEV)
        _, findings = cli.run("dev", PROJECT_DIR)
        served = ", ".join(v["name"] for v in changed if v["served"])
        assert (
            "dynamo.platform.install",
            f"the cluster serves {group} {served}, not {version}; the stack writes {written} DynamoGraphDeployment",
        ) in _blockers(findings)
    finally:
        cluster.kube.patch("CustomResourceDefinition", name, {"spec": {"versions": original}})
        cluster.kube.wait_for(
            f"{written} back in discovery", lambda: not _unserved(cluster, f"/apis/{written}"), timeout=60
        )


def _unserved(cluster, path: str) -> bool:
    from tools.e2e.kube import KubeError

    try:
        cluster.kube.request("GET", path)
    except KubeError as error:
        return error.status == 404
    return False
