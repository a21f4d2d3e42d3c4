package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/resource"
)

type healthBody struct {
	Status   string         `json:"status"`
	Version  string         `json:"version"`
	Snapshot healthSnapshot `json:"snapshot"`
	Database string         `json:"database"`
	Search   string         `json:"search"`
}

type healthSnapshot struct {
	directory.Info
	AgeSeconds int64 `json:"age_seconds"`
	Methods    int   `json:"methods"`
}

// AllowanceLeft tells how many novel query embeddings are left today of the daily
// allowance every replica shares; limited is false when there is no allowance.
type AllowanceLeft func(ctx context.Context) (left int, limited bool, err error)

// WithAllowance lets /health say when search answers only exact and cached queries
// because today's allowance is spent.
func WithAllowance(left AllowanceLeft) Option {
	return func(s *Server) { s.allowance = left }
}

// handleHealth answers 200 while the process serves, and says what is degraded: the
// database, search (down, degraded to the builtin model, or its allowance spent), or
// a directory served from an old or empty snapshot.
func (s *Server) handleHealth() http.Handler {
	var mu sync.Mutex
	var checked time.Time
	var dbErr error
	var spent bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// One look at the database a second at most, however hard /health is polled.
		mu.Lock()
		if time.Since(checked) > time.Second {
			ctx, cancel := context.WithTimeout(r.Context(), time.Second)
			dbErr = s.db.Ping(ctx)
			spent = false
			if dbErr == nil && s.allowance != nil {
				left, limited, err := s.allowance(ctx)
				spent = err == nil && limited && left <= 0
			}
			cancel()
			checked = time.Now()
		}
		err, allowanceSpent := dbErr, spent
		mu.Unlock()

		snap := s.dir.Current()
		info := snap.Info()
		b := healthBody{
			Status: "ok", Version: Version, Database: "ok", Search: s.search.Status(),
			Snapshot: healthSnapshot{Info: info, AgeSeconds: int64(time.Since(info.GeneratedAt).Seconds()), Methods: snap.Len()},
		}
		if err != nil {
			b.Database = "unavailable"
			b.Status = "degraded"
			// Non-exact search reads its vectors from the database.
			b.Search = "unavailable"
		}
		if allowanceSpent && b.Search != "unavailable" {
			b.Search = "allowance_exhausted"
		}
		if b.Search != "ok" || snap.Len() == 0 {
			b.Status = "degraded"
		}
		body, _ := json.Marshal(b)
		h := w.Header()
		h["Content-Type"] = hdrJSON
		h["Cache-Control"] = []string{"no-store"}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
		if r.Method != http.MethodHead {
			w.Write(body)
		}
	})
}

// handleOpenAPI serves the OpenAPI document.
func (s *Server) handleOpenAPI() http.Handler {
	res := resource.New(resource.JSON, openapiJSON)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if prob := noParameters(r.URL.RawQuery); prob != nil {
			s.error(w, r, prob)
			return
		}
		resource.Serve(w, r, res, http.StatusOK)
	})
}

// discovery is what GET on the API's root tells a client that knows nothing yet: the
// contract's version, where its OpenAPI document is, and the scopes keys come in.
type discovery struct {
	APIVersion string   `json:"apiVersion"`
	OpenAPI    string   `json:"openapi"`
	Scopes     []string `json:"scopes"`
}

// handleDiscovery serves the API's root.
func (s *Server) handleDiscovery() http.Handler {
	body, _ := json.Marshal(discovery{APIVersion: Version, OpenAPI: BasePath + "/openapi.json", Scopes: []string{"agent", "user"}})
	res := resource.New(resource.JSON, body)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if prob := noParameters(r.URL.RawQuery); prob != nil {
			s.error(w, r, prob)
			return
		}
		// RFC 8631: where the service is described, for machines and for people.
		w.Header()["Link"] = hdrServiceLinks
		resource.Serve(w, r, res, http.StatusOK)
	})
}

var hdrServiceLinks = []string{`<` + BasePath + `/openapi.json>; rel="service-desc"; type="application/vnd.oai.openapi+json", </docs/api>; rel="service-doc", </llms.txt>; rel="describedby"; type="text/markdown"`}
