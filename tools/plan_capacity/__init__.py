"""The capacity planner, a tool beside the program (`make plan STACK=<stack> [WRITE=1]`, `cli.py`): the cheapest
plan for a stack's `demand:` block (`solver.py`), why it is that plan (`explain.py`), and the `targets:` and
`aws.nodePools` it implies, written into the stack file for review (`stack_file.py`). `pulumi up` never plans;
its own requirements (`requirements.txt`) stay out of the program's."""
