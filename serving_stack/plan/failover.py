"""Does a fallback pair of the gateway answer alike? Two backend descriptions -> the differences a client sees.

An agent that depends on tool calls must get the same answer whichever backend the gateway picked: the same served
model name, maximum context, and parsers that turn tool-call and reasoning markup into the same OpenAI fields. What
each runtime's parsers do is data (`catalog/response_formats.yaml`, checked against the parsers themselves by
`tests/test_failover_parsers.py`); anything it does not record differs from everything. A pair is refused (one
`ConfigError` per pair naming the gateway key) unless aligned at its source, never waived here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import yaml

from serving_stack.errors import ConfigError
from serving_stack.facts.response_formats import ReasoningAnswer, ResponseFormats, ToolCallAnswer
from serving_stack.facts.sagemaker import LmiFile
from serving_stack.plan.gateway import DYNAMO_ID_PREFIX, SAGEMAKER_ID_PREFIX, GatewayPlan
from serving_stack.plan.sagemaker import HuggingFaceSource, PlannedEndpoint
from serving_stack.plan.serving import PlannedTarget, flag_values

DYNAMO_RUNTIME = "dynamo-frontend"
VLLM_SERVER_RUNTIME = "vllm-openai-server"
DYNAMO_TOOL_CALL_PARSER = "--dyn-tool-call-parser"
DYNAMO_REASONING_PARSER = "--dyn-reasoning-parser"
VLLM_TOOL_CALL_PARSER = "--tool-call-parser"
VLLM_REASONING_PARSER = "--reasoning-parser"
VLLM_AUTO_TOOL_CHOICE = "--enable-auto-tool-choice"
TOOL_CALL_ATTRIBUTES = ("markup", "arguments", "valueTypes", "stringValues", "textBeforeCalls")
REASONING_ATTRIBUTES = ("markup", "thinkingOff")
RELEASE = re.compile(r"^v?(\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class Backend:
    """One backend as the gateway names it (`dynamo:<target id>`, `sagemaker:<endpoint>`). A parser None:
    that kind of markup is not parsed; `max_context` as an argument writes it (None: the checkpoint's own, no
    argument sets one). Values that differ between a deployment's components are all kept, in one string that
    matches nothing recorded, so they show as a difference."""

    name: str
    runtime: str
    version: str
    served_model_name: str
    tool_call_parser: Optional[str]
    reasoning_parser: Optional[str]
    max_context: Optional[str]


@dataclass(frozen=True)
class Difference:
    aspect: str
    primary: str
    fallback: str

    def __str__(self) -> str:
        return f"{self.aspect} {self.primary!r} vs {self.fallback!r}"


def _one(name: str, values: Iterable[Optional[str]]) -> Optional[str]:
    """The single value a setting has across a deployment's components; several: all of them, which matches
    no recorded parser nor another backend's value, and so shows as a difference."""
    distinct = sorted({value for value in values if value is not None})
    if len(distinct) > 1:
        return f"{name} differs between components: {' | '.join(distinct)}"
    return distinct[0] if distinct else None


def _max_context(
    flags: Mapping[str, list[Optional[str]]], engine_configs: Iterable[str], formats: ResponseFormats
) -> Optional[str]:
    """The maximum context the arguments (or an engine config, as YAML) set, as written; None: none is set."""
    found = [value for flag in formats.maxContext.arguments for value in flags.get(flag, [])]
    for text in engine_configs:
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError:
            continue  # not a config file (a script, a template): it sets no engine option
        if isinstance(document, dict):
            found += [str(document[key]) for key in formats.maxContext.engineConfigKeys if key in document]
    return _one("maximum context", found)


def dynamo_backend(
    target_id: str,
    served_model_name: str,
    dgd: Mapping[str, Any],
    formats: ResponseFormats,
    engine_configs: Iterable[str] = (),
) -> Backend:
    """A Dynamo target from its rendered DGD: the frontend image's release, the `--dyn-*-parser` its workers
    register with the frontend, the maximum context its engine arguments (or `engine_configs`, the texts of
    its ConfigMap) set."""
    flags: dict[str, list[Optional[str]]] = {}
    release = None
    for component in dgd["spec"]["components"]:
        for container in component["podTemplate"]["spec"]["containers"]:
            for flag, values in flag_values([*container.get("command", []), *container.get("args", [])]).items():
                flags.setdefault(flag, []).extend(values)
            if component.get("type") == "frontend":
                match = RELEASE.match(str(container["image"]).rpartition(":")[2])
                release = match.group(1) if match else None
    return Backend(
        name=f"dynamo:{target_id}",
        runtime=DYNAMO_RUNTIME,
        version=release or "unknown",
        served_model_name=served_model_name,
        tool_call_parser=_one(DYNAMO_TOOL_CALL_PARSER, flags.get(DYNAMO_TOOL_CALL_PARSER, [])),
        reasoning_parser=_one(DYNAMO_REASONING_PARSER, flags.get(DYNAMO_REASONING_PARSER, [])),
        max_context=_max_context(flags, engine_configs, formats),
    )


def arguments_from_environment(
    environment: Mapping[str, str], prefix: str, flag_value: str, renames: Mapping[str, str]
) -> dict[str, Optional[str]]:
    """The vLLM engine arguments a container builds from its `<prefix><FLAG>` variables (a bare flag: None),
    the inverse of the argument form in `catalog/sagemaker_lmi.yaml`."""
    by_variable = {variable: flag for flag, variable in renames.items()}
    arguments: dict[str, Optional[str]] = {}
    for variable, value in environment.items():
        if variable in by_variable:
            flag = by_variable[variable]
        elif variable.startswith(prefix):
            flag = variable.removeprefix(prefix).lower().replace("_", "-")
        else:
            continue
        arguments[f"--{flag}"] = None if value == flag_value else value
    return arguments


def vllm_server_backend(
    name: str, served_model_name: str, version: str, arguments: Mapping[str, Optional[str]], formats: ResponseFormats
) -> Backend:
    """A vLLM OpenAI server (the SageMaker vLLM container) from its engine arguments. Without
    `--enable-auto-tool-choice` it parses no tool calls, whatever `--tool-call-parser` says."""
    flags = {flag: [value] for flag, value in arguments.items()}
    return Backend(
        name=name,
        runtime=VLLM_SERVER_RUNTIME,
        version=version,
        served_model_name=served_model_name,
        tool_call_parser=arguments.get(VLLM_TOOL_CALL_PARSER) if VLLM_AUTO_TOOL_CHOICE in arguments else None,
        reasoning_parser=arguments.get(VLLM_REASONING_PARSER),
        max_context=_max_context(flags, (), formats),
    )


def _recorded(
    backend: Backend, formats: ResponseFormats
) -> tuple[Optional[ToolCallAnswer], Optional[ReasoningAnswer], str]:
    """The backend's answers as the data records them, and why not where it does not."""
    runtime = formats.by_name.get(backend.runtime)
    if runtime is None or backend.version not in runtime.versions:
        return None, None, f"no answer recorded for {backend.runtime} {backend.version}"
    tool = runtime.toolCallParsers.get(backend.tool_call_parser or "")
    reasoning = runtime.reasoningParsers.get(backend.reasoning_parser or "")
    return tool, reasoning, ""


def _describe(parser: Optional[str], recorded: Any, attribute: str, unknown: str) -> str:
    if parser is None:
        return "not parsed"
    if unknown:
        return f"{parser} ({unknown})"
    if recorded is None:
        return f"{parser} (not recorded)"
    return str(getattr(recorded, attribute))


def answer_differences(
    primary: Backend, fallback: Backend, formats: ResponseFormats, same_model: bool = True
) -> list[Difference]:
    """What a client would see change when `fallback` answers instead of `primary`. `same_model` False: a
    degraded fallback, another model by design, whose name and context are its own; its answers' shape
    still counts."""
    found = []
    if same_model and primary.served_model_name != fallback.served_model_name:
        found.append(Difference("served model name", primary.served_model_name, fallback.served_model_name))
    if same_model and primary.max_context != fallback.max_context:
        context_a, context_b = (
            "the checkpoint's" if b.max_context is None else b.max_context for b in (primary, fallback)
        )
        found.append(Difference("maximum context", context_a, context_b))
    tool_a, reason_a, unknown_a = _recorded(primary, formats)
    tool_b, reason_b, unknown_b = _recorded(fallback, formats)
    sides = (
        ("tool calls", TOOL_CALL_ATTRIBUTES, primary.tool_call_parser, tool_a, fallback.tool_call_parser, tool_b),
        ("reasoning", REASONING_ATTRIBUTES, primary.reasoning_parser, reason_a, fallback.reasoning_parser, reason_b),
    )
    for aspect, attributes, parser_a, answer_a, parser_b, answer_b in sides:
        known = answer_a is not None and answer_b is not None
        if not known and (parser_a, parser_b) != (None, None):
            first = _describe(parser_a, answer_a, attributes[0], unknown_a)
            second = _describe(parser_b, answer_b, attributes[0], unknown_b)
            found.append(Difference(f"{aspect} parser", first, second))
            continue
        for attribute in attributes if known else ():
            value_a, value_b = getattr(answer_a, attribute), getattr(answer_b, attribute)
            if value_a != value_b:
                found.append(Difference(f"{aspect} {attribute}", value_a, value_b))
    if reason_a is not None and reason_b is not None:
        fields = formats.gateway.reasoningField
        field_a, field_b = (fields.get(r.field, r.field) for r in (reason_a, reason_b))
        if field_a != field_b:
            found.append(Difference("reasoning field through the gateway", field_a, field_b))
    return found


@dataclass(frozen=True)
class FallbackPair:
    """A deployment of a model group and a deployment of one of its fallback groups (`same_model` False: the
    degraded fallback, which serves another model)."""

    group: str
    primary: str
    fallback: str
    same_model: bool


def fallback_pairs(routing: GatewayPlan) -> list[FallbackPair]:
    """Every (deployment, fallback deployment) the gateway may switch between, group by group, each group's
    fallbacks in order."""
    other_model = {g.name for g in routing.groups if g.degraded}
    return [
        FallbackPair(group.name, primary, fallback, target not in other_model)
        for group in routing.groups
        for target in group.fallbacks
        for primary in routing.deployment_ids(group.name)
        for fallback in routing.deployment_ids(target)
    ]


def refuse_unlike_fallbacks(
    pairs: Iterable[FallbackPair], backends: Mapping[str, Backend], formats: ResponseFormats
) -> list[ConfigError]:
    """One error per fallback pair that does not answer alike, naming the key that makes the pair
    (`gateway.sameModelFallback`, `gateway.degradedFallback.endpoint`), the model group and both backends
    (`backends`: by deployment id); empty when every pair does."""
    errors = []
    for pair in pairs:
        primary, fallback = backends[pair.primary], backends[pair.fallback]
        found = answer_differences(primary, fallback, formats, pair.same_model)
        if found:
            why = f"model group {pair.group!r} fails over from {primary.name} to {fallback.name}, which answer "
            why += f"differently: {'; '.join(str(difference) for difference in found)}"
            errors.append(ConfigError(SAME_MODEL_KEY if pair.same_model else DEGRADED_KEY, why, ALIGNED))
    return errors


UNLISTED_RUNTIME = "sagemaker-unlisted-container"
ALIGNED = (
    "backends with one served model name and maximum context whose parsers answer alike "
    "(catalog/response_formats.yaml); align the backend that differs"
)
SAME_MODEL_KEY = "gateway.sameModelFallback"
DEGRADED_KEY = "gateway.degradedFallback.endpoint"


def endpoint_backend(endpoint: PlannedEndpoint, lmi: LmiFile, formats: ResponseFormats) -> Backend:
    """A SageMaker endpoint: a listed vLLM container from the engine arguments its environment carries; any
    other container (JumpStart's, an image of one's own) runs parsers the data does not record."""
    name, served = f"{SAGEMAKER_ID_PREFIX}{endpoint.name}", endpoint.endpoint.servedModelName
    source = endpoint.source
    listed = source.container if isinstance(source, HuggingFaceSource) else None
    container = next((c for c in lmi.containers if c.name == listed), None)
    if container is None:
        return Backend(name, UNLISTED_RUNTIME, "unknown", served, "unknown", "unknown", None)
    form = lmi.argumentForms[container.argumentForm]
    arguments = arguments_from_environment(endpoint.container.environment, form.prefix, form.flagValue, form.renames)
    return vllm_server_backend(name, served, container.vllmVersion, arguments, formats)


def gateway_fallback_errors(
    routing: GatewayPlan,
    targets: Sequence[PlannedTarget],
    endpoints: Sequence[PlannedEndpoint],
    lmi: LmiFile,
    formats: ResponseFormats,
) -> list[ConfigError]:
    """Every fallback pair of the planned gateway that does not answer alike (`refuse_unlike_fallbacks`)."""
    backends = {
        f"{DYNAMO_ID_PREFIX}{t.selected.id}": dynamo_backend(
            t.selected.id, t.endpoint.servedModelName, t.dgd, formats, (t.config_map or {}).get("data", {}).values()
        )
        for t in targets
    }
    backends.update({f"{SAGEMAKER_ID_PREFIX}{e.name}": endpoint_backend(e, lmi, formats) for e in endpoints})
    return refuse_unlike_fallbacks(fallback_pairs(routing), backends, formats)
