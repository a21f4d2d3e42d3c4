package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/session"
)

// queryParams returns the query's parameters, refusing any not in allowed and any
// given twice.
func queryParams(r *http.Request, allowed ...string) (map[string]string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, problem.New(problem.InvalidParameter, "The query string is malformed.")
	}
	out := make(map[string]string, len(q))
	for k, v := range q {
		if !slices.Contains(allowed, k) || len(v) > 1 {
			return nil, problem.Param(problem.UnknownParameter, k, "This route takes only "+strings.Join(allowed, ", ")+", each once.")
		}
		out[k] = v[0]
	}
	return out, nil
}

func intParam(q map[string]string, name string, def, lo, hi int64) (int64, error) {
	v, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, problem.Param(problem.InvalidParameter, name, name+" must be an integer from "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10)+".")
	}
	return n, nil
}

// uuidParam is the path parameter name, lower-cased, when it is a UUID; otherwise
// notFound, since no object has that id.
func uuidParam(r *http.Request, name string, notFound error) (string, error) {
	id := chi.URLParam(r, name)
	if !uuidPattern.MatchString(id) {
		return "", notFound
	}
	return strings.ToLower(id), nil
}

// limitQuery reads the paging of a list that takes a limit alone (default 50, at
// most 200), and no other parameter.
func limitQuery(r *http.Request) (int, error) {
	q, err := queryParams(r, "limit")
	if err != nil {
		return 0, err
	}
	n, err := intParam(q, "limit", defaultPageSize, 1, maxPageSize)
	return int(n), err
}

// pageQuery reads the paging of a list newest first: limit (default 50, at most
// 200) and the opaque cursor a previous page gave; no other parameter.
func pageQuery(r *http.Request) (limit int, after *session.Cursor, err error) {
	q, err := queryParams(r, "limit", "cursor")
	if err != nil {
		return 0, nil, err
	}
	n, err := intParam(q, "limit", defaultPageSize, 1, maxPageSize)
	if err != nil {
		return 0, nil, err
	}
	if v, ok := q["cursor"]; ok {
		if after, err = decodeCursor(v); err != nil {
			return 0, nil, err
		}
	}
	return int(n), after, nil
}

type cursorJSON struct {
	T  int64  `json:"t"`
	ID string `json:"i"`
}

func encodeCursor(c *session.Cursor) *string {
	if c == nil {
		return nil
	}
	b, _ := json.Marshal(cursorJSON{T: c.CreatedAt.UnixMicro(), ID: c.ID})
	s := base64.RawURLEncoding.EncodeToString(b)
	return &s
}

func decodeCursor(v string) (*session.Cursor, error) {
	bad := problem.Param(problem.InvalidParameter, "cursor", "cursor must be a nextCursor this route gave.")
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return nil, bad
	}
	var c cursorJSON
	if json.Unmarshal(b, &c) != nil || !uuidPattern.MatchString(c.ID) {
		return nil, bad
	}
	return &session.Cursor{CreatedAt: time.UnixMicro(c.T), ID: c.ID}, nil
}
