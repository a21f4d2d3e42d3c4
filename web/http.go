package web

import (
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/resource"
)

// searchTimeout bounds how long the search page waits for the search engine.
const searchTimeout = 10 * time.Second

// Header values of the pages. Cache-Control: pages as long as the directory's JSON,
// static files for a year under their versioned URLs, search results not at all.
var (
	cachePublic    = []string{"public, max-age=300"}
	cacheImmutable = []string{"public, max-age=31536000, immutable"}
	cacheNone      = []string{"no-store"}
	typeHTML       = []string{resource.HTML}
	noSniff        = []string{"nosniff"}
)

// serve answers with a rendered page or a static file by the same rules as the
// directory's JSON (see resource.Serve). Every page and file says nosniff, so that a
// browser never runs a stylesheet or a seller's text as something else.
func serve(w http.ResponseWriter, r *http.Request, res *resource.Resource, cache []string, status int) {
	h := w.Header()
	h["Cache-Control"] = cache
	h["X-Content-Type-Options"] = noSniff
	resource.Serve(w, r, res, status)
}
