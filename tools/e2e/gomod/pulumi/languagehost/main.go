// Command pulumi-language-python is this project's Python language host for the end-to-end harness.
//
// The module proxy does not serve upstream's host (github.com/pulumi/pulumi/sdk/python/cmd/
// pulumi-language-python/v3 answers 403), so this small one implements the part of the LanguageRuntime
// protocol that `pulumi up/preview/destroy/refresh` use: it runs the program with the project's
// virtualenv through tools/e2e/run_program.py, passing the engine's settings as flags and the stack's
// config as PULUMI_CONFIG / PULUMI_CONFIG_SECRET_KEYS. Plugins load on demand (ambient, from PATH).
// RunPlugin runs a Python plugin directory (the policy pack of `--policy-pack policy`, whose
// PulumiPolicy.yaml names runtime python) as upstream's host does for a bare directory: `python <dir> args...`
// with the virtualenv's interpreter, streaming its output back to the engine.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

const version = "0.1.0"

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engine string
}

func (h *host) Handshake(_ context.Context, req *pulumirpc.LanguageHandshakeRequest) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engine = req.GetEngineAddress()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (h *host) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) About(context.Context, *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	return &pulumirpc.AboutResponse{Executable: "python", Version: version}, nil
}

func (h *host) GetProgramDependencies(context.Context, *pulumirpc.GetProgramDependenciesRequest) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

// python is the virtualenv's interpreter named by Pulumi.yaml's runtime options (relative to the project root).
func python(info *pulumirpc.ProgramInfo) string {
	venv := ".venv"
	if v, ok := info.GetOptions().AsMap()["virtualenv"].(string); ok && v != "" {
		venv = v
	}
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(info.GetRootDirectory(), venv)
	}
	return filepath.Join(venv, "bin", "python")
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	runner := filepath.Join(info.GetRootDirectory(), "tools", "e2e", "run_program.py")
	args := []string{"-u", runner,
		"--monitor", req.GetMonitorAddress(), "--engine", h.engine,
		"--project", req.GetProject(), "--stack", req.GetStack(), "--organization", req.GetOrganization(),
		"--root", info.GetRootDirectory(), "--pwd", req.GetPwd(),
		"--dry-run", strconv.FormatBool(req.GetDryRun()), "--parallel", strconv.Itoa(int(req.GetParallel())),
		info.GetEntryPoint()}
	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(append([]string{}, req.GetConfigSecretKeys()...))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, python(info), args...)
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if ok := asExit(err, &exit); ok {
			if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.ExitStatus() == 32 {
				// The program already showed the user its error: tell the engine not to print another.
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with %v", err)}, nil
		}
		return nil, err
	}
	return &pulumirpc.RunResponse{}, nil
}

// pluginBound is how long a plugin (an analyzer lives for one preview or update) may run.
const pluginBound = 15 * time.Minute

func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer) error {
	info := req.GetInfo()
	interpreter := python(info)
	if _, err := os.Stat(interpreter); err != nil {
		return fmt.Errorf("plugin %s: its virtualenv has no python (run `make render` first): %w", req.GetName(), err)
	}
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(server.Context(), pluginBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, append([]string{"-u", info.GetProgramDirectory()}, req.GetArgs()...)...)
	cmd.Dir = req.GetPwd()
	venvBin := filepath.Dir(interpreter)
	cmd.Env = append(append([]string{}, req.GetEnv()...), "VIRTUAL_ENV="+filepath.Dir(venvBin),
		"PATH="+venvBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if asExit(err, &exit) {
			if status, ok := exit.Sys().(syscall.WaitStatus); ok {
				return server.Send(&pulumirpc.RunPluginResponse{
					Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(status.ExitStatus())},
				})
			}
		}
		return fmt.Errorf("plugin %s: %w", req.GetName(), err)
	}
	return closer.Close()
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

func main() {
	h := &host{}
	for _, a := range os.Args[1:] {
		if a == "-version" || a == "--version" {
			fmt.Println(version)
			return
		}
		if len(a) > 0 && a[0] != '-' {
			h.engine = a // older engines pass their address as the first argument
		}
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
