"""The NVIDIA Dynamo platform: its namespace and a pinned `dynamo-platform` Helm release."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from serving_stack.names import TypeTokens


@dataclass(frozen=True)
class DynamoPlatformArgs:
    namespace: str  # where the operator and its release go
    release_name: str  # the Helm release name
    chart_url: str  # the pinned chart archive
    values: dict[str, Any] = field(default_factory=dict)  # the release values (monitoring's merged under the stack's)


class DynamoPlatform(pulumi.ComponentResource):
    """Operator (which applies the DGD CRDs itself: `dynamo-operator.upgradeCRD=true`) and its webhooks.

    `release` is what DynamoGraphDeployments depend on: there is no data edge from a CR to the operator
    that serves it, so `depends_on` is the honest wiring.
    """

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: DynamoPlatformArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TypeTokens.DYNAMO_PLATFORM, name, None, opts)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata={"name": args.namespace}, opts=pulumi.ResourceOptions(parent=self)
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=args.release_name,
            chart=args.chart_url,
            namespace=namespace.metadata.name,
            values=args.values,
            atomic=True,
            cleanup_on_fail=True,
            timeout=900,
            # The release keeps its name and its chart's cluster-scoped objects (CRDs, webhooks, cluster
            # roles) are named after it: a replacement (another namespace) must delete the old release first.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.register_outputs({"releaseStatus": self.release.status})
