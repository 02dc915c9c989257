"""Run the stack's own `__main__.py` in-process under Pulumi's mock runtime and record every resource.

This is how the offline render and the tests see the program: the same program `pulumi up` runs, with the
engine replaced by a monitor that records each registration (type, name, parent, inputs, options) and answers
with deterministic fake outputs (ids, ARNs, the provider-computed outputs components read), so two renders are
byte-identical.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from serving_stack import pulumi_private
from serving_stack.facts.dates import TODAY_ENV
from serving_stack.plan.placeholders import ALLOW_ENV
from serving_stack.plan.stack import StackPlan
from serving_stack.pulumi_private import MockCallArgs, MockMonitor, MockResourceArgs, Mocks
from tools.stack_files import PROJECT_DIR as PROJECT_DIR
from tools.stack_files import SECRET as SECRET
from tools.stack_files import project_name

MOCK_ACCOUNT = "123456789012"
MOCK_REGION = "us-east-1"
# ARN resource parts that are not `<resource type>/<name>` (the AWS service authorization reference), so an
# IAM statement naming the mock's ARN reads as it would with the real one.
ARN_RESOURCE_PREFIXES = {"aws:cloudwatch/metricAlarm:MetricAlarm": "alarm:"}


def _mock_outputs(type_token: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Deterministic stand-ins for the outputs a provider computes. Only those: with preview=False the SDK
    gives every input the engine returns no output for its input value (`rpc.resolve_outputs`), so echoing
    the inputs back would only serialize and deserialize each resource's inputs twice more."""
    package, module, kind = ([*type_token.split(":"), "", ""])[:3]
    outputs: dict[str, Any] = {}
    if package == "aws":
        arn_resource = ARN_RESOURCE_PREFIXES.get(type_token, f"{kind.lower()}/") + name
        if "arn" not in inputs:
            outputs["arn"] = f"arn:aws:{module.split('/')[0]}:{MOCK_REGION}:{MOCK_ACCOUNT}:{arn_resource}"
        if "name" not in inputs:
            outputs["name"] = name
    # Provider-computed outputs that components read while the program runs (kubeconfig, node groups).
    computed: dict[str, Callable[[], dict[str, Any]]] = {
        "aws:eks/cluster:Cluster": lambda: {
            "endpoint": f"https://{name}.gr7.{MOCK_REGION}.eks.amazonaws.com",
            "certificateAuthority": {"data": "bW9jay1jbHVzdGVyLWNh"},
            "vpcConfig": {**inputs.get("vpcConfig", {}), "clusterSecurityGroupId": f"sg-{name}"},
        },
        "aws:ec2/launchTemplate:LaunchTemplate": lambda: {"latestVersion": 1},
        "aws:eks/nodeGroup:NodeGroup": lambda: {"resources": [{"autoscalingGroups": [{"name": f"eks-{name}-asg"}]}]},
        "aws:fsx/lustreFileSystem:LustreFileSystem": lambda: {
            "dnsName": f"{name}-id.fsx.{MOCK_REGION}.amazonaws.com",
            "mountName": "mockmnt",
        },
        # The stack's own last deployment: an offline render has none (a first `up`).
        "pulumi:pulumi:StackReference": lambda: {"outputs": {}, "secretOutputNames": []},
    }
    return {**outputs, **(computed[type_token]() if type_token in computed else {})}


class StackMocks(Mocks):
    """Answers registrations and invokes with deterministic values, so two renders are byte-identical."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", _mock_outputs(args.typ, args.name, args.inputs)

    def call(self, args: MockCallArgs) -> Any:
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": MOCK_ACCOUNT, "arn": f"arn:aws:iam::{MOCK_ACCOUNT}:user/mock", "userId": "MOCK"}
        return {}, None


def redact(value: Any) -> Any:
    """Replace secret values by `"[secret]"`, recursively; a secret map keeps its keys."""
    if isinstance(value, dict):
        if value.get(pulumi_private.SECRET_SIGNATURE_KEY) == pulumi_private.SECRET_SIGNATURE:
            inner = value.get("value")
            return dict.fromkeys(inner, SECRET) if isinstance(inner, dict) else SECRET
        return {k: redact(v) for k, v in value.items()}
    return [redact(v) for v in value] if isinstance(value, list) else value


def plain_numbers(value: Any) -> Any:
    """Mocks deliver every number as a float; give integral ones back their int form."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain_numbers(v) for k, v in value.items()}
    return [plain_numbers(v) for v in value] if isinstance(value, list) else value


def _short(urn: str) -> str:
    """`urn:pulumi:stack::project::a$b$type::name` -> `type::name`."""
    if not urn:
        return ""
    qualified_type, name = urn.split("::")[2:4]
    return f"{qualified_type.split('$')[-1]}::{name}"


def _alias(spec: Any) -> str:
    """An alias spec (`Alias` message) as one line: its URN, or its set fields."""
    if spec.urn:
        return _short(spec.urn)
    fields = (("name", spec.spec.name), ("type", spec.spec.type), ("parent", _short(spec.spec.parentUrn)))
    return ",".join(f"{key}={value}" for key, value in fields if value) or "noParent"


@dataclass
class RecordedResource:
    """One registration; what the engine uses when it replaces or deletes too (the rollout model reads these)."""

    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    provider: str = ""
    depends_on: list[str] = field(default_factory=list)
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    ignore_changes: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    deleted_with: str = ""
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "provider": self.provider,
            "dependsOn": sorted(self.depends_on),
            "propertyDependencies": {k: sorted(v) for k, v in sorted(self.property_dependencies.items()) if v},
            "protect": self.protect,
            "retainOnDelete": self.retain_on_delete,
            "deleteBeforeReplace": self.delete_before_replace,
            "deletedWith": self.deleted_with,
            "customTimeouts": dict(sorted(self.custom_timeouts.items())),
            "ignoreChanges": sorted(self.ignore_changes),
            "replaceOnChanges": sorted(self.replace_on_changes),
            "aliases": sorted(self.aliases),
            "inputs": plain_numbers(redact(self.inputs)),
        }


class RecordingMonitor(MockMonitor):
    """A mock monitor that keeps every registration, components included, and rejects duplicate URNs as the
    engine would."""

    def __init__(self, mock_impl: Mocks) -> None:
        super().__init__(mock_impl)
        self.recorded: list[RecordedResource] = []
        self._urns: set[str] = set()

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - the gRPC servicer method it overrides
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type != "pulumi:pulumi:Stack":
            if urn in self._urns:
                raise ValueError(f"duplicate resource URN {urn}")
            self._urns.add(urn)
            timeouts = {op: v for op in ("create", "update", "delete") if (v := getattr(request.customTimeouts, op))}
            dependencies = {key: [_short(u) for u in deps.urns] for key, deps in request.propertyDependencies.items()}
            resource = RecordedResource(
                request.type,
                request.name,
                urn,
                _short(request.parent),
                bool(request.custom),
                dict(pulumi_private.deserialize_inputs(request.object)),
                _short(request.provider.rpartition("::")[0]),
                [_short(u) for u in request.dependencies],
                bool(request.protect),
                bool(request.retainOnDelete),
                bool(request.deleteBeforeReplace),
                timeouts,
                list(request.ignoreChanges),
                list(request.replaceOnChanges),
                [_alias(a) for a in request.aliases] + [_short(u) for u in request.aliasURNs],
                _short(request.deletedWith),
                dependencies,
            )
            self.recorded.append(resource)
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


@dataclass
class ProgramRun:
    """`plan`: the `StackPlan` the program built (what `summary.md` reports beside the resources); None for
    runs of single components."""

    resources: list[RecordedResource]
    outputs: dict[str, Any]
    plan: Optional[StackPlan] = None

    def of_type(self, type_token: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_token]

    def named(self, name: str) -> RecordedResource:
        (match,) = [r for r in self.resources if r.name == name]
        return match


def _resolve(output: Any) -> Any:
    return pulumi_private.resolve(output, SECRET)


def run_program(
    config: dict[str, Any],
    secret_keys: Optional[list[str]] = None,
    stack: str = "dev",
    project_dir: Path = PROJECT_DIR,
    *,
    allow_placeholders: bool = True,
    today: Optional[str] = None,
) -> ProgramRun:
    """Run `__main__.py` with this config under mocks (preview=False) and return what it registered.

    Exceptions from the program (a `ConfigError`, say) propagate after the runtime has shut down; the
    monitor is then available as `run_program.last_monitor` for asserting nothing was registered.
    `allow_placeholders`: accept placeholder values as the offline render does (False: as `pulumi up`);
    `today`: the day (YYYY-MM-DD) the program judges dated facts on, for this run only."""
    project = project_name(project_dir)
    stack_mocks = StackMocks()
    monitor = RecordingMonitor(stack_mocks)
    run_program.last_monitor = monitor  # type: ignore[attr-defined]
    sys.path.insert(0, str(project_dir))
    program_globals: dict[str, Any] = {}
    previous = {name: os.environ.get(name) for name in (ALLOW_ENV, TODAY_ENV)}
    os.environ.pop(ALLOW_ENV, None)
    os.environ.update({ALLOW_ENV: "1"} if allow_placeholders else {})
    os.environ.update({TODAY_ENV: today} if today is not None else {})
    try:
        with contextlib.chdir(project_dir):
            stack_outputs = pulumi_private.run_with_mocks(
                lambda: program_globals.update(runpy.run_path(str(project_dir / "__main__.py"), run_name="__main__")),
                stack_mocks,
                monitor,
                project=project,
                stack=stack,
                config=config,
                secret_keys=secret_keys or [],
            )
    finally:
        for name, value in previous.items():
            os.environ.pop(name, None)
            os.environ.update({name: value} if value is not None else {})
        sys.path.remove(str(project_dir))
    outputs = {key: plain_numbers(_resolve(value)) for key, value in sorted(stack_outputs.items())}
    plan = next((value for value in program_globals.values() if isinstance(value, StackPlan)), None)
    return ProgramRun(resources=monitor.recorded, outputs=outputs, plan=plan)
