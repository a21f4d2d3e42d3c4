package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/webhook"
)

// The receiver prints every delivery, accepts one signed with the secret and refuses
// one that is not, so that the service tries it again.
func TestReceiverPrintsDeliveriesAndChecksTheirSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var out strings.Builder
	h := handler([]byte("whsec_test"), &out, func() time.Time { return now })
	body := `{"id":"whd_1","type":"session.completed"}`
	for sig, want := range map[string]int{
		webhook.Sign([]byte("whsec_test"), now, []byte(body)):  http.StatusNoContent,
		webhook.Sign([]byte("whsec_other"), now, []byte(body)): http.StatusUnauthorized,
		"": http.StatusUnauthorized,
	} {
		req := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, sig)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("signature %q: %d, want %d", sig, rec.Code, want)
		}
	}
	if got := out.String(); strings.Count(got, body) != 3 || strings.Count(got, "signature verified") != 1 ||
		strings.Count(got, "signature DOES NOT VERIFY") != 2 {
		t.Errorf("printed:\n%s", got)
	}

	out.Reset()
	rec := httptest.NewRecorder()
	handler(nil, &out, time.Now).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body)))
	if rec.Code != http.StatusNoContent || !strings.Contains(out.String(), "signature not checked") {
		t.Errorf("without a secret: %d %q", rec.Code, out.String())
	}
	rec = httptest.NewRecorder()
	handler(nil, &out, time.Now).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/hooks", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
}
