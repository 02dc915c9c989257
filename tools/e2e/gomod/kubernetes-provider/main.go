// Command pulumi-resource-kubernetes serves the Kubernetes provider with the schema the build stamps.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

func main() { provider.Serve("kubernetes", version.Version, schema, []byte("{}")) }
