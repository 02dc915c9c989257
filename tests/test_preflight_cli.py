"""`python -m tools.preflight` whole: bad input is exit 2 and one line naming the key (a stack file the program
refuses, no AWS credentials, a kube context that is not there); secrets read through a `pulumi` whose output
has the real CLI's `configValueJSON` shape; and a run against moto's server on loopback, in a subprocess as
`make preflight` runs it, whose lines are derived from the stack data and moto's answers."""

from __future__ import annotations

import copy
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from plan_helpers import plan_of
from preflight_helpers import FAKE_CREDENTIALS, Clients, moto_server, write_project
from stack_helpers import PROJECT, stack_file_config

from serving_stack.config import parse_stack_config
from serving_stack.config.secrets import secret_needs
from tools.mock_runtime import PROJECT_DIR
from tools.preflight.cli import main
from tools.preflight.stack import read_set_secrets, secret_findings

DEV, PROD = stack_file_config("dev"), stack_file_config("prod")
NO_AWS = {
    "AWS_CONFIG_FILE": "/nonexistent",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def _quiet_env(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name, value in NO_AWS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", path)


def test_a_bad_stack_file_is_exit_2_and_one_line_naming_the_key(tmp_path, capsys):
    bad = copy.deepcopy(DEV)
    bad["modelCache"]["sizee"] = bad["modelCache"]["size"]
    root = write_project(tmp_path / "project", {"bad": bad})
    assert main(["--stack", "bad", "--project-dir", str(root)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: modelCache.sizee: unknown key")


def test_no_aws_credentials_is_exit_2_and_one_line(tmp_path, monkeypatch, capsys):
    """A small stack on AWS (an existing EKS cluster, no pool): the credentials are asked for before any check."""
    _quiet_env(monkeypatch, str(tmp_path))
    existing = {
        "name": "nemo",
        "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": {f"{PROD['aws']['region']}a": "subnet-0123456789abcdef0"},
        "nodeSecurityGroupIds": ["sg-0123456789abcdef0"],
    }
    small = {**copy.deepcopy(DEV), "aws": {"region": PROD["aws"]["region"], "cluster": {"existing": existing}}}
    root = write_project(tmp_path / "project", {"small": small})
    assert main(["--stack", "small", "--project-dir", str(root)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: AWS credentials: none found")


def test_a_stack_on_a_cluster_without_its_kube_context_is_exit_2_naming_the_context(tmp_path, monkeypatch, capsys):
    _quiet_env(monkeypatch, str(tmp_path))
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\ncontexts: []\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    assert main(["--stack", "dev", "--project-dir", str(PROJECT_DIR)]) == 2
    _, err = capsys.readouterr()
    context = DEV["kubernetes"]["cluster"]["context"]
    assert err.count("\n") == 1 and err.startswith(f"error: kubernetes.cluster.context: no context {context!r}")


def _pulumi(directory: Path, answer: dict | None, failure: str = "") -> None:
    """A `pulumi` on PATH answering `config --json --stack <s> --cwd <dir>` as the CLI does: a JSON object of
    `{"value"?, "objectValue"?, "secret"}` per key, no value for a secret (pulumi/pulumi
    pkg/cmd/pulumi/config: configValueJSON); or failing with the CLI's `error:` line."""
    script = directory / "pulumi"
    body = (
        f"print({failure!r}, file=sys.stderr); sys.exit(255)"
        if failure
        else f"assert sys.argv[1:4] == ['config', '--json', '--stack'], sys.argv; print(json.dumps({answer!r}))"
    )
    script.write_text(f"#!{sys.executable}\nimport json, sys\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def _prod_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: dict | None, failure: str = ""):
    _pulumi(tmp_path, answer, failure)
    monkeypatch.setenv("PATH", str(tmp_path))
    config = parse_stack_config(PROD)
    set_secrets = read_set_secrets("prod", PROJECT, PROJECT_DIR, {}, [])
    return set_secrets, secret_findings("prod", secret_needs(config), set_secrets)


def test_secrets_are_read_through_pulumi_config(tmp_path, monkeypatch):
    needed = {need.key for need in secret_needs(parse_stack_config(PROD))}
    answer = {f"{PROJECT}:{key}": {"secret": True} for key in needed}
    set_secrets, findings = _prod_secrets(tmp_path, monkeypatch, answer)
    assert set_secrets.secret == needed and findings == [] and set_secrets.source.severity == "note"


def test_a_secret_set_in_plain_text_is_a_blocker(tmp_path, monkeypatch):
    (key, *_) = sorted({need.key for need in secret_needs(parse_stack_config(PROD))})
    _, findings = _prod_secrets(tmp_path, monkeypatch, {f"{PROJECT}:{key}": {"value": "sk-plain", "secret": False}})
    assert [(f.severity, f.key) for f in findings] == [("blocker", key)] and "plain text" in findings[0].problem


def test_a_failing_pulumi_config_falls_back_to_the_stack_file_and_says_so(tmp_path, monkeypatch):
    needed = sorted({need.key for need in secret_needs(parse_stack_config(PROD))})
    set_secrets, findings = _prod_secrets(tmp_path, monkeypatch, None, "error: no stack named 'prod' found")
    assert set_secrets.source.severity == "warning" and "no stack named 'prod' found" in set_secrets.source.problem
    assert [(f.severity, f.key) for f in findings] == [("blocker", key) for key in needed]


@pytest.mark.slow  # a subprocess running the program whole (~20 s); the checks' moto tests run in `make test`
def test_the_command_against_moto_on_loopback(tmp_path):
    """`make preflight` for the committed prod stack: exit 1, one line per finding, the summary last; the
    zone blockers are exactly the pools moto's offerings lack, and every placeholder and missing secret is named."""
    root = write_project(tmp_path / "project", {"prod": PROD})
    region = PROD["aws"]["region"]
    with moto_server() as url:
        clients = Clients(url, region)
        expected = []
        for index, pool in enumerate(PROD["aws"]["nodePools"]):
            answer = clients("ec2", region).describe_instance_type_offerings(
                LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [pool["instanceType"]]}]
            )
            if pool["availabilityZone"] not in {o["Location"] for o in answer["InstanceTypeOfferings"]}:
                expected.append(
                    f"blocker: aws.nodePools[{index}].availabilityZone: {pool['instanceType']} is not offered in {pool['availabilityZone']}"
                )
        env = {
            "PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "AWS_ENDPOINT_URL": url,
            **FAKE_CREDENTIALS,
            **NO_AWS,
        }
        result = subprocess.run(
            [sys.executable, "-m", "tools.preflight", "--stack", "prod", "--project-dir", str(root)],
            cwd=PROJECT_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    *lines, last = result.stdout.splitlines()
    assert all(line.split(":")[0] in ("blocker", "warning", "note") for line in lines)
    assert last.startswith("preflight prod: ") and "`pulumi up` would fail" in last
    for start in expected:
        assert any(line.startswith(start) for line in lines), (start, lines)
    blocked = {line.split(": ")[1] for line in lines if line.startswith("blocker: ")}
    needed = {need.key for need in secret_needs(parse_stack_config(PROD))}
    assert {p.key for p in plan_of(PROD).placeholders} | needed <= blocked


def test_the_deploy_workflow_runs_the_preflight_before_up_with_the_deploy_credentials():
    import yaml

    steps = yaml.safe_load((PROJECT_DIR / ".github/workflows/pulumi-up.yml").read_text())["jobs"]["up"]["steps"]

    def index(predicate) -> int:
        return next(i for i, step in enumerate(steps) if predicate(step))

    preflight = index(lambda s: "make preflight" in s.get("run", ""))
    up = index(lambda s: (s.get("with") or {}).get("command") == "up")
    credentials = index(lambda s: "configure-aws-credentials" in s.get("uses", ""))
    kubeconfig = index(lambda s: "update-kubeconfig" in s.get("run", ""))
    cli_installed = index(lambda s: "pulumi/actions" in s.get("uses", "") and "command" not in (s.get("with") or {}))
    assert max(credentials, kubeconfig, cli_installed) < preflight < up
    assert "\n\t$(PY) -m tools.preflight --stack $(STACK)\n" in (PROJECT_DIR / "Makefile").read_text()
