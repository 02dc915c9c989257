"""`make preflight STACK=<s>` (`python -m tools.preflight --stack <s>`): before `pulumi up`, with the user's own
AWS credentials and the kube context the stack names, find what would make the first `up` fail.

Prints one line per finding, then one summary line. Exit 1 on a blocker, 0 with warnings only, 2 on bad input
(a stack file or config key the program refuses, missing or refused AWS credentials, an unusable kube context).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import Optional

import botocore.exceptions

from serving_stack.errors import ConfigError, bounded
from serving_stack.plan.cluster import KubeconfigCluster
from tools.mock_runtime import PROJECT_DIR
from tools.preflight.aws import AwsInputError, ClientFactory, aws_findings, boto3_clients, regions_used
from tools.preflight.kube import KubeClient, KubeInputError, client_for, kube_findings
from tools.preflight.stack import EXIT_BAD_INPUT, Finding, PreflightStack, exit_status, load_stack, ordered


def run(
    stack_name: str,
    project_dir: Path = PROJECT_DIR,
    *,
    clients: Optional[ClientFactory] = None,
    kube: Optional[KubeClient] = None,
    now: Optional[datetime.datetime] = None,
) -> tuple[PreflightStack, list[Finding]]:
    """Every finding about the stack; `clients` and `kube` default to the user's own (tests pass theirs).
    Raises `ConfigError`, `AwsInputError` or `KubeInputError` for bad input."""
    stack, findings = load_stack(stack_name, project_dir)
    if regions_used(stack):
        findings += aws_findings(stack, clients or boto3_clients(), now or datetime.datetime.now(datetime.UTC))
    cluster = stack.plan.cluster
    if isinstance(cluster, KubeconfigCluster):
        findings += kube_findings(stack, kube or client_for(cluster.context, cluster.kubeconfig_path))
    return stack, ordered(findings)


def summary(stack: PreflightStack, findings: list[Finding]) -> str:
    blockers, warnings = (sum(f.severity == s for f in findings) for s in ("blocker", "warning"))
    used = {"AWS": bool(regions_used(stack)), "cluster": isinstance(stack.plan.cluster, KubeconfigCluster)}
    checked = (
        " and ".join(side for side, on in used.items() if on) or "the stack file only (no AWS, no existing cluster)"
    )
    verdict = "`pulumi up` would fail" if blockers else "nothing found that stops `pulumi up`"
    return f"preflight {stack.name}: {blockers} blocker(s), {warnings} warning(s); checked {checked}: {verdict}"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.preflight", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR, help="the Pulumi project (default: this repo)")
    args = parser.parse_args(argv)
    try:
        stack, findings = run(args.stack, args.project_dir)
    except (ConfigError, AwsInputError, KubeInputError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except botocore.exceptions.BotoCoreError as error:  # a named profile that does not exist, a bad AWS config file
        print(f"error: AWS configuration: {bounded(str(error), 300, quote=False)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(*(finding.line() for finding in findings), summary(stack, findings), sep="\n")
    return exit_status(findings)
