"""The preflight: what the AWS account and the existing cluster say about a stack before its first `pulumi up`
(docs/preflight.md). `cli` runs it; `stack` reads the stack as the render does and holds the findings; `aws` and
`kube` hold the checks (and the read-only cluster client); the data it judges by is in `data/` (`facts`)."""
