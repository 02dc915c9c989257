"""The model's own output for the failover parser comparison, and what a client must get back from it.

Nemotron 3.5 Lightning writes tool calls and reasoning in its chat template's format
(`catalog/response_formats.yaml`, `modelOutput`): after the generation prompt `<|im_start|>assistant\\n<think>\\n`
(thinking on) the model writes its reasoning, `\\n</think>\\n`, optional text, then one block per call:

    <tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n...</function>\\n</tool_call>\\n

where a string VALUE is written as is and an object or array as JSON; other scalars as the template's
`| string` writes them. With thinking off the prompt already ends `<think></think>` and the answer follows.
`model_output` writes a case in that format; `expected_answer` is the OpenAI answer it stands for, which
every parser must return (normalised by `normalise`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Case:
    """`reasoning` None: thinking off (`chat_template_kwargs.enable_thinking: false`)."""

    id: str
    reasoning: Optional[str]
    text: str
    calls: tuple[Call, ...] = ()
    tools: tuple[dict[str, Any], ...] = ()
    chunk_chars: int = 3


def _function(name: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "parameters": {"type": "object", "properties": properties, "required": list(properties)}}


WEATHER = _function("get_weather", city={"type": "string"}, days={"type": "integer"})
TIME = _function("get_time", timezone={"type": "string"})
TYPED = _function(
    "book",
    guests={"type": "integer"},
    budget={"type": "number"},
    refundable={"type": "boolean"},
    room={"type": "object", "properties": {"floor": {"type": "integer"}, "view": {"type": "string"}}},
    nights={"type": "array", "items": {"type": "string"}},
    note={"type": "string"},
    code={"type": "string"},
    padded={"type": "string"},
)

CASES = (
    Case(
        "one-call",
        "The user asks for the weather in Paris; get_weather answers that.",
        "Let me check the forecast.",
        (Call("get_weather", {"city": "Paris", "days": 3}),),
        (WEATHER,),
    ),
    Case(
        "parallel-calls",
        "Two independent lookups: weather and local time.",
        "",
        (Call("get_weather", {"city": "Tokyo", "days": 1}), Call("get_time", {"timezone": "Asia/Tokyo"})),
        (WEATHER, TIME),
    ),
    Case(
        "typed-arguments",
        "Book the room with every field the tool takes.",
        "Booking now.",
        (
            Call(
                "book",
                {
                    "guests": 2,
                    "budget": 249.5,
                    "refundable": True,
                    "room": {"floor": 7, "view": 'sea & "harbour"'},
                    "nights": ["2026-12-24", "2026-12-25"],
                    "note": 'Say "hi" <b>&amp;</b> bring a map\nsecond line',
                    "code": "007",
                    "padded": "  indented, trailing tab\t",
                },
            ),
        ),
        (TYPED,),
        chunk_chars=5,
    ),
    Case(
        "call-right-after-reasoning",
        "No need to explain; call the tool.",
        "",
        (Call("get_weather", {"city": "Lyon", "days": 2}),),
        (WEATHER,),
        chunk_chars=1,
    ),
    Case("no-call", "A greeting needs no tool.", "Hello! How can I help?", (), (WEATHER,)),
    Case("thinking-off-call", None, "", (Call("get_time", {"timezone": "UTC"}),), (TIME,)),
)


def _template_value(value: Any) -> str:
    """A parameter value as the chat template writes it: `tojson` for objects and arrays, `| string` else."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def model_output(case: Case) -> str:
    """What the model generates for `case`, after the chat template's generation prompt."""
    head = "" if case.reasoning is None else f"{case.reasoning}\n</think>\n"
    body = case.text + "\n" if case.text and case.calls else case.text
    for call in case.calls:
        body += f"<tool_call>\n<function={call.name}>\n"
        for key, value in call.arguments.items():
            body += f"<parameter={key}>\n{_template_value(value)}\n</parameter>\n"
        body += "</function>\n</tool_call>\n"
    return head + body


# The chat template's markers. The model's tokenizer holds them as special tokens (assumed from the Nemotron 3
# tokenizer; Lightning's was not readable here), so a server's stream carries each one whole in one delta.
MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>")


def chunks(text: str, size: int) -> list[str]:
    """`text` as a server streams it: each marker whole, the text between in pieces of `size` characters."""
    pieces: list[str] = []
    rest = text
    while rest:
        starts = [(rest.find(marker), marker) for marker in MARKERS if marker in rest]
        at, marker = min(starts) if starts else (len(rest), "")
        pieces += [rest[start : min(start + size, at)] for start in range(0, at, size)]
        if marker:
            pieces.append(marker)
        rest = rest[at + len(marker) :]
    return pieces


def probe_cases(cases: tuple[Case, ...] = CASES, *, schemas: bool = True) -> dict[str, Any]:
    """The probes' input (`tools/parser_probe`). `schemas=False` drops the tools' parameter schemas."""
    return {
        case.id: {
            "model_text": model_output(case),
            "chunks": chunks(model_output(case), case.chunk_chars),
            "tools": [tool if schemas else {"name": tool["name"]} for tool in case.tools],
            "in_reasoning": case.reasoning is not None,
        }
        for case in cases
    }


@dataclass(frozen=True)
class Answer:
    """An OpenAI answer as a client compares it: each call's arguments parsed and written back as canonical
    JSON (keys sorted, so key order does not count, while a type does: `3`, `3.0`, `"3"` and `true` all
    differ), text without surrounding whitespace."""

    reasoning: str
    content: str
    tool_calls: tuple[tuple[str, str], ...] = field(default=())


def canonical(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def normalise(answer: dict[str, Any]) -> Answer:
    """A probe's answer as a client reads it. Arguments that are not JSON stay as written (never equal)."""

    def arguments(raw: str) -> str:
        try:
            return canonical(json.loads(raw))
        except json.JSONDecodeError:
            return f"not JSON: {raw}"

    return Answer(
        reasoning=answer["reasoning"].strip(),
        content=answer["content"].strip(),
        tool_calls=tuple((call["name"], arguments(call["arguments"])) for call in answer["tool_calls"]),
    )


# `stringValues: trimmed-html-unescaped` (catalog/response_formats.yaml): the replacements in the parser's order.
HTML_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"), ("&quot;", '"'), ("&#x27;", "'"), ("&#39;", "'"))


def _string_value(value: str, rule: str) -> str:
    if rule == "as-written":
        return value
    if rule == "trimmed-html-unescaped":
        value = value.strip()
        for entity, character in HTML_ENTITIES:
            value = value.replace(entity, character)
        return value
    raise ValueError(f"no rule for stringValues {rule!r}")


def _schema_type(case: Case, function: str, parameter: str) -> Any:
    tool = next(tool for tool in case.tools if tool["name"] == function)
    return tool.get("parameters", {}).get("properties", {}).get(parameter, {}).get("type")


def expected_answer(case: Case, string_values: str = "as-written", value_types: str = "request-schema") -> Answer:
    """The answer `case` stands for, from a parser whose recorded `stringValues` and `valueTypes` are these:
    with `request-schema` each value keeps its type and a string parameter's value follows `string_values`;
    with `strings` every value is the text the template wrote."""

    def value(function: str, parameter: str, written: Any) -> Any:
        if value_types == "strings":
            return _string_value(_template_value(written), string_values)
        if _schema_type(case, function, parameter) == "string":
            return _string_value(written, string_values)
        return written

    return Answer(
        reasoning=(case.reasoning or "").strip(),
        content=case.text.strip(),
        tool_calls=tuple(
            (call.name, canonical({key: value(call.name, key, item) for key, item in call.arguments.items()}))
            for call in case.calls
        ),
    )
