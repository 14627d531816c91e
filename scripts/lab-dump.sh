#!/usr/bin/env bash
# Print what every lab namespace holds, in a stable order and form, so two
# builds' labs can be compared byte for byte (diff two dumps):
#
#   sudo scripts/lab-dump.sh [PREFIX]     PREFIX of the namespaces (default cnb-)
#   sudo scripts/lab-dump.sh --during STATE_DIR 'cnibench --state-dir STATE_DIR run --profile security …'
#        starts the run, dumps the labs kept in STATE_DIR once its first
#        sample is done (every scenario's lab is up with its parts programmed
#        then), stops the run (SIGINT: it cleans up) and prints the dump
#
# Per namespace: links (kind, MTU, flags, peers by name; MACs and interface
# indexes, which the kernel draws, left out), addresses, routes of every
# table (IPv6 link-local ones left out: the kernel makes them, and they
# come and go with duplicate address detection), policy rules, net.* sysctls (minus counters and random keys),
# nftables and iptables rules (minus counters), tc filters and attached BPF
# programs by name (their ids are drawn), tc and tcx/XDP links as bpftool
# lists them. Read only: it changes nothing.
set -euo pipefail

dump_ns() { # NS
	local ns=$1 x=(ip netns exec "$1")
	echo "=== $ns"
	echo "--- links"
	"${x[@]}" ip -d -o link show | sed -E \
		-e 's/^[0-9]+: //' -e 's/link\/ether [0-9a-f:]+ brd [0-9a-f:]+/link\/ether/' \
		-e 's/ (altname|link-netnsid|numtxqueues|numrxqueues|gso_max_size|gso_max_segs|tso_max_size|tso_max_segs|gro_max_size|gso_ipv4_max_size|gro_ipv4_max_size|parentbus|parentdev) [^ ]+//g' \
		-e 's/@if[0-9]+/@peer/' -e 's/ prog\/(xdp|tc) id [0-9]+/ prog\/\1/g' -e 's/ tag [0-9a-f]+//g' \
		-e 's/ +\\ +/ /g' -e 's/ (bridge_id|designated_root|designated_bridge) [0-9a-f.:]+//g' -e 's/ [a-z_]+_timer +[0-9.]+//g' | sort
	echo "--- addresses"
	"${x[@]}" ip -o addr show | { grep -v ' fe80::' || true; } | sed -E -e 's/^[0-9]+: //' -e 's/ valid_lft .*//' | sort
	echo "--- routes"
	"${x[@]}" ip route show table all | { grep -v 'fe80::' || true; } | sort
	"${x[@]}" ip -6 route show table all 2>/dev/null | { grep -v 'fe80::' || true; } | sort
	echo "--- rules"
	"${x[@]}" ip rule show
	echo "--- sysctls"
	{ "${x[@]}" sysctl -a 2>/dev/null || true; } | grep '^net\.' |
		grep -Ev '(_count|_max_count|fastopen_key|stable_secret|hash_secret|random|\.stats|nf_conntrack_buckets|tcp_mem|udp_mem|boot_id|rt_cache_rebuild_count|base_reachable_time)' | sort
	echo "--- nftables"
	{ "${x[@]}" nft -s list ruleset 2>/dev/null || true; } | sed -E -e 's/ # handle [0-9]+//' -e 's/id [0-9]+/id N/g'
	echo "--- iptables"
	for t in iptables-save iptables-legacy-save; do
		command -v "$t" >/dev/null || continue
		"${x[@]}" "$t" 2>/dev/null | { grep -v '^#' || true; } | sed -E 's/\[[0-9]+:[0-9]+\]/[0:0]/'
	done
	echo "--- tc"
	{ "${x[@]}" bpftool net show 2>/dev/null || true; } |
		sed -E -e 's/\([0-9]+\)//g' -e 's/ (prog_id|link_id|id) [0-9]+//g' -e 's/ tag [0-9a-f]+//g'
	local dev
	for dev in $("${x[@]}" ip -o link show | sed -E 's/^[0-9]+: ([^:@]+).*/\1/'); do
		for dir in ingress egress; do
			{ "${x[@]}" tc filter show dev "$dev" "$dir" 2>/dev/null || true; } |
				sed -E -e "s/^/$dev $dir: /" -e 's/ id [0-9]+//g' -e 's/ tag [0-9a-f]+//g'
		done
	done
}

dump_all() { # PREFIX
	local ns
	for ns in $(ip netns list | awk '{print $1}' | grep "^$1" | sort); do
		dump_ns "$ns"
	done
}

if [ "${1:-}" = --during ]; then
	[ $# -eq 3 ] || { echo "usage: $0 --during STATE_DIR COMMAND" >&2; exit 2; }
	out=$(mktemp)
	run=
	# The run is stopped however this script ends (SIGINT: it cleans up).
	trap '[ -z "$run" ] || { kill -INT "$run" 2>/dev/null && wait "$run"; }; rm -f "$out"' EXIT
	bash -c "exec $3" >"$out" 2>&1 &
	run=$!
	until grep -q '^\[1/' "$out"; do
		kill -0 "$run" 2>/dev/null || { cat "$out" >&2; echo "lab-dump: the run ended before its first sample" >&2; exit 1; }
		sleep 0.5
	done
	for lab in $(ls "$2" | sort); do
		[ -d "$2/$lab" ] && dump_all "cnb-$lab-"
	done
	exit 0
fi
dump_all "${1:-cnb-}"
