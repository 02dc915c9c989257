"""Entry point the Pulumi CLI runs for `--policy-pack policy`: constructing the pack starts its gRPC server.

The engine names the stack being checked only in its ConfigureStack call (CLI 3.274.1 sets no PULUMI_STACK
for an analyzer: pulumi/pulumi pkg/resource/plugin/analyzer_plugin.go, NewPolicyAnalyzer), and pulumi-policy
1.21.0 keeps only the call's tags; without the stack, `protectedStacks` and `unwarmedStacks` never match under
the engine. So the call also exports the stack, project and dry-run the pack's servicer configures its runtime
settings from before each analysis (pulumi_policy.policy._configure_runtime_settings).
"""

import os
from typing import Any

from nemotron_policies.pack import PACK_NAME, POLICIES
from pulumi_policy import PolicyPack
from pulumi_policy import policy as _policy

_configure_stack = _policy._PolicyAnalyzerServicer.ConfigureStack


def _configure_stack_and_name_it(self: Any, request: Any, context: Any) -> Any:
    if request.stack and request.project:
        os.environ.update(
            PULUMI_STACK=request.stack,
            PULUMI_PROJECT=request.project,
            PULUMI_DRY_RUN="true" if request.dry_run else "false",
        )
        if request.organization:
            os.environ["PULUMI_ORGANIZATION"] = request.organization
    return _configure_stack(self, request, context)


_policy._PolicyAnalyzerServicer.ConfigureStack = _configure_stack_and_name_it  # type: ignore[method-assign]
PolicyPack(name=PACK_NAME, policies=POLICIES)
