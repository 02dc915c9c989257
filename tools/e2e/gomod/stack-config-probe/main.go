// Command stack-config-probe reads a JSON list of stack-file texts on stdin and prints, for each, what the
// Pulumi CLI hands the program: {"config": {"<ns>:<key>": "<value>"}, "secure": ["<ns>:<key>"]} or
// {"error": "..."}. The project is named nemotron-lightning, as in Pulumi.yaml.
package main

import (
	"encoding/json"
	"os"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/common/encoding"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

type result struct {
	Config map[string]string `json:"config,omitempty"`
	Secure []string          `json:"secure,omitempty"`
	Error  string            `json:"error,omitempty"`
}

func read(text string) result {
	project := &workspace.Project{Name: "nemotron-lightning"}
	stack, err := workspace.LoadProjectStackBytes(nil, project, []byte(text), "Pulumi.probe.yaml", encoding.YAML)
	if err != nil {
		return result{Error: err.Error()}
	}
	out := result{Config: map[string]string{}, Secure: []string{}}
	for key, value := range stack.Config {
		if value.Secure() {
			out.Secure = append(out.Secure, key.String())
			continue
		}
		plain, err := value.Value(config.NopDecrypter)
		if err != nil {
			return result{Error: err.Error()}
		}
		out.Config[key.String()] = plain
	}
	sort.Strings(out.Secure)
	return out
}

func main() {
	var texts []string
	if err := json.NewDecoder(os.Stdin).Decode(&texts); err != nil {
		panic(err)
	}
	results := make([]result, len(texts))
	for i, text := range texts {
		results[i] = read(text)
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		panic(err)
	}
}
