package web

import (
	"errors"
	"net/http"
	"testing"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/webhook"
)

// TestAFormShowsItsRefusalsAgainBeforeNotFound: a form's refusals are matched in
// order, by error or by code, before the policy's own not_found, so that a refusal
// coded not_found (a server that keeps no webhooks) is shown on the form's page; a
// detailed one says the problem's detail after its prefix.
func TestAFormShowsItsRefusalsAgainBeforeNotFound(t *testing.T) {
	var shown string
	var status int
	f := form{page: func(m string, st int) { shown, status = m, st }, refusals: append([]refusal{
		{err: webhook.ErrNoSealer, message: "No sealing key.", status: http.StatusServiceUnavailable}},
		detailed("Nothing was registered: ", http.StatusUnprocessableEntity, problem.ValidationFailed)...)}
	s := &Server{}
	s.answer(nil, nil, f, webhook.ErrNoSealer, func() { t.Error("done on a refusal") })
	if shown != "No sealing key." || status != http.StatusServiceUnavailable {
		t.Errorf("a refusal coded not_found: %q %d", shown, status)
	}
	s.answer(nil, nil, f, problem.Invalid("url must be https."), func() { t.Error("done on a refusal") })
	if shown != "Nothing was registered: url must be https." || status != http.StatusUnprocessableEntity {
		t.Errorf("a detailed refusal: %q %d", shown, status)
	}
	done := false
	s.answer(nil, nil, f, nil, func() { done = true })
	if !done {
		t.Error("success did not go on")
	}
	if _, ok := (refusal{err: webhook.ErrNoSealer}).match(errors.New("other")); ok {
		t.Error("a refusal matched another error")
	}
}
