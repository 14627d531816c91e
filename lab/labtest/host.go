package labtest

import (
	"context"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/nsexec"
)

// AssertNoNFTables checks that the namespace at ns holds no nftables
// table (nft list ruleset prints nothing) after a datapath's Close.
func AssertNoNFTables(t *testing.T, ns string) {
	t.Helper()
	rs, err := nsexec.Run(context.Background(), ns, nil, "nft", "list", "ruleset")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(rs)) != "" {
		t.Errorf("nftables ruleset not empty after Close:\n%s", rs)
	}
}
