package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/session"
)

// Memory items: a user's saved values, item by item. Lists and reads are value-free;
// values go in sealed and come out only through a session's materialize.

type newItemRequest struct{ memory.New }

func (n *newItemRequest) validate() error { return n.New.Validate() } // the service checks again; this fails before the Idempotency-Key is held

type patchItemRequest struct{ memory.Patch }

func (*patchItemRequest) validate() error { return nil } // memory.Apply checks it against the item

type itemPage struct {
	Items      []memory.Item `json:"items"`
	NextCursor *string       `json:"nextCursor"`
}

// etag is an item's revision as a strong ETag.
func etag(revision int) string { return `"r` + strconv.Itoa(revision) + `"` }

// ifMatch reads If-Match as an item revision; 0 when absent. A value that is no
// revision of ours matches nothing: 412.
func ifMatch(r *http.Request) (int, bool, error) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" {
		return 0, false, nil
	}
	v = strings.TrimPrefix(v, "W/")
	if rev, ok := strings.CutPrefix(strings.Trim(v, `"`), "r"); ok {
		if n, err := strconv.Atoi(rev); err == nil && n > 0 {
			return n, true, nil
		}
	}
	return 0, true, memory.ErrStale
}

func itemID(r *http.Request) (string, error) { return uuidParam(r, "id", memory.ErrNotFound) }

// itemRevision is the item the path names and the revision If-Match names, 0 when
// it is absent; when required, an absent If-Match is precondition_required.
func itemRevision(r *http.Request, required bool) (id string, rev int, err error) {
	if id, err = itemID(r); err != nil {
		return "", 0, err
	}
	rev, given, err := ifMatch(r)
	if err == nil && required && !given {
		err = problem.New(problem.PreconditionRequired, "Send the item's ETag in If-Match.")
	}
	return id, rev, err
}

// writeItem answers it, value-free, with its revision as the ETag: a handler's last
// word, so it returns nil.
func writeItem(w http.ResponseWriter, status int, it memory.Stored) error {
	w.Header().Set("ETag", etag(it.Revision))
	writeJSON(w, status, it.View())
	return nil
}

// handleMemoryItems lists the user's items (an agent's: its user's), value-free:
// with url, those for that site and those for every site; with allSites=true, only
// those for every site.
func (s *Server) handleMemoryItems() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		q, err := queryParams(r, "url", "allSites", "limit", "cursor")
		if err != nil {
			return err
		}
		limit, err := intParam(q, "limit", defaultPageSize, 1, maxPageSize)
		if err != nil {
			return err
		}
		var scope memory.Scope
		if v, ok := q["url"]; ok {
			if scope.Host, err = memory.HostOf(v); err != nil {
				return problem.Param(problem.InvalidParameter, "url", "url must be an http or https URL, or a hostname.")
			}
		}
		switch q["allSites"] {
		case "", "false":
		case "true":
			if scope.Host != "" {
				return problem.Param(problem.InvalidParameter, "allSites", "allSites=true and url do not go together.")
			}
			scope.AllSites = true
		default:
			return problem.Param(problem.InvalidParameter, "allSites", "allSites must be true or false.")
		}
		var after *session.Cursor
		if v, ok := q["cursor"]; ok {
			if after, err = decodeCursor(v); err != nil {
				return err
			}
		}
		items, next, err := s.svc.Memory.Items(r.Context(), principal(r).UserID, scope, after, int(limit))
		if err != nil {
			return err
		}
		out := itemPage{Items: make([]memory.Item, len(items)), NextCursor: encodeCursor(next)}
		for i, it := range items {
			out.Items[i] = it.View()
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

// handleMemoryItem reads one item, value-free, with its revision as the ETag.
func (s *Server) handleMemoryItem() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := itemID(r)
		if err != nil {
			return err
		}
		it, err := s.svc.Memory.Item(r.Context(), principal(r).UserID, id)
		if err != nil {
			return err
		}
		return writeItem(w, http.StatusOK, it)
	})
}

// handleCreateMemoryItem stores a new item for the user (an agent writes for its
// user), its values sealed.
func (s *Server) handleCreateMemoryItem() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req newItemRequest
		if _, err := s.readValues(w, r, &req); err != nil {
			return err
		}
		it, err := s.svc.Memory.Create(r.Context(), principal(r), req.New)
		if err != nil {
			return err
		}
		w.Header().Set("Location", BasePath+"/memory/items/"+it.ID)
		return writeItem(w, http.StatusCreated, it)
	})
}

// handleUpdateMemoryItem changes an item made against the revision If-Match names.
func (s *Server) handleUpdateMemoryItem() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, rev, err := itemRevision(r, true)
		if err != nil {
			return err
		}
		var req patchItemRequest
		if _, err := s.readValues(w, r, &req); err != nil {
			return err
		}
		it, err := s.svc.Memory.Update(r.Context(), principal(r).UserID, id, rev, req.Patch)
		if err != nil {
			return err
		}
		return writeItem(w, http.StatusOK, it)
	})
}

// handleArchiveMemoryItem archives an item and forgets its values; If-Match, when
// sent, must name its revision.
func (s *Server) handleArchiveMemoryItem() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, rev, err := itemRevision(r, false)
		if err != nil {
			return err
		}
		if err := s.svc.Memory.Archive(r.Context(), principal(r).UserID, id, rev); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

type catalogBody struct {
	Handles     []memory.Entry       `json:"handles"`
	Unavailable []memory.Unavailable `json:"unavailable"`
}

// handleMemoryCatalog gives the session's agent handles for its user's saved values
// (those for the site url names, and those for every site; all without url): value-
// free, good in this session only. Card data is listed as unavailable.
func (s *Server) handleMemoryCatalog() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := sessionID(r)
		if err != nil {
			return err
		}
		q, err := queryParams(r, "url")
		if err != nil {
			return err
		}
		var scope memory.Scope
		if v, ok := q["url"]; ok {
			if scope.Host, err = memory.HostOf(v); err != nil {
				return problem.Param(problem.InvalidParameter, "url", "url must be an http or https URL, or a hostname.")
			}
		}
		entries, unavailable, err := s.svc.Memory.Catalog(r.Context(), principal(r), id, scope)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, catalogBody{Handles: entries, Unavailable: unavailable})
		return nil
	})
}

type materializeRequest struct {
	Handles []string `json:"handles"`
	Purpose string   `json:"purpose"`
}

func (m *materializeRequest) validate() error { return memory.CheckMaterialize(m.Handles, m.Purpose) }

type materializeBody struct {
	Values []memory.Value `json:"values"`
}

// handleMaterialize is the one route that answers raw values: to the agent that
// owns an open session, for handles of that session each covered by a fulfilled
// approval in it. Never cached, never replayed, and its errors carry no detail.
func (s *Server) handleMaterialize() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		values, err := s.materialize(w, r)
		if code := problem.CodeOf(err); code != "" {
			return problem.New(code, "") // no detail: nothing about values or handles
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, materializeBody{Values: values})
		return nil
	})
}

// materialize reads a materialize request and answers its values.
func (s *Server) materialize(w http.ResponseWriter, r *http.Request) ([]memory.Value, error) {
	id, err := sessionID(r)
	if err != nil {
		return nil, err
	}
	var req materializeRequest
	if _, err := s.readJSON(w, r, &req); err != nil {
		return nil, err
	}
	return s.svc.Memory.Materialize(r.Context(), principal(r), id, req.Handles, req.Purpose)
}
