package api

import (
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/problem"
)

// TestSellerURLsAreAbsoluteHTTPAndBounded holds the three inputs that name a seller's
// address (a quote's url, a merchant check's url, a resolve's targetUrl) to one rule:
// an absolute http or https URL of at most 2048 bytes, or validation_failed naming
// the input.
func TestSellerURLsAreAbsoluteHTTPAndBounded(t *testing.T) {
	t.Parallel()
	inputs := []struct {
		name string
		req  func(string) validator
	}{
		{"url", func(u string) validator { return &quoteRequest{URL: u} }},
		{"url", func(u string) validator { return &merchantCheckRequest{URL: u} }},
		{"targetUrl", func(u string) validator { return &resolveRequest{TargetURL: u} }},
	}
	long := "https://seller.example/" + strings.Repeat("a", 2048-len("https://seller.example/"))
	for _, in := range inputs {
		name, req := in.name, in.req
		for _, ok := range []string{"https://seller.example/pay", "http://127.0.0.1:4021/x?q=1", long} {
			if err := req(ok).validate(); err != nil {
				t.Errorf("%s %q refused: %v", name, ok, err)
			}
		}
		for _, bad := range []string{"seller.example/pay", "/pay", "ftp://seller.example/", "https://", "http://%zz", long + "a"} {
			err := req(bad).validate()
			p, _ := problem.As(err)
			if p == nil || p.Code != problem.ValidationFailed || !strings.HasPrefix(p.Detail, name+" must be an absolute http or https URL") {
				t.Errorf("%s %q: %v, want validation_failed naming %s", name, bad, err, name)
			}
		}
	}
}
