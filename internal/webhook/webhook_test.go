package webhook

import (
	"context"
	"net/netip"
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

// guard refuses the host:ports it holds, on the address it maps them to.
type guard map[string]string

func (g guard) Refuses(_ context.Context, hostport string) (netip.Addr, bool) {
	a, ok := g[hostport]
	if !ok {
		return netip.Addr{}, false
	}
	return netip.MustParseAddr(a), true
}

// A URL whose host every delivery will be refused on is warned about at registration,
// its port the scheme's when it names none; any other is not.
func TestWarningsTellOfAHostDeliveriesWillBeRefusedOn(t *testing.T) {
	g := guard{"localhost:4022": "127.0.0.1", "intranet.example:443": "10.0.0.7"}
	for url, want := range map[string]string{
		"http://localhost:4022/hooks":    "Every delivery to localhost:4022 will fail: it is reached on 127.0.0.1",
		"https://intranet.example/hooks": "Every delivery to intranet.example will fail: it is reached on 10.0.0.7",
		"http://intranet.example/hooks":  "",
		"http://localhost:4023/hooks":    "",
		"https://hooks.example/in":       "",
	} {
		got := Warnings(context.Background(), g, url)
		if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], want) || !strings.Contains(got[0], "WEBHOOK_ALLOW_HOSTS")) {
			t.Errorf("%s: %q", url, got)
		}
		if got == nil {
			t.Errorf("%s: nil, not an empty list", url)
		}
	}
	if got := Warnings(context.Background(), nil, "http://localhost:4022/"); got == nil || len(got) != 0 {
		t.Errorf("without a guard: %q", got)
	}
}
