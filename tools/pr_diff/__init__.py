"""The pull-request diff: two offline renders of a stack compared for a reviewer (`make diff`, tools/diff.py),
each rendered through its own tree's `make render`; replace-forcing fields come from the rollout model's table
(tools/rollout/provider_rules.yaml), and each module's docstring says which part of the comment it writes.
"""
