"""Parse model outputs the way vLLM's OpenAI server does and print the OpenAI fields it would answer with.

Runs in .venv-parsers (requirements-parsers.txt: the vLLM wheel the SageMaker container bundles, installed
without its dependencies, plus what importing its parser modules needs; no GPU is used). Same contract as
the Dynamo probe (tools/parser_probe/dynamo):

stdin:  {"tool_parser": "qwen3_xml", "reasoning_parser": "nemotron_v3",
         "cases": {"<id>": {"model_text": "...", "chunks": ["...", ...], "tools": [{"name", "parameters"}],
                            "in_reasoning": true | false | null}}}
stdout: {"<id>": {"stream": Answer, "batch": Answer}},
        Answer = {"reasoning": str, "content": str, "tool_calls": [{"name": str, "arguments": str}]}

The parser is the one the chat-completions server composes (`ParserManager.get_parser` with
`--enable-auto-tool-choice`), built per request as the server builds it (tools, `chat_template_kwargs`).
`batch` is `parser.parse` (the non-streaming answer); `stream` feeds `parse_delta` the `chunks`, one token
each (a chunk that is one of the template's markers is that special token), after a prompt that ends as the
template's generation prompt does (`<think>\\n`, or `<think></think>` when `in_reasoning` is false:
`enable_thinking: false`). Deltas are concatenated per tool-call index.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

os.environ["VLLM_CONFIGURE_LOGGING"] = "0"  # its INFO lines would go to stdout, which carries the answer

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.parser.parser_manager import ParserManager

# Special tokens of the Nemotron 3 chat template, which the parsers also match by token id. The ids are
# arbitrary: the parsers only compare them with the tokenizer's vocabulary and decode them through it.
SPECIAL = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>")
VOCAB = {token: index for index, token in enumerate(SPECIAL, start=10)}
PROMPT_TEXT_ID = 999
FIRST_TEXT_ID = 1000


class PieceTokenizer:
    """What the parsers read of a tokenizer: the vocabulary holding the markers, and `decode` of the ids this
    probe hands out (each marker one id, each plain-text piece its own id)."""

    def __init__(self) -> None:
        self.texts = {index: token for token, index in VOCAB.items()} | {PROMPT_TEXT_ID: "assistant\n"}

    def get_vocab(self) -> dict[str, int]:
        return dict(VOCAB)

    def decode(self, token_ids: list[int], **_: Any) -> str:
        return "".join(self.texts[index] for index in token_ids)

    def tokens(self, chunks: list[str]) -> list[tuple[str, int]]:
        """Each chunk with its token id: a marker's own, a fresh one for any other text."""
        pieces: list[tuple[str, int]] = []
        for chunk in chunks:
            index = VOCAB.get(chunk)
            if index is None:
                index = FIRST_TEXT_ID + len(self.texts)
                self.texts[index] = chunk
            pieces.append((chunk, index))
        return pieces


def request(case: dict[str, Any], thinking: bool) -> ChatCompletionRequest:
    tools = [{"type": "function", "function": tool} for tool in case.get("tools", [])]
    return ChatCompletionRequest.model_validate(
        {
            "model": "probe",
            "messages": [{"role": "user", "content": "probe"}],
            "tools": tools or None,
            "tool_choice": "auto" if tools else None,
            "chat_template_kwargs": {"enable_thinking": thinking},
        }
    )


def answer(reasoning: str | None, content: str | None, calls: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "reasoning": reasoning or "",
        "content": content or "",
        "tool_calls": [{"name": name, "arguments": arguments} for name, arguments in calls],
    }


def parse_case(parser_cls: type, case: dict[str, Any]) -> dict[str, Any]:
    thinking = case.get("in_reasoning") is not False
    req = request(case, thinking)

    tokenizer = PieceTokenizer()
    pieces = tokenizer.tokens(case["chunks"])

    def new_parser() -> Any:
        return parser_cls(tokenizer, req.tools, chat_template_kwargs=req.chat_template_kwargs)

    reasoning, content, calls = new_parser().parse(case["model_text"], req, enable_auto_tools=True)
    batch = answer(reasoning, content, [(call.name, call.arguments) for call in calls or []])

    parser = new_parser()
    prompt = [VOCAB["<|im_start|>"], PROMPT_TEXT_ID, VOCAB["<think>"]]
    prompt += [] if thinking else [VOCAB["</think>"]]
    streamed_reasoning, streamed_content = [], []
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}
    for position, (text, token_id) in enumerate(pieces):
        delta = parser.parse_delta(
            delta_text=text,
            delta_token_ids=[token_id],
            request=req,
            prompt_token_ids=prompt,
            finished=position == len(pieces) - 1,
        )
        if delta is None:
            continue
        streamed_reasoning.append(delta.reasoning or "")
        streamed_content.append(delta.content or "")
        for call in delta.tool_calls or []:
            if call.function is None:
                continue
            names[call.index] = names.get(call.index, "") + (call.function.name or "")
            arguments[call.index] = arguments.get(call.index, "") + (call.function.arguments or "")
    stream = answer(
        "".join(streamed_reasoning),
        "".join(streamed_content),
        [(names[index], arguments.get(index, "")) for index in sorted(names)],
    )
    return {"stream": stream, "batch": batch}


def main() -> None:
    job = json.load(sys.stdin)
    parser_cls = ParserManager.get_parser(
        tool_parser_name=job["tool_parser"],
        reasoning_parser_name=job["reasoning_parser"],
        enable_auto_tools=True,
    )
    json.dump({case_id: parse_case(parser_cls, case) for case_id, case in job["cases"].items()}, sys.stdout)


if __name__ == "__main__":
    main()
