package a2a

import (
	"net/http"
	"strings"
)

// charsetWriter adds "; charset=utf-8" to a text response's Content-Type
// (text/*, JSON: the card, JSON-RPC and HTTP+JSON bodies, event streams)
// that names no charset, when the header goes out: a2a-go writes its own
// headers without one, and a browser or a HAR viewer would otherwise decode
// non-ASCII text as windows-1252. Everything the bridge serves is UTF-8.
type charsetWriter struct {
	http.ResponseWriter
	done bool
}

func (c *charsetWriter) setCharset() {
	if c.done {
		return
	}
	c.done = true
	h := c.Header()
	ct := h.Get("Content-Type")
	if ct == "" || strings.Contains(strings.ToLower(ct), "charset=") {
		return
	}
	base := strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	if strings.HasPrefix(base, "text/") || base == "application/json" || strings.HasSuffix(base, "+json") {
		h.Set("Content-Type", ct+"; charset=utf-8")
	}
}

func (c *charsetWriter) WriteHeader(code int) {
	if code >= 200 {
		c.setCharset()
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *charsetWriter) Write(b []byte) (int, error) {
	c.setCharset()
	return c.ResponseWriter.Write(b)
}

// Flush passes flushes on (event streams).
func (c *charsetWriter) Flush() {
	c.setCharset()
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (c *charsetWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
