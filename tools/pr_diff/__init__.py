"""The pull-request diff: two offline renders of a stack compared for a reviewer (`make diff`).

Modules: `render_ref` (render a git ref and the working tree through each tree's own `make render`, each
in the virtualenv of its own requirements), `records` (load a render), `values` and `iam` (field-level
changes; replace-forcing fields from `tools/rollout/rules.py`, the rollout model's table), `stack_diff`
(resources, policy, consequences), `costs` ($/h), `pool_rolls` (GPU pools replaced node by node and the
targets they interrupt), `demand` (targets below the stack's demand), `engine` (the real engine's plan held
against the offline diff), `markdown` (consequences first; field
tables, cost and policy folded), `bound` (cutting Markdown without breaking it), `sample` (the planted
pull requests and the docs' sample comment).
"""
