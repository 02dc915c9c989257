"""`serving_stack.plan.failover`: a fallback pair that answers differently is refused naming the gateway key, the
model group and both backends, unless aligned; what prod's fallback pairs yield as the data stands.

Expectations come from `catalog/response_formats.yaml` (what each runtime's parsers answer; the parser test,
tests/test_failover_parsers.py, holds the data to the parsers), the catalog and the committed prod stack.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
from plan_helpers import FACTS, plan_of
from stack_helpers import stack_file_config

from serving_stack.contract.outputs import GatewayModel
from serving_stack.errors import ConfigError
from serving_stack.facts.response_formats import ResponseFormats, load_response_formats
from serving_stack.plan import failover
from serving_stack.plan.failover import (
    REASONING_ATTRIBUTES,
    TOOL_CALL_ATTRIBUTES,
    Backend,
    FallbackPair,
    answer_differences,
    arguments_from_environment,
    dynamo_backend,
    fallback_pairs,
    gateway_fallback_errors,
    refuse_unlike_fallbacks,
    vllm_server_backend,
)
from serving_stack.plan.gateway import GatewayPlan, RedisAddress, plan_gateway
from serving_stack.plan.stack import StackPlan
from tools.stack_files import stack_config

FORMATS = load_response_formats()
DYNAMO = FORMATS.by_name[failover.DYNAMO_RUNTIME]
VLLM = FORMATS.by_name[failover.VLLM_SERVER_RUNTIME]
MODEL = FORMATS.modelOutput.model


def _backend(runtime: str = failover.DYNAMO_RUNTIME, **changes: Any) -> Backend:
    recorded = FORMATS.by_name[runtime]
    fields = {
        "name": f"{runtime}:one",
        "runtime": runtime,
        "version": recorded.versions[0],
        "served_model_name": MODEL,
        "tool_call_parser": next(iter(recorded.toolCallParsers)),
        "reasoning_parser": next(iter(recorded.reasoningParsers)),
        "max_context": None,
    }
    return Backend(**{**fields, **changes})


def _aligned(formats: ResponseFormats = FORMATS) -> ResponseFormats:
    """The data as it would be were vLLM's recorded parsers to answer exactly as the Dynamo frontend's."""
    tool = DYNAMO.toolCallParsers[next(iter(DYNAMO.toolCallParsers))]
    reasoning = DYNAMO.reasoningParsers[next(iter(DYNAMO.reasoningParsers))]
    vllm = VLLM.model_copy(
        update={
            "toolCallParsers": dict.fromkeys(VLLM.toolCallParsers, tool),
            "reasoningParsers": {
                name: reasoning.model_copy(update={"field": r.field}) for name, r in VLLM.reasoningParsers.items()
            },
        }
    )
    return formats.model_copy(update={"runtimes": tuple(vllm if r.name == VLLM.name else r for r in formats.runtimes)})


# --- the data covers what the catalog runs ----------------------------------------------------------------


def test_every_catalog_target_runs_recorded_parsers():
    for recipe in FACTS.catalog.recipes.values():
        backend = dynamo_backend(recipe.id, MODEL, recipe.dgd, FORMATS, recipe.config_map.get("data", {}).values())
        assert backend.version in DYNAMO.versions, recipe.id
        assert backend.tool_call_parser in DYNAMO.toolCallParsers, (recipe.id, backend.tool_call_parser)
        assert backend.reasoning_parser in DYNAMO.reasoningParsers, (recipe.id, backend.reasoning_parser)


def test_every_vllm_server_container_runs_recorded_parsers():
    servers = [c for c in FACTS.lmi.containers if c.argumentForm == "sagemaker-vllm"]
    assert servers
    for container in servers:
        assert container.vllmVersion in VLLM.versions, container.name
        for repository, model in FACTS.lmi.repositories.items():
            for architecture in ("hopper", "blackwell"):
                arguments = model.engineArguments.for_architecture(architecture)
                backend = vllm_server_backend("sagemaker:x", repository, container.vllmVersion, arguments, FORMATS)
                assert backend.tool_call_parser in VLLM.toolCallParsers, (repository, backend)
                assert backend.reasoning_parser in VLLM.reasoningParsers, (repository, backend)


def test_an_argument_form_reads_back_the_arguments_it_writes():
    for name, form in FACTS.lmi.argumentForms.items():
        for model in FACTS.lmi.repositories.values():
            arguments = model.engineArguments.for_architecture("hopper")
            environment = form.environment_of(arguments)
            assert arguments_from_environment(environment, form.prefix, form.flagValue, form.renames) == arguments, name


# --- what counts as a difference --------------------------------------------------------------------------


@pytest.mark.parametrize("runtime", [r.name for r in FORMATS.runtimes])
def test_a_backend_answers_like_itself(runtime):
    assert answer_differences(_backend(runtime), _backend(runtime, name="other"), FORMATS) == []


PLANTED = {
    "served model name": {"served_model_name": MODEL + "-FP8"},
    "maximum context": {"max_context": "32768"},
    "tool calls parser": {"tool_call_parser": "hermes"},
    "reasoning parser": {"reasoning_parser": None},
}


@pytest.mark.parametrize("aspect", PLANTED)
def test_a_planted_difference_is_named(aspect):
    (found,) = answer_differences(_backend(), _backend(**PLANTED[aspect]), FORMATS)
    assert found.aspect == aspect


def test_a_runtime_version_the_data_does_not_record_differs_from_everything():
    unrecorded = _backend(version="0.0.1")
    found = answer_differences(_backend(), unrecorded, FORMATS)
    assert {d.aspect for d in found} == {"tool calls parser", "reasoning parser"}
    assert all("no answer recorded" in d.fallback for d in found)
    assert answer_differences(unrecorded, unrecorded, FORMATS) != []


@pytest.mark.parametrize("attribute", TOOL_CALL_ATTRIBUTES + REASONING_ATTRIBUTES)
def test_each_recorded_attribute_counts(attribute):
    """Aligned data, then one attribute of vLLM's recorded parsers changed: exactly that difference."""
    aligned = _aligned()
    vllm = aligned.by_name[VLLM.name]
    kind = "toolCallParsers" if attribute in TOOL_CALL_ATTRIBUTES else "reasoningParsers"
    parsers = getattr(vllm, kind)
    changed = {name: answer.model_copy(update={attribute: "planted"}) for name, answer in parsers.items()}
    planted = aligned.model_copy(
        update={"runtimes": tuple(r.model_copy(update={kind: changed}) if r is vllm else r for r in aligned.runtimes)}
    )
    (found,) = answer_differences(_backend(), _backend(failover.VLLM_SERVER_RUNTIME), planted)
    assert found.aspect.endswith(attribute) and found.fallback == "planted"


def test_the_reasoning_field_counts_as_the_gateway_hands_it_on():
    aligned = _aligned()
    assert answer_differences(_backend(), _backend(failover.VLLM_SERVER_RUNTIME), aligned) == []
    assert {r.field for r in DYNAMO.reasoningParsers.values()} != {r.field for r in VLLM.reasoningParsers.values()}
    unmapped = aligned.model_copy(update={"gateway": aligned.gateway.model_copy(update={"reasoningField": {}})})
    (found,) = answer_differences(_backend(), _backend(failover.VLLM_SERVER_RUNTIME), unmapped)
    assert found.aspect == "reasoning field through the gateway"


def test_a_degraded_fallback_keeps_its_own_name_and_context_but_not_its_own_format():
    other = _backend(served_model_name="another/model", max_context="8192")
    assert answer_differences(_backend(), other, FORMATS, same_model=False) == []
    assert answer_differences(_backend(), _backend(failover.VLLM_SERVER_RUNTIME), FORMATS, same_model=False) == (
        answer_differences(_backend(), _backend(failover.VLLM_SERVER_RUNTIME), FORMATS)
    )


def test_a_server_without_auto_tool_choice_parses_no_tool_calls():
    arguments = FACTS.lmi.repositories[MODEL].engineArguments.for_architecture("hopper")
    without = {flag: value for flag, value in arguments.items() if flag != failover.VLLM_AUTO_TOOL_CHOICE}
    backend = vllm_server_backend("sagemaker:x", MODEL, VLLM.versions[0], without, FORMATS)
    assert backend.tool_call_parser is None
    (found,) = answer_differences(_backend(failover.VLLM_SERVER_RUNTIME), backend, FORMATS)
    assert (found.aspect, found.fallback) == ("tool calls parser", "not parsed")


# --- reading a DynamoGraphDeployment ----------------------------------------------------------------------


def _worker_args(dgd: dict[str, Any]) -> list[list[str]]:
    return [
        container["args"]
        for component in dgd["spec"]["components"]
        if component["type"] != "frontend"
        for container in component["podTemplate"]["spec"]["containers"]
    ]


@pytest.mark.parametrize("spelling", [["--max-model-len", "65536"], ["--max-model-len=65536"]])
def test_an_engine_argument_sets_the_maximum_context(spelling):
    recipe = next(r for r in FACTS.catalog.recipes.values() if r.dgd["spec"]["backendFramework"] == "vllm")
    dgd = copy.deepcopy(recipe.dgd)
    for args in _worker_args(dgd):
        args += spelling
    assert dynamo_backend(recipe.id, MODEL, dgd, FORMATS).max_context == "65536"
    assert dynamo_backend(recipe.id, MODEL, recipe.dgd, FORMATS).max_context is None


def test_components_that_disagree_on_the_maximum_context_differ_from_any_backend():
    recipe = next(r for r in FACTS.catalog.recipes.values() if len(r.worker_components()) > 1)
    dgd = copy.deepcopy(recipe.dgd)
    for length, args in zip(("32768", "65536"), _worker_args(dgd), strict=False):
        args += ["--max-model-len", length]
    backend = dynamo_backend(recipe.id, MODEL, dgd, FORMATS)
    assert [d.aspect for d in answer_differences(_backend(max_context="65536"), backend, FORMATS)] == [
        "maximum context"
    ]


def test_an_engine_config_sets_the_maximum_context():
    recipe = next(r for r in FACTS.catalog.recipes.values() if r.dgd["spec"]["backendFramework"] == "trtllm")
    data: Mapping[str, str] = recipe.config_map["data"]
    planted = {key: text + "max_seq_len: 65536\n" for key, text in data.items()}
    assert dynamo_backend(recipe.id, MODEL, recipe.dgd, FORMATS, planted.values()).max_context == "65536"
    assert dynamo_backend(recipe.id, MODEL, recipe.dgd, FORMATS, data.values()).max_context is None


def test_components_that_disagree_on_a_parser_match_no_recorded_parser():
    recipe = next(r for r in FACTS.catalog.recipes.values() if len(r.worker_components()) > 1)
    dgd = copy.deepcopy(recipe.dgd)
    last = _worker_args(dgd)[-1]
    last[last.index(failover.DYNAMO_TOOL_CALL_PARSER) + 1] = "hermes"
    backend = dynamo_backend(recipe.id, MODEL, dgd, FORMATS)
    assert "differs between components" in str(backend.tool_call_parser)
    assert [d.aspect for d in answer_differences(_backend(), backend, FORMATS)] == ["tool calls parser"]


# --- the refusal ------------------------------------------------------------------------------------------


def test_a_refusal_is_one_line_naming_the_key_the_group_and_both_backends():
    primary, fallback = _backend(name="dynamo:vllm/x"), _backend(name="sagemaker:y", max_context="4096")
    (error,) = refuse_unlike_fallbacks([FallbackPair("m", "a", "b", True)], {"a": primary, "b": fallback}, FORMATS)
    line = str(error)
    assert line.startswith("gateway.sameModelFallback: model group 'm' fails over from dynamo:vllm/x to sagemaker:y")
    assert "maximum context" in line and "\n" not in line


def test_fallback_pairs_cover_every_deployment_of_every_fallback_in_order():
    deployments = {"a1": "m", "a2": "m", "b": "m@sagemaker", "c": "other"}
    groups = (
        GatewayModel(name="m", servedModelName="m", kind="dynamo", fallbacks=["m@sagemaker", "other"], degraded=False),
        GatewayModel(name="m@sagemaker", servedModelName="m", kind="sagemaker", fallbacks=[], degraded=False),
        GatewayModel(name="other", servedModelName="o", kind="sagemaker", fallbacks=[], degraded=True),
    )
    model_list = [{"model_name": group, "model_info": {"id": id_}} for id_, group in deployments.items()]
    pairs = fallback_pairs(GatewayPlan(groups, {"model_list": model_list}, needs_redis=False))
    assert [(p.primary, p.fallback, p.same_model) for p in pairs] == [
        ("a1", "b", True),
        ("a2", "b", True),
        ("a1", "c", False),
        ("a2", "c", False),
    ]


# --- prod ---------------------------------------------------------------------------------------------------


def _prod_plan(raw: dict[str, Any]) -> StackPlan:
    config, _ = stack_config("prod")
    return plan_of(raw, default_region=config["aws:region"])


def prod_refusals(raw: dict[str, Any], formats: ResponseFormats = FORMATS) -> tuple[list[Any], list[Any]]:
    """Prod's pairs and refusals were its Dynamo group to fail over to its SageMaker group: the routing the
    plan builds with `gateway.sameModelFallback` true, checked as the plan checks it."""
    plan = _prod_plan(raw)
    assert plan.gateway is not None
    gateway = plan.gateway
    settings = gateway.config.model_copy(update={"sameModelFallback": True})
    routing = plan_gateway(gateway.dynamo, gateway.sagemaker, settings, RedisAddress("redis", 6379))
    return fallback_pairs(routing), gateway_fallback_errors(
        routing, plan.serving.targets, plan.sagemaker, FACTS.lmi, formats
    )


def _recorded_differences(first: str, second: str) -> list[str]:
    """The attributes in which the runtimes' recorded parsers differ, read straight from the data."""
    one, other = FORMATS.by_name[first], FORMATS.by_name[second]
    found = []
    for kind, attributes in (("toolCallParsers", TOOL_CALL_ATTRIBUTES), ("reasoningParsers", REASONING_ATTRIBUTES)):
        (a,), (b,) = getattr(one, kind).values(), getattr(other, kind).values()
        found += [attribute for attribute in attributes if getattr(a, attribute) != getattr(b, attribute)]
    return found


def test_prod_fallback_pairs_as_the_data_stands():
    """Every Dynamo target of prod would fail over to its SageMaker endpoint: same name and context; refused
    for exactly the parser attributes the data records as different, naming the key."""
    raw = stack_file_config("prod")
    pairs, errors = prod_refusals(raw)
    targets = [t["id"] for t in raw["targets"]]
    endpoints = [e["name"] for e in raw["sagemaker"]["endpoints"]]
    assert sorted((p.primary, p.fallback) for p in pairs) == sorted(
        (f"dynamo:{t}", f"sagemaker:{e}") for t in targets for e in endpoints
    )
    expected = _recorded_differences(failover.DYNAMO_RUNTIME, failover.VLLM_SERVER_RUNTIME)
    assert len(errors) == (len(pairs) if expected else 0)
    for error, pair in zip(errors, pairs, strict=True):
        line, _, _ = str(error).partition("; allowed: ")
        prefix = (
            f"{failover.SAME_MODEL_KEY}: model group '{pair.group}' fails over from {pair.primary} to {pair.fallback}"
        )
        assert line.startswith(prefix)
        assert "served model name" not in line and "maximum context" not in line
        assert all(f" {attribute} " in line for attribute in expected), line


def test_prod_as_committed_keeps_the_same_model_endpoint_out_of_its_fallbacks():
    """The decision the data forces while the parsers differ: prod renders, its SageMaker group is no fallback;
    switched back on, the render refuses naming the key and both backends of the first pair."""
    raw = stack_file_config("prod")
    plan = _prod_plan(raw)
    assert plan.gateway is not None
    assert all(not group.fallbacks for group in plan.gateway.routing.groups)
    switched = copy.deepcopy(raw)
    switched["gateway"]["sameModelFallback"] = True
    _, errors = prod_refusals(raw)
    if errors:
        with pytest.raises(ConfigError, match=rf"^{failover.SAME_MODEL_KEY}: model group .* fails over from "):
            _prod_plan(switched)
    else:
        assert _prod_plan(switched).gateway is not None


def test_prod_passes_once_the_parsers_are_aligned():
    _, errors = prod_refusals(stack_file_config("prod"), _aligned())
    assert errors == []


def test_prod_with_a_planted_maximum_context_is_refused_naming_the_key():
    raw = copy.deepcopy(stack_file_config("prod"))
    endpoint = raw["sagemaker"]["endpoints"][0]
    form = FACTS.lmi.argumentForms["sagemaker-vllm"]
    endpoint["huggingface"]["options"] = {form.variable("--max-model-len"): "65536"}
    _, errors = prod_refusals(raw, _aligned())
    assert errors and all(
        str(e).startswith(f"{failover.SAME_MODEL_KEY}: ") and "maximum context" in str(e) for e in errors
    )
