package results

import (
	"bufio"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/version"
)

// CurrentTool describes the running binary.
func CurrentTool() Tool {
	v := version.Get()
	return Tool{Name: "cnibench", Version: v.Version, Commit: v.Commit, GoVersion: v.GoVersion}
}

// CollectEnvironment reads the machine's kernel, CPU and memory.
func CollectEnvironment() Environment {
	e := Environment{CPUCount: runtime.NumCPU()}
	e.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	e.CPUModel = firstField("/proc/cpuinfo", "model name")
	if pretty := firstField("/etc/os-release", "PRETTY_NAME"); pretty != "" {
		e.OS = strings.Trim(pretty, `"`)
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		e.MemoryBytes = uint64(si.Totalram) * uint64(si.Unit)
	}
	return e
}

// firstField returns the value of the first "key: value" or "key=value" line.
func firstField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, key) {
			continue
		}
		rest := strings.TrimSpace(line[len(key):])
		if strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "=") {
			return strings.TrimSpace(rest[1:])
		}
	}
	return ""
}
