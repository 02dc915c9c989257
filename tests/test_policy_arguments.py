"""What a container is told, resolved as Kubernetes and a shell resolve it: `$(VAR)` anywhere in an argument,
env from literals and ConfigMaps of the stack (keys and `envFrom` with a prefix), shell scripts, and values the
pack cannot read (Secrets, ConfigMaps outside the stack, unknowns at preview)."""

from __future__ import annotations

from policy_helpers import CONFIG_MAP, resource
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from policy.nemotron_policies.arguments import ConfigMaps, Opaque, command_line, env_value, flag_value, has_flag
from policy.nemotron_policies.values import UNKNOWN, plain

STACK_CONFIG_MAPS = ConfigMaps(
    [
        resource(
            CONFIG_MAP,
            {
                "metadata": {"name": "engine", "namespace": "ns"},
                "data": {"kv": '{"kv_connector": "X"}', "MODE": "decode"},
            },
            name="engine",
        ),
        resource(
            "kubernetes:yaml/v2:ConfigGroup",
            {
                "objs": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "inline", "namespace": "ns"},
                        "data": {"DRAFT": "5"},
                    }
                ]
            },
            name="group",
        ),
    ]
)


def words(container: dict) -> list:
    return command_line(plain(container), "ns", STACK_CONFIG_MAPS)


def test_references_are_expanded_anywhere_in_an_argument_and_left_alone_when_undefined():
    container = {
        "args": ["--x=$(A)-$(B)", "$(UNDEFINED)", "--y", "$(A)"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
    }
    assert words(container) == ["--x=1-2", "$(UNDEFINED)", "--y", "1"]


def test_env_comes_from_config_map_keys_of_the_stack_and_env_from_with_a_prefix():
    container = {
        "env": [{"name": "KV", "valueFrom": {"configMapKeyRef": {"name": "engine", "key": "kv"}}}],
        "envFrom": [{"configMapRef": {"name": "inline"}, "prefix": "SPEC_"}, {"configMapRef": {"name": "engine"}}],
        "args": ["--kv-transfer-config", "$(KV)", "--tokens=$(SPEC_DRAFT)", "--disaggregation-mode", "$(MODE)"],
    }
    found = words(container)
    assert flag_value(found, "--kv-transfer-config") == '{"kv_connector": "X"}'
    assert flag_value(found, "--tokens") == "5"
    assert flag_value(found, "--disaggregation-mode") == "decode"


def test_values_the_pack_cannot_read_are_opaque_and_say_where_they_come_from():
    container = {
        "env": [
            {"name": "S", "valueFrom": {"secretKeyRef": {"name": "kv", "key": "config"}}},
            {"name": "F", "valueFrom": {"configMapKeyRef": {"name": "elsewhere", "key": "k"}}},
        ],
        "args": ["--a=$(S)", "--b", "$(F)"],
    }
    found = words(container)
    a, b = flag_value(found, "--a"), flag_value(found, "--b")
    assert isinstance(a, Opaque)
    assert a == "<env S (secretKeyRef kv key config)>"
    assert isinstance(b, Opaque)
    assert b == "<ConfigMap elsewhere key k (not in this stack)>"
    secret_env = plain({"envFrom": [{"secretRef": {"name": "all"}}]})
    assert isinstance(env_value(secret_env, "ANY", "ns", STACK_CONFIG_MAPS), Opaque)


def test_shell_scripts_are_split_into_words_with_their_variables_expanded():
    container = {
        "command": ["/bin/bash", "-lc"],
        "args": ['exec python3 -m dynamo.vllm --disaggregation-mode ${ROLE} --flag "two words" $MODE # comment'],
        "env": [
            {"name": "ROLE", "value": "prefill"},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "engine", "key": "MODE"}}},
        ],
    }
    found = words(container)
    assert found[0] == "/bin/bash"
    assert flag_value(found, "--disaggregation-mode") == "prefill"
    assert flag_value(found, "--flag") == "two words"
    assert found[-1] == "decode"


def test_unknown_values_make_unknown_words():
    found = words({"args": ["--kv-transfer-config", "$(KV)"], "env": [{"name": "KV", "value": UNKNOWN_STRING_VALUE}]})
    assert found[1] is UNKNOWN
    assert flag_value(found, "--absent") is UNKNOWN
    assert has_flag(found, "--absent") is None
    assert words({"args": UNKNOWN_STRING_VALUE})[-1] is UNKNOWN
    assert env_value(plain({"env": UNKNOWN_STRING_VALUE}), "X", "ns", STACK_CONFIG_MAPS) is UNKNOWN
