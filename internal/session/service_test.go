package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/problem"
)

func invalid(err error) bool {
	p, ok := problem.As(err)
	return ok && p.Code == problem.ValidationFailed
}

func TestNewValidate(t *testing.T) {
	ptr := func(s string) *string { return &s }
	ok := New{Type: "checkout", Description: "buy a ticket", ClientSessionID: "c1", TargetURL: ptr("https://example.com/x")}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid session refused: %v", err)
	}
	for name, n := range map[string]New{
		"type":        {Type: "Checkout", Description: "d", ClientSessionID: "c"},
		"description": {Type: "task", Description: " ", ClientSessionID: "c"},
		"merchant":    {Type: "task", Description: "d", ClientSessionID: "c", MerchantName: ptr("")},
		"target":      {Type: "task", Description: "d", ClientSessionID: "c", TargetURL: ptr("ftp://example.com")},
		"client id":   {Type: "task", Description: "d", ClientSessionID: strings.Repeat("x", 201)},
	} {
		if err := n.Validate(); !invalid(err) {
			t.Errorf("%s: got %v, want validation_failed", name, err)
		}
	}
}

func TestCompletionValidate(t *testing.T) {
	if err := (Completion{ClientCompletionID: "c", Status: StatusCompleted}).Validate(); err != nil {
		t.Fatalf("valid completion refused: %v", err)
	}
	for name, c := range map[string]Completion{
		"status":    {ClientCompletionID: "c", Status: "done"},
		"summary":   {ClientCompletionID: "c", Status: StatusFailed, Summary: strings.Repeat("x", 4001)},
		"client id": {Status: StatusCanceled},
	} {
		if err := c.Validate(); !invalid(err) {
			t.Errorf("%s: got %v, want validation_failed", name, err)
		}
	}
}

func TestRuntimeEventValidate(t *testing.T) {
	for _, data := range []string{"", "null", `{"step":1}`} {
		if err := (RuntimeEvent{Type: "runtime.step", ClientEventID: "e", Data: json.RawMessage(data)}).Validate(); err != nil {
			t.Errorf("data %q refused: %v", data, err)
		}
	}
	big := json.RawMessage(`{"x":"` + strings.Repeat("a", MaxEventData) + `"}`)
	for name, e := range map[string]RuntimeEvent{
		"type":      {Type: "user.step", ClientEventID: "e"},
		"array":     {Type: "runtime.step", ClientEventID: "e", Data: json.RawMessage(`[1]`)},
		"too large": {Type: "runtime.step", ClientEventID: "e", Data: big},
		"client id": {Type: "runtime.step"},
	} {
		if err := e.Validate(); !invalid(err) {
			t.Errorf("%s: got %v, want validation_failed", name, err)
		}
	}
}
