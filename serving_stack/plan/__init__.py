"""Plan: config + facts -> one resolved, immutable `StackPlan` (`serving_stack.plan.stack_plan.build_plan`)."""
