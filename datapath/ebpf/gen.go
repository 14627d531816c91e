package ebpf

// The BPF objects are built by bpf2go and committed (sock_bpfel.*,
// tc_bpfel.*), so building cnibench needs no clang. To rebuild them
// (Debian: apt-get install clang llvm libbpf-dev), run `go generate
// ./datapath/ebpf`; scripts/check-bpf.sh checks the committed objects are
// what the sources produce. Flags are pinned (-O2, no clang version string,
// debug info stripped to BTF) so the output depends only on the sources and
// the clang version.

//go:generate go tool bpf2go -target bpfel -no-global-types -cc clang -strip llvm-strip sock bpf/sock.c -- -O2 -Wall -Werror -I/usr/include
//go:generate go tool bpf2go -target bpfel -no-global-types -cc clang -strip llvm-strip tc bpf/tc.c -- -O2 -Wall -Werror -I/usr/include
//go:generate sh -c "cd bpf && sha256sum *.c *.h > ../bpf_sources.sha256"

// bpf_sources.sha256 records the sources the committed objects were built
// from; TestObjectsFresh fails when a source changed without `go generate`,
// so CI (which has no clang) still catches stale objects.
