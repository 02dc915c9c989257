"""Whether each Dynamo target serves, and serves as published: the ops programs' ConfigMap, and per target a
smoke-test Job, a suspended benchmark CronJob, a canary Deployment and the canary's PodMonitor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components import children_wait_for
from serving_stack.names import TypeTokens
from serving_stack.plan.operability import PROGRAM_CONFIG_MAP, OperabilityPlan, TargetChecks


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
        child = pulumi.ResourceOptions(parent=self)
        self._namespace = args.namespace
        metadata = args.plan.program_config_map["metadata"]
        programs = k8s.core.v1.ConfigMap(
            f"{name}-programs",
            metadata={**metadata, "namespace": args.namespace},
            data=dict(args.plan.program_config_map["data"]),
            opts=child,
        )
        self._programs: pulumi.Output[str] = programs.metadata.name
        created: dict[str, list[pulumi.Output[str]]] = {"smokeJobs": [], "benchmarks": [], "canaries": []}
        for checks in args.plan.targets:
            role = f"{name}-{checks.resource_name}"
            graph = [args.graphs[checks.target_id]]
            if args.plan.smoke_tests:
                created["smokeJobs"].append(self._smoke_job(role, checks, graph))
            if args.plan.benchmarks:
                created["benchmarks"].append(self._benchmark(role, checks))
            if args.plan.canaries:
                created["canaries"].append(self._canary(role, checks, graph))
            if args.plan.canary_monitors:
                monitor = checks.canary_monitor
                k8s.apiextensions.CustomResource(
                    f"{role}-canary-monitor",
                    api_version=monitor["apiVersion"],
                    kind=monitor["kind"],
                    metadata=self._metadata(monitor),
                    spec=monitor["spec"],
                    opts=pulumi.ResourceOptions(parent=self, depends_on=crds_ready),
                )
        self.register_outputs({"programs": self._programs, **created})

    def _metadata(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        return {**manifest["metadata"], "namespace": self._namespace}

    def _with_programs(self, template: Mapping[str, Any]) -> dict[str, Any]:
        """A pod template whose program volume names the ConfigMap resource (a data edge, not a bare name)."""
        spec = dict(template["spec"])
        spec["volumes"] = [
            {**v, "configMap": {**v["configMap"], "name": self._programs}}
            if v.get("configMap", {}).get("name") == PROGRAM_CONFIG_MAP
            else v
            for v in spec["volumes"]
        ]
        return {**template, "spec": spec}

    def _smoke_job(self, role: str, checks: TargetChecks, graph: list[pulumi.Resource]) -> pulumi.Output[str]:
        manifest = checks.smoke_job
        timeout = f"{checks.smoke_timeout_minutes}m"
        timeouts = pulumi.CustomTimeouts(create=timeout, update=timeout) if checks.gated else None
        created: pulumi.Output[str] = k8s.batch.v1.Job(
            f"{role}-smoke",
            metadata=self._metadata(manifest),
            spec={**manifest["spec"], "template": self._with_programs(manifest["spec"]["template"])},
            opts=pulumi.ResourceOptions(parent=self, depends_on=graph, custom_timeouts=timeouts),
        ).metadata.name
        return created

    def _benchmark(self, role: str, checks: TargetChecks) -> pulumi.Output[str]:
        manifest = checks.benchmark
        job_template = manifest["spec"]["jobTemplate"]
        job_spec = {**job_template["spec"], "template": self._with_programs(job_template["spec"]["template"])}
        created: pulumi.Output[str] = k8s.batch.v1.CronJob(
            f"{role}-bench",
            metadata=self._metadata(manifest),
            spec={**manifest["spec"], "jobTemplate": {**job_template, "spec": job_spec}},
            opts=pulumi.ResourceOptions(parent=self),
        ).metadata.name
        return created

    def _canary(self, role: str, checks: TargetChecks, graph: list[pulumi.Resource]) -> pulumi.Output[str]:
        manifest = checks.canary
        created: pulumi.Output[str] = k8s.apps.v1.Deployment(
            f"{role}-canary",
            metadata=self._metadata(manifest),
            spec={**manifest["spec"], "template": self._with_programs(manifest["spec"]["template"])},
            opts=pulumi.ResourceOptions(parent=self, depends_on=graph),
        ).metadata.name
        return created
