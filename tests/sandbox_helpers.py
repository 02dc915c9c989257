"""The committed sandbox stack rendered as `make render STACK=sandbox` renders it (placeholders and the
out-of-band gateway key accepted), and its outputs as the render writes them to outputs.json."""

from __future__ import annotations

import functools
import json
from typing import Any

from serving_stack.contract.outputs import StackOutputs
from tools.mock_runtime import ProgramRun, run_program
from tools.secret_placeholders import stack_inputs

STACK = "sandbox"


@functools.cache
def sandbox_run() -> ProgramRun:
    inputs = stack_inputs(STACK, placeholders=True)
    return run_program(inputs.config, inputs.secret_keys, stack=STACK)


def rendered_outputs(run: ProgramRun) -> dict[str, Any]:
    """outputs.json of a render (tools/render.py writes the validated contract)."""
    return json.loads(StackOutputs.model_validate(run.outputs).model_dump_json())
