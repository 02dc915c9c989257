"""`serving_stack.pulumi_private`, the one module using the SDK's private internals, against the installed SDK:
each function does what the program and the render rely on, so an SDK upgrade that moves one fails here."""

from __future__ import annotations

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import rpc

from serving_stack import pulumi_private
from tools.mock_runtime import StackMocks


def test_the_secret_marker_is_the_one_the_sdk_serializes() -> None:
    assert rpc._special_sig_key == pulumi_private.SECRET_SIGNATURE_KEY
    assert rpc._special_secret_sig == pulumi_private.SECRET_SIGNATURE


def test_a_program_under_mocks_reads_its_config_and_secrets_and_returns_its_outputs() -> None:
    seen: dict[str, object] = {}

    def program() -> None:
        seen["values"] = pulumi_private.config_values()
        seen["secret"] = pulumi_private.is_secret_config("proj:token")
        seen["plain"] = pulumi_private.is_secret_config("proj:name")
        pulumi.export("answer", 42)

    outputs = pulumi_private.run_with_mocks(
        program,
        StackMocks(),
        None,
        project="proj",
        stack="test",
        config={"proj:name": "dev", "proj:token": "t"},
        secret_keys=["proj:token"],
    )
    assert seen == {"values": {"proj:name": "dev", "proj:token": "t"}, "secret": True, "plain": False}
    assert pulumi_private.resolve(outputs["answer"], "[secret]") == 42


def test_a_program_with_a_pulumi_run_entry_point_runs_it_and_exports_what_it_returns() -> None:
    """As the language host runs a program: the module body, then the entry point `pulumi.run` registered."""
    order: list[str] = []

    async def main() -> dict[str, object]:
        order.append("entry point")
        return {"late": "from main"}

    def program() -> None:
        order.append("body")
        pulumi.export("early", 1)
        pulumi.run(main)

    outputs = pulumi_private.run_with_mocks(
        program, StackMocks(), None, project="proj", stack="test", config={}, secret_keys=[]
    )
    assert order == ["body", "entry point"]
    assert {key: pulumi_private.resolve(value, "[secret]") for key, value in outputs.items()} == {
        "early": 1,
        "late": "from main",
    }


def test_resolve_reads_plain_values_and_hides_secrets() -> None:
    assert pulumi_private.resolve(pulumi.Output.from_input("x"), "[secret]") == "x"
    assert pulumi_private.resolve(pulumi.Output.secret("x"), "[secret]") == "[secret]"


def test_deserialized_inputs_are_plain_values_with_the_secret_marker_kept() -> None:
    struct = struct_pb2.Struct()
    struct.update(
        {"name": "a", "token": {pulumi_private.SECRET_SIGNATURE_KEY: pulumi_private.SECRET_SIGNATURE, "value": "t"}}
    )
    inputs = pulumi_private.deserialize_inputs(struct)
    assert inputs["name"] == "a"
    assert inputs["token"] == {pulumi_private.SECRET_SIGNATURE_KEY: pulumi_private.SECRET_SIGNATURE, "value": "t"}
