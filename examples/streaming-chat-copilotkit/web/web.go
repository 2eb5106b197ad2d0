package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed all:dist
var dist embed.FS

// FS returns the built UI: index.html at its root, assets under assets/.
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("web: embedded dist is missing: " + err.Error()) // impossible: fixed by go:embed
	}
	return sub
}

type file struct {
	data  []byte
	etag  string
	ctype string
}

var (
	loadOnce sync.Once
	files    map[string]*file
)

func load() {
	files = map[string]*file{}
	_ = fs.WalkDir(FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(FS(), name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = http.DetectContentType(data)
		}
		files[name] = &file{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ctype}
		return nil
	})
}

// Handler serves the UI: files of [FS] by path, and index.html for any other
// GET of a page path so that client-side routes survive a reload. API paths
// (/agui, /agui/..., /healthz) and missing assets or files with an extension
// are 404, never the page. Responses carry an ETag and "Cache-Control:
// no-cache" (asset names are not content-hashed, so browsers revalidate).
func Handler() http.Handler {
	loadOnce.Do(load)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := path.Clean("/" + r.URL.Path)
		if isAPI(p) {
			http.NotFound(w, r)
			return
		}
		name := strings.TrimPrefix(p, "/")
		if name == "" || name == "index.html" {
			name = "index.html"
		} else if _, ok := files[name]; !ok {
			if strings.HasPrefix(name, "assets/") || path.Ext(name) != "" {
				http.NotFound(w, r)
				return
			}
			name = "index.html" // an SPA route
		}
		f := files[name]
		if f == nil {
			http.Error(w, "the web UI was not built into this binary", http.StatusNotFound)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("ETag", f.etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		if name == "index.html" {
			h.Set("Referrer-Policy", "same-origin")
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
	})
}

func isAPI(p string) bool {
	return p == "/agui" || strings.HasPrefix(p, "/agui/") || p == "/healthz"
}
