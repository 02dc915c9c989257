"""Whether each Dynamo target serves, and serves as published: the ops programs' ConfigMap, and per target a
smoke-test Job, a suspended benchmark CronJob, a canary Deployment and the canary's PodMonitor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components import children_wait_for, custom_resource
from serving_stack.names import TypeTokens
from serving_stack.plan.operability import PROGRAM_CONFIG_MAP, OperabilityPlan


@dataclass(frozen=True)
class OperabilityArgs:
    """`graphs`: a target's smoke Job and canary start after its graph: the smoke test then exercises the graph
    `up` just rolled out (and awaited, when `TargetChecks.gated`), and a canary does not report failures while the
    graph is still starting. The component's `opts.depends_on` (the monitoring CRDs) is what the PodMonitors wait
    for."""

    plan: OperabilityPlan  # which checks run (switches), on which targets, and the programs' ConfigMap
    namespace: pulumi.Input[str]  # the serving namespace (wired from its component)
    graphs: Mapping[str, pulumi.Resource]  # each target's DynamoGraphDeployment, by target id


class Operability(pulumi.ComponentResource):
    """`pulumi up` waits for a gated smoke Job (customTimeouts cover its activeDeadlineSeconds), so a target that
    does not answer fails the update with the Job's name; `kubectl logs job/<dgd>-smoke` says which check."""

    def __init__(self, name: str, args: OperabilityArgs, opts: Optional[pulumi.ResourceOptions] = None):
        opts, crds_ready = children_wait_for(opts)
        super().__init__(TypeTokens.OPERABILITY, name, None, opts)
        plan, child = args.plan, pulumi.ResourceOptions(parent=self)
        programs = k8s.core.v1.ConfigMap(
            f"{name}-programs",
            metadata={**plan.program_config_map["metadata"], "namespace": args.namespace},
            data=dict(plan.program_config_map["data"]),
            opts=child,
        ).metadata.name

        def metadata(manifest: Mapping[str, Any]) -> dict[str, Any]:
            return {**manifest["metadata"], "namespace": args.namespace}

        def with_programs(spec: Mapping[str, Any]) -> dict[str, Any]:
            """A spec whose pod template's program volume names the ConfigMap resource (a data edge)."""
            pod = dict(spec["template"]["spec"])
            pod["volumes"] = [
                {**v, "configMap": {**v["configMap"], "name": programs}}
                if v.get("configMap", {}).get("name") == PROGRAM_CONFIG_MAP
                else v
                for v in pod["volumes"]
            ]
            return {**spec, "template": {**spec["template"], "spec": pod}}

        created: dict[str, list[pulumi.Output[str]]] = {"smokeJobs": [], "benchmarks": [], "canaries": []}
        for checks in plan.targets:
            role, graph = f"{name}-{checks.resource_name}", [args.graphs[checks.target_id]]
            if plan.smoke_tests:
                timeout = f"{checks.smoke_timeout_minutes}m"
                timeouts = pulumi.CustomTimeouts(create=timeout, update=timeout) if checks.gated else None
                smoke = k8s.batch.v1.Job(
                    f"{role}-smoke",
                    metadata=metadata(checks.smoke_job),
                    spec=with_programs(checks.smoke_job["spec"]),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=graph, custom_timeouts=timeouts),
                )
                created["smokeJobs"].append(smoke.metadata.name)
            if plan.benchmarks:
                cron = checks.benchmark["spec"]
                job_template = {**cron["jobTemplate"], "spec": with_programs(cron["jobTemplate"]["spec"])}
                bench = k8s.batch.v1.CronJob(
                    f"{role}-bench",
                    metadata=metadata(checks.benchmark),
                    spec={**cron, "jobTemplate": job_template},
                    opts=child,
                )
                created["benchmarks"].append(bench.metadata.name)
            if plan.canaries:
                canary = k8s.apps.v1.Deployment(
                    f"{role}-canary",
                    metadata=metadata(checks.canary),
                    spec=with_programs(checks.canary["spec"]),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=graph),
                )
                created["canaries"].append(canary.metadata.name)
            if plan.canary_monitors:
                after_crds = pulumi.ResourceOptions(parent=self, depends_on=crds_ready)
                custom_resource(f"{role}-canary-monitor", checks.canary_monitor, args.namespace, after_crds)
        self.register_outputs({"programs": programs, **created})
