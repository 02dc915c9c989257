#!/usr/bin/env bash
# `make tools`: builds the real-engine binaries from the Go module proxy, once per machine.
# Each binary is cached outside the clone in $NEMOTRON_TOOLS_CACHE (default ~/.cache/nemotron-stack-tools)
# under <name>-<version>-<hash of its wrapper module>, so fresh clones, fresh-check and CI reuse it;
# .tools/bin in the clone links to the cached copies. Go's own module and build caches make a rebuild
# after a wrapper change incremental. Prints how long each build took.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
cache=${NEMOTRON_TOOLS_CACHE:-$HOME/.cache/nemotron-stack-tools}
bin=$root/.tools/bin
mkdir -p "$cache" "$bin"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false

# Minutes a first build took here (2 cores, empty Go caches; `make tools` prints them before it starts).
declare -A first_build_minutes=([etcd]=3 [kwok]=2 [pulumi-resource-kubernetes]=20 [pulumi]=8 [kubernetes]=10)
echo "make tools: etcd, kwok, the Kubernetes provider, the Pulumi CLI and the control plane; a first build takes" \
  "about $(( ${first_build_minutes[etcd]} + ${first_build_minutes[kwok]} + ${first_build_minutes[pulumi-resource-kubernetes]} + ${first_build_minutes[pulumi]} + ${first_build_minutes[kubernetes]} )) min on 2 cores, later runs reuse $cache"

# wait_for PID SECONDS: true once PID has exited, false after SECONDS while it still runs.
wait_for() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 2
  done
}

# build NAME MODULE VERSION LDFLAGS BINARY=PACKAGE...
build() {
  local name=$1 module=$2 version=$3 ldflags=$4; shift 4
  local dir=$root/tools/e2e/gomod/$module
  local key
  key=$(find "$dir" -type f ! -name schema-embed.json | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)
  local out=$cache/$name-$version-$key
  if [ ! -f "$out/.complete" ]; then
    local start=$SECONDS
    echo "building $name $version (${first_build_minutes[$name]:-?} min on a first build on 2 cores; cached afterwards)"
    rm -rf "$out" && mkdir -p "$out"
    for spec in "$@"; do
      (cd "$dir" && go build -ldflags "-s -w $ldflags" -o "$out/${spec%%=*}" "${spec#*=}") &
      local pid=$!
      while ! wait_for "$pid" 60; do
        echo "  $name: building ${spec%%=*}, $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s so far"
      done
      wait "$pid"
    done
    touch "$out/.complete"
    echo "built $name $version in $((SECONDS - start)) s -> $out"
  else
    echo "cached $name $version ($out)"
  fi
  for f in "$out"/*; do ln -sf "$f" "$bin/$(basename "$f")"; done
}

kube_version=v1.35.4
kube_ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $p.gitVersion=$kube_version -X $p.gitMajor=1 -X $p.gitMinor=35 -X $p.gitTreeState=clean"
done

stamp_schema() {  # the provider embeds its schema with the version stamped in, as its release build does
  local dir=$root/tools/e2e/gomod/kubernetes-provider mod
  mod=$(cd "$dir" && go list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4)
  python3 - "$mod/cmd/pulumi-resource-kubernetes/schema.json" "$dir/schema-embed.json" "$1" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["version"] = sys.argv[3]
json.dump(spec, open(sys.argv[2], "w"), separators=(",", ":"))
PY
}

kwok_stages() {  # kwok's "fast" stages (nodes Ready with leases; pods Ready, Job pods Complete), from its module
  local mod stages=$bin/kwok-stages.yaml
  mod=$(cd "$root/tools/e2e/gomod/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    echo "---"; cat "$mod/kustomize/stage/$f.yaml"
  done > "$stages.tmp" && mv "$stages.tmp" "$stages"
}

only=${1:-all}
if [ "$only" = all ] || [ "$only" = etcd ]; then
  build etcd etcd v3.6.16 "" etcd=.
fi
if [ "$only" = all ] || [ "$only" = kwok ]; then
  build kwok kwok v0.8.0 "-X sigs.k8s.io/kwok/pkg/consts.Version=v0.8.0" kwok=sigs.k8s.io/kwok/cmd/kwok
  kwok_stages
fi
if [ "$only" = all ] || [ "$only" = kubernetes-provider ]; then
  (cd "$root/tools/e2e/gomod/kubernetes-provider" && go mod download)
  stamp_schema 4.25.0
  build pulumi-resource-kubernetes kubernetes-provider 4.25.0 \
    "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=4.25.0" \
    pulumi-resource-kubernetes=.
fi
if [ "$only" = all ] || [ "$only" = pulumi ]; then
  build pulumi pulumi v3.274.1 "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v3.274.1" \
    pulumi=github.com/pulumi/pulumi/pkg/v3/cmd/pulumi pulumi-language-python=./languagehost
fi
if [ "$only" = all ] || [ "$only" = control-plane ]; then
  build kubernetes control-plane $kube_version "$kube_ldflags" \
    kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
    kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
    kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler
fi
