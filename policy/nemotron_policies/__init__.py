"""CrossGuard policies of the Nemotron 3.5 Lightning stack.

`pack.POLICIES` is what `policy/__main__.py` serves to the Pulumi CLI; `offline.evaluate` runs the same
policies on a mock render. Importable as `nemotron_policies` (the CLI puts `policy/` on the path) and as
`policy.nemotron_policies` from the repository root.
"""
