package policy

import (
	"strings"
	"testing"
)

func TestSiteCheck(t *testing.T) {
	for _, c := range []struct {
		site Site
		want string
	}{
		{Site{Prefix: "cnb-x-"}, "no network namespace"},
		{Site{Netns: "/proc/self/ns/net"}, "no object prefix"},
		{Site{Netns: "/proc/self/ns/net", Prefix: "cnb-x-"}, "refusing"},
		{Site{Netns: "/nonexistent/netns", Prefix: "cnb-x-"}, "/nonexistent/netns"},
	} {
		if err := c.site.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want it to say %q", c.site, err, c.want)
		}
	}
}
