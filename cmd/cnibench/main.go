// Command cnibench is the Kubernetes network benchmark: CLI and agent in one
// binary. See README.md.
package main

import (
	"os"

	"github.com/cnibench/cnibench/cmd/cnibench/internal/cli"
)

func main() { os.Exit(cli.Execute()) }
