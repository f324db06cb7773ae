// Package web is the dashboard: a page that watches and steers sessions
// through the /v1 API and its event streams, embedded in the binary (plain
// HTML, CSS and JavaScript: no build step, nothing fetched from elsewhere).
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Handler serves the dashboard: / is the page, /assets/ its files.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	return mux
}
