#!/usr/bin/env bash
# Checks that the committed BPF objects (datapath/ebpf, lab/policy/ebpf and
# lab/flows: *_bpfel.{o,go}) are what the C sources produce, per package: runs
# gen.go's bpf2go lines on a temporary copy of the sources and compares
# the outputs byte for byte.
#
# Needs clang, llvm (llvm-strip, llvm-objdump) and libbpf-dev (Debian 12:
# apt-get install clang llvm libbpf-dev). bpf2go pins what would vary
# between machines: -fno-ident (no clang version string), debug prefix maps
# (no paths), DWARF stripped to BTF. What can still differ is code from
# another clang major version: then the disassembly diff is printed so a
# reviewer can see whether it is only register allocation or a real change.
# Exit: 0 same, 1 different, 2 tools missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

for tool in clang llvm-strip llvm-objdump go; do
	if ! command -v "$tool" >/dev/null; then
		echo "check-bpf: $tool not found (apt-get install clang llvm libbpf-dev)" >&2
		exit 2
	fi
done
if [ ! -f /usr/include/bpf/bpf_helpers.h ]; then
	echo "check-bpf: /usr/include/bpf/bpf_helpers.h not found (apt-get install libbpf-dev)" >&2
	exit 2
fi

tmp=$(mktemp -d /tmp/cnb-check-bpf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# bpf2go at the version go.mod pins.
go build -o "$tmp/bpf2go" github.com/cilium/ebpf/cmd/bpf2go

status=0
# check_pkg src: rebuilds src's objects in a temporary copy and compares.
check_pkg() {
	local src=$1 work
	work="$tmp/$(echo "$src" | tr / _)"
	mkdir -p "$work"
	cp -r "$src/bpf" "$src/gen.go" "$work/"

	# Run each //go:generate line of gen.go with the built bpf2go, as
	# `go generate` would (GOPACKAGE, GOFILE set; cwd = the package dir).
	grep '^//go:generate go tool bpf2go ' "$src/gen.go" |
		sed 's|^//go:generate go tool bpf2go ||' |
		while read -r args; do
			# shellcheck disable=SC2086 # word splitting of the flags is intended
			(cd "$work" && GOPACKAGE=$(basename "$src") GOFILE=gen.go "$tmp/bpf2go" $args >/dev/null)
		done

	for f in "$work"/*_bpfel.o "$work"/*_bpfel.go; do
		name=$(basename "$f")
		if [ ! -f "$src/$name" ]; then
			echo "check-bpf: $src/$name is not committed (run go generate ./$src)"
			status=1
			continue
		fi
		if cmp -s "$f" "$src/$name"; then
			echo "check-bpf: $src/$name ok"
			continue
		fi
		status=1
		echo "check-bpf: $src/$name differs from what $(clang --version | head -1) builds from the sources"
		case "$name" in
		*.o)
			diff <(llvm-objdump -d --no-show-raw-insn "$src/$name" | tail -n +3) \
				<(llvm-objdump -d --no-show-raw-insn "$f" | tail -n +3) | head -40 || true
			;;
		*)
			diff "$src/$name" "$f" | head -40 || true
			;;
		esac
	done
	for f in "$src"/*_bpfel.o; do
		[ -f "$work/$(basename "$f")" ] || { echo "check-bpf: $f has no source in gen.go"; status=1; }
	done
}

for src in datapath/ebpf lab/policy/ebpf lab/flows; do
	check_pkg "$src"
done
if [ "$status" -ne 0 ]; then
	echo "check-bpf: FAILED: run 'go generate' in the package named above and commit the result" >&2
fi
exit "$status"
