package report

import "testing"

func TestSamplesCellFlags(t *testing.T) {
	for _, c := range []struct {
		sc   SampleCount
		want string
	}{
		{SampleCount{OK: 3}, "3"},
		{SampleCount{OK: 2, Failed: 1}, "2 (1 failed)"},
		{SampleCount{OK: 3, PortExhausted: 2}, "3 (2 out of ports)"},
		{SampleCount{OK: 2, Failed: 1, PortExhausted: 1, Stalled: 2}, "2 (1 failed, 1 out of ports, 2 stalled)"},
	} {
		if got := samplesCell(&c.sc); got != c.want {
			t.Errorf("samplesCell(%+v) = %q, want %q", c.sc, got, c.want)
		}
	}
}
