"""The NVIDIA Dynamo platform: its namespace and a pinned `dynamo-platform` Helm release, as planned
(`serving_stack.plan.stack.DynamoPlatformPlan`)."""

from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from serving_stack.names import TypeTokens
from serving_stack.plan.stack import DynamoPlatformPlan


class DynamoPlatform(pulumi.ComponentResource):
    """Operator (which applies the DGD CRDs itself: `dynamo-operator.upgradeCRD=true`) and its webhooks.

    `release` is what DynamoGraphDeployments depend on: there is no data edge from a CR to the operator
    that serves it, so `depends_on` is the honest wiring.
    """

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: DynamoPlatformPlan, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.DYNAMO_PLATFORM, name, None, opts)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata={"name": args.config.namespace}, opts=pulumi.ResourceOptions(parent=self)
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=args.config.releaseName,
            chart=args.chart_url,
            namespace=namespace.metadata.name,
            values=dict(args.values),
            atomic=True,
            cleanup_on_fail=True,
            timeout=900,
            # The release keeps its name and its chart's cluster-scoped objects (CRDs, webhooks, cluster
            # roles) are named after it: a replacement (another namespace) must delete the old release first.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.register_outputs({"releaseStatus": self.release.status})
