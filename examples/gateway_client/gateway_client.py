"""Call the serving stack's gateway with the OpenAI client, configured from the stack outputs (contract
2.x), and say which model answered. From outside the cluster (examples/README.md has the whole sequence):

    pulumi stack output --json --stack sandbox > outputs.json      # or build/<stack>/outputs.json
    kubectl -n nemotron port-forward svc/llm-gateway 4000:4000 &    # with the stack's kubeconfig output
    GATEWAY_API_KEY=$(pulumi stack output gatewayApiKey --show-secrets --stack sandbox) \\
      python gateway_client.py --outputs outputs.json --base-url http://127.0.0.1:4000/v1 "Summarise RFC 9110"

`ClientSettings.from_outputs` is the whole contract logic (plain dict in, settings out): the Pulumi
program beside it feeds it `StackReference` outputs, the CLI a JSON file, tests a dict.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

CONTRACT_MAJOR = "2"  # the outputs contract this app reads; later 2.x versions only add fields
API_KEY_ENV = "GATEWAY_API_KEY"


class StackOutputsError(ValueError):
    """The serving stack's outputs cannot serve this app; the message says what to change."""


@dataclass(frozen=True)
class ClientSettings:
    base_url: str
    model: str
    fallbacks: tuple[str, ...]
    answered_by_headers: tuple[str, ...]

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, Any], model: Optional[str] = None) -> ClientSettings:
        """Settings for `model` (default: the first model Dynamo serves) from the stack outputs."""
        version = outputs.get("contractVersion")
        if str(version).partition(".")[0] != CONTRACT_MAJOR:
            raise StackOutputsError(
                f"the outputs are contract {version!r}; this app reads contract {CONTRACT_MAJOR}.x "
                "(serving_stack/contract/CHANGELOG.md)"
            )
        gateway = outputs.get("gateway")
        if not gateway:
            raise StackOutputsError(
                "the stack serves no gateway (its gateway.enabled is false, as in dev): point the app at a stack "
                "with one (sandbox, prod) or set nemotron-lightning:gateway.enabled true on it"
            )
        models = {entry["name"]: entry for entry in gateway["models"]}
        if model is None:
            model = next((m["name"] for m in gateway["models"] if m["kind"] == "dynamo"), gateway["models"][0]["name"])
        if model not in models:
            raise StackOutputsError(f"model {model!r} is not served by the gateway; it serves {', '.join(models)}")
        return cls(
            base_url=gateway["url"],
            model=model,
            fallbacks=tuple(models[model]["fallbacks"]),
            answered_by_headers=tuple(gateway["answeredByHeaders"]),
        )


@dataclass(frozen=True)
class Answer:
    text: str
    model: str  # the model that answered (a fallback of another model says so here)
    model_group: str
    deployment: str

    def failed_over_from(self, settings: ClientSettings) -> bool:
        return self.model_group != settings.model


def ask(
    settings: ClientSettings,
    api_key: str,
    prompt: str,
    *,
    base_url: Optional[str] = None,
    max_tokens: int = 256,
    timeout_seconds: float = 120.0,
) -> Answer:
    """One chat completion through the gateway. The gateway retries and fails over; the client retries
    only what never reached it (connection errors), twice."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url or settings.base_url, api_key=api_key, timeout=timeout_seconds, max_retries=2)
    raw = client.chat.completions.with_raw_response.create(
        model=settings.model, messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens
    )
    completion = raw.parse()
    group_header, deployment_header = settings.answered_by_headers
    return Answer(
        text=completion.choices[0].message.content or "",
        model=completion.model,
        model_group=raw.headers.get(group_header, ""),
        deployment=raw.headers.get(deployment_header, ""),
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prompt")
    parser.add_argument("--outputs", type=Path, required=True, help="`pulumi stack output --json` of the serving stack")
    parser.add_argument("--model", help="a model name of the gateway (default: the first Dynamo model)")
    parser.add_argument("--base-url", help="override the in-cluster URL (e.g. a port-forward)")
    args = parser.parse_args(argv)
    try:
        settings = ClientSettings.from_outputs(json.loads(args.outputs.read_text()), args.model)
    except StackOutputsError as error:
        print(f"error: {args.outputs}: {error}", file=sys.stderr)
        return 2
    api_key = os.environ.get(API_KEY_ENV)
    if not api_key:
        print(
            f"error: set {API_KEY_ENV} to the stack's secret output gatewayApiKey "
            "(`pulumi stack output gatewayApiKey --show-secrets`)",
            file=sys.stderr,
        )
        return 2
    answer = ask(settings, api_key, args.prompt, base_url=args.base_url)
    note = f" (failed over from {settings.model})" if answer.failed_over_from(settings) else ""
    print(
        json.dumps(
            {
                "model": answer.model,
                "modelGroup": answer.model_group,
                "deployment": answer.deployment,
                "failedOver": answer.failed_over_from(settings),
                "text": answer.text,
            }
        )
    )
    print(f"answered by {answer.model} via {answer.deployment}{note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
