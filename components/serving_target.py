"""One serving target: its ConfigMap and DynamoGraphDeployment, as `serving_stack.plan.serving` rendered them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from components import children_wait_for, custom_resource
from serving_stack.names import TypeTokens
from serving_stack.plan.serving import PlannedTarget


@dataclass(frozen=True)
class ServingTargetArgs:
    target: PlannedTarget  # the rendered ConfigMap and DGD, the replica paths its scaling adapters own
    namespace: pulumi.Input[str]  # the serving namespace
    # Resolves once the change of targets is known to finish in one `up` (it fails instead when it cannot):
    # the DGD waits for it, so a refused swap touches no graph.
    swap_checked: pulumi.Input[bool] = True


class ServingTarget(pulumi.ComponentResource):
    """The rendered recipe of one catalog target, applied as is; Pulumi sets the replica paths an autoscaler
    owns at creation and leaves their drift alone. `opts.depends_on` (the operator release, the download Jobs,
    the pull Secret) is what the DGD waits for."""

    dgd: k8s.apiextensions.CustomResource  # what runs after the graph (its smoke test) depends on

    def __init__(self, name: str, args: ServingTargetArgs, opts: Optional[pulumi.ResourceOptions] = None):
        opts, after = children_wait_for(opts)
        super().__init__(TypeTokens.SERVING_TARGET, name, None, opts)
        target = args.target
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata={**target.config_map["metadata"], "namespace": args.namespace},
            data=target.config_map["data"],
            opts=pulumi.ResourceOptions(parent=self),
        )
        swap_checked = pulumi.Output.from_input(args.swap_checked)
        self.dgd = custom_resource(
            f"{name}-dgd",
            {**target.dgd, "spec": swap_checked.apply(lambda _: target.dgd["spec"])},
            args.namespace,
            pulumi.ResourceOptions(
                parent=self,
                depends_on=[config_map, *after],
                ignore_changes=list(target.ignored_replica_paths),
                custom_timeouts=pulumi.CustomTimeouts(delete=f"{target.delete_timeout_seconds}s"),
            ),
        )
        self.register_outputs({"dgdName": self.dgd.metadata["name"]})
