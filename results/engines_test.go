package results

// The engine kinds, linked as cmd/cnibench/engines.go links them: results
// itself imports only their types (engineapi, httpapi, dnsapi), so its
// tests register the kinds here to read samples as cnibench does.
import (
	_ "github.com/cnibench/cnibench/engine"
	_ "github.com/cnibench/cnibench/engine/dnsload"
	_ "github.com/cnibench/cnibench/engine/httpload"
)
