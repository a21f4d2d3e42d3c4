package webhook

import (
	"strings"
	"testing"
	"time"
)

func TestSignaturesVerifyOnlyForTheSecretTheBodyAndATimelyStamp(t *testing.T) {
	secret, body, now := []byte("whsec_test"), []byte(`{"id":"whd_1"}`), time.Unix(1_800_000_000, 0)
	sig := Sign(secret, now, body)
	if !strings.HasPrefix(sig, "t=1800000000,v1=") || len(sig) != len("t=1800000000,v1=")+64 {
		t.Fatalf("signature %q", sig)
	}
	if !Verify(secret, sig, body, now.Add(time.Minute), 5*time.Minute) {
		t.Error("a good signature does not verify")
	}
	for name, ok := range map[string]bool{
		"another secret": Verify([]byte("whsec_other"), sig, body, now, 5*time.Minute),
		"another body":   Verify(secret, sig, []byte(`{"id":"whd_2"}`), now, 5*time.Minute),
		"too old":        Verify(secret, sig, body, now.Add(6*time.Minute), 5*time.Minute),
		"no stamp":       Verify(secret, strings.TrimPrefix(sig, "t=1800000000,"), body, now, 5*time.Minute),
		"junk":           Verify(secret, "t=x,v1=zz", body, now, 5*time.Minute),
	} {
		if ok {
			t.Errorf("%s verifies", name)
		}
	}
}

func TestSessionEventsBecomeWebhookEvents(t *testing.T) {
	for _, c := range []struct {
		typ, data, want string
	}{
		{"request.status_changed", `{"to":"waiting_user"}`, RequestWaiting},
		{"request.status_changed", `{"to":"expired"}`, RequestExpired},
		{"request.status_changed", `{"to":"denied"}`, ""},
		{"payment.settled", `{}`, PaymentSettled},
		{"session.completed", `{}`, SessionCompleted},
		{"runtime.step", `{}`, ""},
		{"llm.redacted", `{}`, ""},
	} {
		got, ok := FromSessionEvent(c.typ, []byte(c.data))
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s %s: %q %v", c.typ, c.data, got, ok)
		}
	}
	if Backoff(1) != 10*time.Second || Backoff(7) != 6*time.Hour || Backoff(99) != 6*time.Hour {
		t.Error("backoff")
	}
	n := New{URL: "https://ops.example/hook", Events: []string{PaymentSettled, RequestWaiting, PaymentSettled}}
	if err := n.Validate(); err != nil || len(n.Events) != 2 {
		t.Errorf("%+v %v", n, err)
	}
}
