"""One serving target: its ConfigMap and DynamoGraphDeployment."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from serving_stack.names import TypeTokens


@dataclass(frozen=True)
class ServingTargetArgs:
    """`ignore_replicas`: DGD property paths (`spec.components[1].replicas`) an autoscaler owns: Pulumi sets
    them at creation and leaves their drift alone."""

    namespace: pulumi.Input[str]  # the serving namespace
    config_map: dict[str, Any]  # the recipe's engine ConfigMap, rendered
    dgd: dict[str, Any]  # the DynamoGraphDeployment, rendered
    depends_on: Sequence[pulumi.Resource]  # the operator release, download Jobs and pull Secret it needs first
    delete_timeout_seconds: int = 600  # how long a delete waits for the operator to drop its finalizer
    ignore_replicas: Sequence[str] = ()  # replica paths an autoscaler owns
    # Resolves once the change of targets is known to finish in one `up` (it fails instead when it cannot):
    # the DGD waits for it, so a refused swap touches no graph.
    swap_checked: pulumi.Input[bool] = True


class ServingTarget(pulumi.ComponentResource):
    """The rendered recipe of one catalog target (see `serving_stack.plan.serving`), applied as is."""

    dgd_name: pulumi.Output[str]
    dgd: k8s.apiextensions.CustomResource  # what runs after the graph (its smoke test) depends on

    def __init__(self, name: str, args: ServingTargetArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.SERVING_TARGET, name, None, opts)
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata={**args.config_map["metadata"], "namespace": args.namespace},
            data=args.config_map["data"],
            opts=pulumi.ResourceOptions(parent=self),
        )
        dgd = k8s.apiextensions.CustomResource(
            f"{name}-dgd",
            api_version=args.dgd["apiVersion"],
            kind=args.dgd["kind"],
            metadata={**args.dgd["metadata"], "namespace": args.namespace},
            spec=pulumi.Output.from_input(args.swap_checked).apply(lambda _: args.dgd["spec"]),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[config_map, *args.depends_on],
                ignore_changes=list(args.ignore_replicas),
                custom_timeouts=pulumi.CustomTimeouts(delete=f"{args.delete_timeout_seconds}s"),
            ),
        )
        self.dgd = dgd
        self.dgd_name = dgd.metadata["name"]
        self.register_outputs({"dgdName": self.dgd_name})
