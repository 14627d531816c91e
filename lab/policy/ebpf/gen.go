package ebpf

// The BPF object is built by bpf2go and committed (policy_bpfel.*), as in
// datapath/ebpf, so building cnibench needs no clang. To rebuild it
// (Debian: apt-get install clang llvm libbpf-dev), run `go generate
// ./policy/ebpf`; scripts/check-bpf.sh checks the committed object is what
// the source produces, and TestObjectsFresh that bpf_sources.sha256 still
// matches the source.

//go:generate go tool bpf2go -target bpfel -no-global-types -cc clang -strip llvm-strip policy bpf/policy.c -- -O2 -Wall -Werror -I/usr/include
//go:generate sh -c "cd bpf && sha256sum *.c > ../bpf_sources.sha256"
