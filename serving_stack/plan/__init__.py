"""Plan: config + facts -> one resolved, immutable `StackPlan` (see `stack_plan.py`)."""
from serving_stack.plan.stack_plan import StackPlan, build_plan

__all__ = ["StackPlan", "build_plan"]
