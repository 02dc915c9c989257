"""The backends' own parsers, fed the model's tool-call and reasoning output, answer as
`catalog/response_formats.yaml` records, and alike wherever it records them alike.

Every runtime the data marks `probe: true` runs here (`make parser-probes`): the Dynamo frontend's parsers from
the `dynamo-parsers` crate the Dynamo 1.5.0 runtime bundles, vLLM 0.27.1's from its wheel. Each case of
`tests/failover_helpers.py` (one call, parallel calls, typed arguments, a call right after reasoning, no call,
thinking off) goes through each runtime's recorded tool-call and reasoning parsers, streamed and not. Slow:
the probes are built outside the fast suite's environment.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from failover_helpers import CASES, expected_answer, normalise, probe_cases

from serving_stack.facts.response_formats import Runtime, load_response_formats
from tools import parser_probe

pytestmark = pytest.mark.slow

FORMATS = load_response_formats()
PROBED = [runtime for runtime in FORMATS.runtimes if runtime.probe]
SETUPS = [
    (runtime, tool, reasoning)
    for runtime in PROBED
    for tool, reasoning in itertools.product(runtime.toolCallParsers, runtime.reasoningParsers)
]
PATHS = ("batch", "stream")


def _setup_id(setup: tuple[Runtime, str, str]) -> str:
    runtime, tool, reasoning = setup
    return f"{runtime.name}:{tool}+{reasoning}"


@pytest.fixture(scope="module")
def answers() -> dict[str, Any]:
    return {_setup_id(setup): parser_probe.parse(setup[0].name, setup[1], setup[2], probe_cases()) for setup in SETUPS}


def _expected(setup: tuple[Runtime, str, str], case_id: str) -> Any:
    runtime, tool, _ = setup
    recorded = runtime.toolCallParsers[tool]
    case = next(case for case in CASES if case.id == case_id)
    return expected_answer(case, recorded.stringValues, recorded.valueTypes)


def test_the_data_names_a_parser_pair_for_every_probed_runtime():
    assert {runtime.name for runtime, _, _ in SETUPS} == {runtime.name for runtime in PROBED} != set()


@pytest.mark.parametrize("setup", SETUPS, ids=_setup_id)
@pytest.mark.parametrize("case_id", [case.id for case in CASES])
@pytest.mark.parametrize("path", PATHS)
def test_each_parser_answers_as_the_data_records(answers, setup, case_id, path):
    assert normalise(answers[_setup_id(setup)][case_id][path]) == _expected(setup, case_id)


@pytest.mark.parametrize(
    ("first", "second"), list(itertools.combinations(SETUPS, 2)), ids=lambda setup: _setup_id(setup)
)
@pytest.mark.parametrize("case_id", [case.id for case in CASES])
def test_runtimes_answer_alike_where_the_data_says_alike(answers, first, second, case_id):
    """Where the two runtimes' recorded attributes give one expected answer, the parsers return one answer,
    streamed and not; where they give two, the parsers differ exactly so (the data's difference is real)."""
    for path in PATHS:
        one = normalise(answers[_setup_id(first)][case_id][path])
        other = normalise(answers[_setup_id(second)][case_id][path])
        assert (one == other) == (_expected(first, case_id) == _expected(second, case_id)), (path, one, other)


def test_every_recorded_difference_shows_in_some_case(answers):
    """A difference the data records between two runtimes is one the cases make visible."""
    for first, second in itertools.combinations(SETUPS, 2):
        differing = [
            attribute
            for attribute in ("stringValues", "valueTypes")
            if getattr(first[0].toolCallParsers[first[1]], attribute)
            != getattr(second[0].toolCallParsers[second[1]], attribute)
        ]
        shown = [case.id for case in CASES if _expected(first, case.id) != _expected(second, case.id)]
        assert bool(differing) == bool(shown), (differing, shown)


def test_a_parser_that_returns_string_typed_arguments_is_caught():
    """The planted mismatch: vLLM's own parser without the request's tool schemas answers every value as a
    string ("2", "True"). The comparison the tests above use tells it from the recorded answer."""
    runtime, tool, reasoning = next(setup for setup in SETUPS if setup[0].name == "vllm-openai-server")
    typed = [
        case for case in CASES if any(not isinstance(v, str) for call in case.calls for v in call.arguments.values())
    ]
    planted = parser_probe.parse(runtime.name, tool, reasoning, probe_cases(tuple(typed), schemas=False))
    for case in typed:
        recorded = runtime.toolCallParsers[tool]
        for path in PATHS:
            got = normalise(planted[case.id][path])
            assert got != expected_answer(case, recorded.stringValues, recorded.valueTypes)
            assert got == expected_answer(case, recorded.stringValues, "strings")
