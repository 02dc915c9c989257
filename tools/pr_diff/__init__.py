"""The pull-request diff: two offline renders of a stack compared for a reviewer (`make diff`).

Modules: `render_ref` (render a git ref and the working tree through each tree's own `make render`),
`records` (load a render), `values` and `iam` (field-level changes), `replacement` (replace-forcing
fields from `catalog/replacement_rules.yaml`), `stack_diff` (resources, policy), `costs` ($/h),
`markdown` (with `markdown_fields` and `markdown_cost_policy`).
"""
