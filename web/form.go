package web

import (
	"errors"
	"net/http"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
)

// form is how a console form answers what its use case returned. The policy is one
// for every form (see answer): success goes on, a refusal the person can act on
// shows the form's page again with it on top, something that is not the person's
// is the not-found page, and anything else the failure page. A form tells only its
// page and its refusals.
type form struct {
	// page draws the form's page again with message on top, at status.
	page func(message string, status int)
	// refusals are what the page shows again; the first that matches is shown.
	refusals []refusal
}

// refusal is a refusal of a use case that its form shows again: the error err, or
// any problem of code, shown at status with message, followed by the problem's own
// detail when detail is set.
type refusal struct {
	err     error
	code    string
	message string
	detail  bool
	status  int
}

// detailed is a refusal of any problem of the codes, shown as prefix and the
// problem's detail at status.
func detailed(prefix string, status int, codes ...string) []refusal {
	out := make([]refusal, len(codes))
	for i, c := range codes {
		out[i] = refusal{code: c, message: prefix, detail: true, status: status}
	}
	return out
}

// match is how r shows err; false when it is not err's refusal.
func (r refusal) match(err error) (string, bool) {
	if r.err != nil && !errors.Is(err, r.err) || r.code != "" && problem.CodeOf(err) != r.code {
		return "", false
	}
	if p, ok := problem.As(err); ok && r.detail {
		return r.message + p.Detail, true
	}
	return r.message, true
}

// answer answers err, what the form's use case returned: done when it is nil (a
// redirect to see what changed, or the page showing what was made), the form's page
// again for one of its refusals, the not-found page for not_found, else the failure
// page.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, f form, err error, done func()) {
	if err == nil {
		done()
		return
	}
	for _, rf := range f.refusals {
		if message, ok := rf.match(err); ok {
			f.page(message, rf.status)
			return
		}
	}
	s.found(w, r, err)
}

// consolePage is the GET handler of a console page: page drawn for the signed-in
// person, with no message, or the sign-in form for a browser without a sign-in.
func (s *Server) consolePage(page func(w http.ResponseWriter, r *http.Request, ws auth.WebSession, message string, status int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, ok := s.signedIn(w, r, "", http.StatusOK)
		if !ok {
			return
		}
		page(w, r, ws, "", http.StatusOK)
	}
}

// found answers err of reading what a page or form is about: not_found is the
// not-found page, any other error the failure page; true when there is none, and
// the page goes on.
func (s *Server) found(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return true
	case problem.CodeOf(err) == problem.NotFound:
		s.appNotFound(w, r)
	default:
		s.fail(w, r, err)
	}
	return false
}

// seeOther is the done of a form whose success the person sees at path.
func seeOther(w http.ResponseWriter, r *http.Request, path string) func() {
	return func() { http.Redirect(w, r, path, http.StatusSeeOther) }
}
