// Package version reports what binary is running, for `cnibench version` and
// for the provenance recorded in every results document.
package version

import (
	"runtime"
	"runtime/debug"
)

// Set at build time with -ldflags "-X github.com/cnibench/cnibench/internal/version.Version=..."
// (the Makefile does); otherwise read from the Go build info.
var (
	Version = ""
	Commit  = ""
)

// Info is the version triple.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// Get returns the version of the running binary.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && i.Commit == "" {
				i.Commit = s.Value
			}
		}
	}
	if i.Version == "" {
		i.Version = "dev"
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	return i
}
