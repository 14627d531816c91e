package httpload

import (
	"testing"

	"github.com/cnibench/cnibench/engine/kinds"
)

// A non-200 response is counted in Requests and in Errors.Status: the error
// share counts it once, so all-503 answers are 100% errors, not 50%.
func TestErrorShareCountsStatusOnce(t *testing.T) {
	for _, c := range []struct {
		h    Result
		want float64
	}{
		{Result{Requests: 10, Errors: Errors{Status: 10, Total: 10}}, 100},
		{Result{Requests: 6, Errors: Errors{Status: 2, Connect: 2, Total: 4}}, 50},
		{Result{Requests: 8, Errors: Errors{}}, 0},
	} {
		vs, _ := own(&c.h)
		var got float64 = -1
		for _, v := range vs {
			if v.Name == kinds.MetricErrors {
				got = v.V
			}
		}
		if got != c.want {
			t.Errorf("requests %d, errors %+v: error share %g%%, want %g%%", c.h.Requests, c.h.Errors, got, c.want)
		}
	}
}
