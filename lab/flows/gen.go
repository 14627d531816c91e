package flows

// The BPF object is built by bpf2go and committed (flows_bpfel.*), so
// building cnibench needs no clang; the flags are those of
// datapath/ebpf/gen.go (see there). To rebuild: `go generate ./flows`;
// scripts/check-bpf.sh rebuilds and compares byte for byte, and
// TestObjectsFresh checks the sources against bpf_sources.sha256.

//go:generate go tool bpf2go -target bpfel -no-global-types -cc clang -strip llvm-strip flows bpf/flows.c -- -O2 -Wall -Werror -I/usr/include
//go:generate sh -c "cd bpf && sha256sum *.c *.h > ../bpf_sources.sha256"
