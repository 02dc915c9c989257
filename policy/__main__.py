"""Entry point the Pulumi CLI runs for `--policy-pack policy`: constructing the pack starts its gRPC server."""

from nemotron_policies.pack import PACK_NAME, POLICIES
from pulumi_policy import PolicyPack

PolicyPack(name=PACK_NAME, policies=POLICIES)
