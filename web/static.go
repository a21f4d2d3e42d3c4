package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/static"
)

// Asset is a static file under its versioned URL: the name carries a hash of the
// content, so the file can be cached for a year and a new version gets a new URL.
type Asset struct {
	URL      string
	Resource *resource.Resource
}

var (
	assets           = loadAssets()
	stylesheetURL    = assetURL("style.css")
	passkeyScriptURL = assetURL("passkey.js")
)

func loadAssets() map[string]Asset {
	out := map[string]Asset{}
	names, err := fs.Glob(static.FS, "*")
	if err != nil {
		panic(err)
	}
	for _, name := range names {
		body, err := fs.ReadFile(static.FS, name)
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(name)
		ctype := mime.TypeByExtension(ext)
		if strings.HasPrefix(ctype, "text/") && !strings.Contains(ctype, "charset") {
			ctype += "; charset=utf-8"
		}
		url := "/static/" + strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext
		out[name] = Asset{URL: url, Resource: resource.NewLevels(ctype, body, resource.Best)}
	}
	return out
}

func assetURL(name string) string {
	a, ok := assets[name]
	if !ok {
		panic("web: no static file " + name)
	}
	return a.URL
}

// Assets lists the static files under their versioned URLs.
func Assets() []Asset {
	out := make([]Asset, 0, len(assets))
	for _, a := range assets {
		out = append(out, a)
	}
	return out
}
