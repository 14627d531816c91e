package fortioload

import (
	"runtime/debug"
	"sync"
)

// fortioModule is the module whose client measures.
const fortioModule = "fortio.org/fortio"

// engineName names what measured a row: "fortio v1.63.0", the version
// linked into this binary; "fortio" where the binary does not record its
// modules (test binaries).
var engineName = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == fortioModule {
				if m.Replace != nil {
					m = m.Replace
				}
				return "fortio " + m.Version
			}
		}
	}
	return "fortio"
})
