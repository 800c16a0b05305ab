package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Large bundled assets (vendor/mermaid/mermaid.min.js, 5.5 MB) are
// embedded gzip-compressed (1.6 MB) as name.gz: served as they are to a
// browser that accepts gzip, decompressed for one that does not.

type gzAsset struct {
	gz   []byte
	etag string
}

var gzAssets sync.Map // name → *gzAsset

// serveCompressed serves /ui/static/<name> from <name>.gz when only the
// compressed file is embedded; false when there is none.
func (h *Handler) serveCompressed(w http.ResponseWriter, r *http.Request) bool {
	name := strings.TrimPrefix(r.URL.Path, "/ui/static/")
	if name == "" || strings.Contains(name, "..") {
		return false
	}
	var a *gzAsset
	if x, ok := gzAssets.Load(name); ok {
		a = x.(*gzAsset)
	} else {
		b, err := fs.ReadFile(assets, "assets/static/"+name+".gz")
		if err != nil {
			return false
		}
		sum := sha256.Sum256(b)
		a = &gzAsset{gz: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		gzAssets.Store(name, a)
	}
	hd := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	hd.Set("Content-Type", ct)
	hd.Set("Vary", "Accept-Encoding")
	hd.Set("ETag", a.etag)
	if acceptsGzip(r) {
		hd.Set("Content-Encoding", "gzip")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.gz))
		return true
	}
	zr, err := gzip.NewReader(bytes.NewReader(a.gz))
	if err != nil {
		http.Error(w, "broken asset", http.StatusInternalServerError)
		return true
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		http.Error(w, "broken asset", http.StatusInternalServerError)
		return true
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
	return true
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(q), "q="); ok {
				f, err := strconv.ParseFloat(v, 64)
				return err == nil && f > 0
			}
			return true
		}
	}
	return false
}
