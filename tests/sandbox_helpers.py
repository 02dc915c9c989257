"""A committed stack rendered as `make render STACK=<stack>` renders it (placeholders and the out-of-band
gateway key accepted), the sandbox's above all, and its outputs as the render writes them to outputs.json."""

from __future__ import annotations

import functools
import json
from typing import Any

from serving_stack.contract.outputs import StackOutputs
from tools.mock_runtime import ProgramRun, run_program
from tools.secret_placeholders import stack_inputs

STACK = "sandbox"


@functools.cache
def committed_run(stack: str) -> ProgramRun:
    inputs = stack_inputs(stack, placeholders=True)
    return run_program(inputs.config, inputs.secret_keys, stack=stack)


def sandbox_run() -> ProgramRun:
    return committed_run(STACK)


def rendered_outputs(run: ProgramRun) -> dict[str, Any]:
    """outputs.json of a render (tools/render.py writes the validated contract)."""
    return json.loads(StackOutputs.model_validate(run.outputs).model_dump_json())
