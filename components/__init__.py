"""The ComponentResources: each builds its resources from the plan object it is given (`serving_stack.plan`),
beside `__main__.py`, which wires them."""
