package embedding

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/telemetry"
)

// The embedding provider is a model upstream: a query's embedding never carries the
// trace id its caller sent (an agent chooses it, and a card's digits fit in it),
// only a trace of its own under the service's span.
func TestTheProviderNeverGetsTheCallersTrace(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Traceparent")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":[{"index":0,"embedding":[1,0]}]}`))
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(ClientConfig{URL: srv.URL + "/v1", Model: "m", Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	const caller = "00000000000000004111111111111111"
	ctx := telemetry.With(context.Background(), &telemetry.Request{TraceID: caller, ParentID: "4111111111111111", SpanID: "00f067aa0ba902b7", Sampled: true})
	c.Embed(ctx, []string{"weather"})
	if got == "" || strings.Contains(got, caller) || !strings.HasSuffix(got, "-00f067aa0ba902b7-01") {
		t.Errorf("the provider got traceparent %q", got)
	}
}
