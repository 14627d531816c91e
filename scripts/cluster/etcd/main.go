// Command etcd is upstream etcd's server, built from the Go module proxy for
// scripts/test-cluster.sh (Debian 12 ships etcd 3.4, older than Kubernetes
// 1.34 supports).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
