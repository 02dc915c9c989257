"""Plan: config + facts -> one resolved, immutable `StackPlan` (`serving_stack.plan.stack.build_plan`)."""
