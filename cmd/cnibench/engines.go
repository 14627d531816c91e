package main

// The engine kinds linked into cnibench: each package registers its kinds
// (package kinds) at init. A new engine kind adds its import here.
import (
	_ "github.com/cnibench/cnibench/engine"
	_ "github.com/cnibench/cnibench/engine/dnsload"
	_ "github.com/cnibench/cnibench/engine/fortioload"
	_ "github.com/cnibench/cnibench/engine/httpload"
)
