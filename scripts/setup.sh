#!/usr/bin/env bash
# Installs what cnibench needs on Debian/Ubuntu and makes a Go toolchain of the
# version go.mod asks for available. Sourced by quickstart.sh and test.sh;
# safe to run again. Needs root (apt-get) and the Debian and Go module mirrors.
set -euo pipefail

# Debian packages:
#   iproute2  - `ip`, for inspecting the lab by hand and in tests
#   iptables, nftables - the kube-proxy-style Service datapaths; tests also
#               snapshot the root namespace's rulesets to prove we never touch them
#   iperf3, qperf, sockperf - the C tools bench/ compares our engines with
#   conntrack - reading conntrack usage in lab namespaces
#   golang-go - only a bootstrap: it fetches the Go release go.mod names
#   wrk, nginx-light, dnsperf, jq, bc - bench/ (HTTP and DNS engines vs wrk,
#               nginx and dnsperf; parsing)
#   dnsmasq-base - the DNS server the DNS tests run in a lab pod
#   chromium - the test that opens report.html headless and checks the charts
#   linux-perf - `run --flame-graph`: samples kernel and user CPU stacks
#   haproxy   - the L7 policy proxy of the l7-node and l7-sidecar scenarios
#   ipset     - the iptables policy enforcer's peer sets (policy scenarios)
#   containerd, runc - the test that runs the agent image under containerd
#   iputils-ping, git, ca-certificates, make, procps - build and test plumbing
apt_packages=(iproute2 iptables nftables iperf3 qperf sockperf conntrack wrk nginx-light dnsperf jq bc
  dnsmasq-base chromium linux-perf haproxy ipset containerd runc iputils-ping git ca-certificates make procps)

need_apt=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
want_go=$(awk '/^go /{print $2; exit}' "$(dirname "${BASH_SOURCE[0]}")/../go.mod")

go_ok() {
  command -v go >/dev/null 2>&1 || return 1
  local have; have=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
  [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$want_go" "$have" | sort -V | head -1)" = "$want_go" ]
}

[ -x /usr/local/go/bin/go ] && export PATH=/usr/local/go/bin:$PATH
[ -d "$HOME/go/bin" ] && export PATH=$PATH:$HOME/go/bin
if ! go_ok && ! command -v go >/dev/null 2>&1; then need_apt+=(golang-go); fi

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Install services (nginx, containerd) without starting them: bench/ and
  # the tests start their own private instances.
  policy=/usr/sbin/policy-rc.d made_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
  fi
  rc=0
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null || rc=$?
  [ -n "$made_policy" ] && rm -f "$policy"
  [ "$rc" -eq 0 ] || { echo "setup: apt-get install failed (exit $rc)" >&2; exit "$rc"; }
fi

if ! go_ok; then
  # Debian's Go is older than go.mod wants. Every Go release is also published
  # as a module (golang.org/toolchain) on the Go module proxy, so fetch that
  # with the old go and use it. Go >= 1.21 would do this by itself.
  mod="golang.org/toolchain@v0.0.1-go${want_go}.linux-$(dpkg --print-architecture)"
  echo "setup: fetching Go ${want_go} from the module proxy ($mod)" >&2
  dir=$(cd /tmp && GOFLAGS=-modcacherw GO111MODULE=on go mod download -json "$mod" | awk -F'"' '/"Dir"/{print $4}')
  [ -x "$dir/bin/go" ] || { echo "setup: could not fetch Go ${want_go}" >&2; exit 1; }
  chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/* 2>/dev/null || true
  export PATH="$dir/bin:$PATH"
  go_ok || { echo "setup: Go ${want_go} still not usable" >&2; exit 1; }
fi
echo "setup: $(go version)" >&2
