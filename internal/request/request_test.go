package request

import (
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/problem"
)

func TestTerminalStatusesMoveNowhere(t *testing.T) {
	for _, s := range Statuses {
		terminal := s == StatusFulfilled || s == StatusDenied || s == StatusExpired || s == StatusFailed || s == StatusCanceled
		if Terminal(s) != terminal {
			t.Errorf("%s: terminal %v", s, Terminal(s))
		}
		for _, to := range Statuses {
			if terminal && CanMove(s, to) {
				t.Errorf("%s -> %s allowed", s, to)
			}
		}
	}
	for _, m := range [][2]string{{"", StatusWaitingUser}, {StatusWaitingUser, StatusApproved}, {StatusWaitingUser, StatusExpired},
		{StatusApproved, StatusFulfilled}, {StatusApproved, StatusExecuting}, {StatusExecuting, StatusFailed}} {
		if !CanMove(m[0], m[1]) {
			t.Errorf("%s -> %s refused", m[0], m[1])
		}
	}
	for _, m := range [][2]string{{StatusWaitingUser, StatusFulfilled}, {StatusApproved, StatusDenied}, {StatusExecuting, StatusExpired}, {"", StatusFulfilled}} {
		if CanMove(m[0], m[1]) {
			t.Errorf("%s -> %s allowed", m[0], m[1])
		}
	}
}

func TestDecisionsAreCheckedAgainstTheirRequestWithoutEchoingValues(t *testing.T) {
	provide := Request{Kind: KindProvideMissing, Fields: []Field{{Key: "email"}, {Key: "card"}}}
	choice := Request{Kind: KindChoice, Options: []Option{{ID: "a"}, {ID: "b"}}}
	confirm := Request{Kind: KindConfirm}
	const secret = "s3cr3t-value"
	for name, c := range map[string]struct {
		r  Request
		d  Decision
		ok bool
	}{
		"provide all":         {provide, Decision{Decision: Approve, Values: map[string]string{"email": secret, "card": secret}}, true},
		"provide one missing": {provide, Decision{Decision: Approve, Values: map[string]string{"email": secret}}, false},
		"provide blank":       {provide, Decision{Decision: Approve, Values: map[string]string{"email": secret, "card": " "}}, false},
		"provide extra":       {provide, Decision{Decision: Approve, Values: map[string]string{"email": secret, "card": secret, secret: secret}}, false},
		"provide bad utf-8":   {provide, Decision{Decision: Approve, Values: map[string]string{"email": "\xff", "card": secret}}, false},
		"deny with values":    {provide, Decision{Decision: Deny, Values: map[string]string{"email": secret}}, false},
		"deny":                {provide, Decision{Decision: Deny}, true},
		"choice":              {choice, Decision{Decision: Approve, SelectedChoiceID: "b"}, true},
		"choice unknown":      {choice, Decision{Decision: Approve, SelectedChoiceID: secret}, false},
		"confirm":             {confirm, Decision{Decision: Approve}, true},
		"confirm with choice": {confirm, Decision{Decision: Approve, SelectedChoiceID: "a"}, false},
		"confirm with values": {confirm, Decision{Decision: Approve, Values: map[string]string{"x": secret}}, false},
		"save":                {confirm, Decision{Decision: Approve, Save: true}, false},
		"maybe":               {confirm, Decision{Decision: "maybe"}, false},
	} {
		err := c.r.Check(c.d)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && (problem.CodeOf(err) != problem.ValidationFailed || strings.Contains(err.Error(), secret)) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestScopeHashBindsWhatWasConfirmed(t *testing.T) {
	r := Request{ID: "r1", Kind: KindConfirm, Params: Params{Summary: "Buy a map", Amount: "12.50", Currency: "USDC", Recipient: "maps.example"}}
	h := r.ScopeHash()
	for _, change := range []func(*Request){
		func(r *Request) { r.ID = "r2" },
		func(r *Request) { r.Params.Amount = "12.51" },
		func(r *Request) { r.Params.Recipient = "other.example" },
		func(r *Request) { r.Params.Summary = "Buy two maps" },
	} {
		c := r
		change(&c)
		if c.ScopeHash() == h {
			t.Errorf("%+v hashes like the original", c)
		}
	}
	if r.ScopeHash() != h {
		t.Error("the hash is not stable")
	}
}
