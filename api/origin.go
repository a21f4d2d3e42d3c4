package api

import (
	"net/http"

	"github.com/waystation/waystation/internal/problem"
)

type submitOriginRequest struct {
	Origin string `json:"origin"`
}

func (s *submitOriginRequest) validate() error {
	return problem.Text("origin", s.Origin, true, 2048)
}

// handleSubmitOrigin lists a seller from its own manifest: the answer says, item by
// item, what was listed and what was refused and why (see origin.Service.Submit).
func (s *Server) handleSubmitOrigin() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req submitOriginRequest
		if _, err := s.readJSON(w, r, &req); err != nil {
			return err
		}
		sub, err := s.svc.Origins.Submit(r.Context(), principal(r).UserID, req.Origin)
		if err != nil {
			return err
		}
		w.Header()["Cache-Control"] = hdrNoStore
		writeJSON(w, http.StatusOK, sub)
		return nil
	})
}

// handleOrigin is a submitted origin as the directory keeps it: listed, stale or
// delisted, with the reason.
func (s *Server) handleOrigin() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		if len(q["origin"]) != 1 || len(q) != 1 {
			return problem.Param(problem.InvalidParameter, "origin", "Name one origin, as ?origin=https://api.example.com, and nothing else.")
		}
		o, err := s.svc.Origins.Origin(r.Context(), q.Get("origin"))
		if p, ok := problem.As(err); ok && p.Code == problem.ValidationFailed {
			err = problem.Param(problem.InvalidParameter, "origin", p.Detail) // a query parameter's fault
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, o)
		return nil
	})
}
