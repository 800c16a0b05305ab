package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
)

// TestMetricsRoute: /metrics is GET only, 404 when metrics are off, and
// the metrics token opens /metrics and nothing else. (Principals with and
// without admin: internal/cli TestServeObservability.)
func TestMetricsRoute(t *testing.T) {
	const mtok = "metrics-token-0123456789abcdef"
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("metric_a 1\n")) })
	f := start(t, func(o *Options) { o.Metrics, o.MetricsToken = served, mtok })
	bearerOf := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	if r := f.req(t, "GET", "/metrics", nil, bearerOf(mtok)); r.status != 200 || string(r.body) != "metric_a 1\n" {
		t.Errorf("metrics token: %d %s", r.status, r.body)
	}
	if r := f.req(t, "GET", "/metrics", nil, authHdr()); r.status != 200 {
		t.Errorf("owner: %d %s", r.status, r.body)
	}
	f.req(t, "GET", "/metrics", nil, nil).wantErr(t, 401, errs.CodeUnauthorized)
	f.req(t, "GET", "/metrics", nil, bearerOf(mtok+"x")).wantErr(t, 401, errs.CodeUnauthorized)
	f.req(t, "POST", "/metrics", strings.NewReader("x"), bearerOf(mtok)).wantErr(t, 405, errs.CodeMethodNotAllowed)
	f.req(t, "GET", "/v1/ops", nil, bearerOf(mtok)).wantErr(t, 401, errs.CodeUnauthorized)
	// The Host check holds for /metrics too.
	f.req(t, "GET", "/metrics", nil, with(bearerOf(mtok), "Host", "evil.example")).wantErr(t, 403, errs.CodeForbidden)

	off := start(t, nil)
	off.req(t, "GET", "/metrics", nil, authHdr()).wantErr(t, 404, errs.CodeRouteNotFound)

	if _, err := New(Options{Addr: "127.0.0.1:0", Token: testToken, Metrics: served, MetricsToken: "short"}); errs.Code(err) != errs.CodeInvalidInput {
		t.Errorf("a short metrics token: %v", err)
	}
}
