package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

// listingServer serves the REST handler with the principal named by the
// X-Principal header (as internal/server's authentication would set it):
// owner, reader (read), editor (read, write).
func listingServer(t *testing.T, toolsets []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, dir, map[string]string{"Alpha.md": "# Alpha\n\nalpha plan\n"})
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, dir, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}, Writes: ops.WriteSettings{Enabled: true}, Toolsets: toolsets}
	t.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	principals := map[string]*auth.Principal{
		"owner":  auth.Owner(auth.ViaOwnerToken),
		"reader": {Name: "reader", Scopes: []auth.Scope{auth.ScopeRead}, Via: auth.ViaToken},
		"editor": {Name: "editor", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, Via: auth.ViaToken},
	}
	h := api.New(catalog.All(), env, api.Options{Version: "test"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principals[r.Header.Get("X-Principal")]
		if p == nil {
			t.Errorf("no principal %q", r.Header.Get("X-Principal"))
		}
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func getAs(t *testing.T, base, who, method, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, nil)
	req.Header.Set("X-Principal", who)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b json.RawMessage
	json.NewDecoder(resp.Body).Decode(&b)
	return resp.StatusCode, b
}

func listedOps(t *testing.T, base, who string) []string {
	t.Helper()
	status, b := getAs(t, base, who, http.MethodGet, "/v1/ops")
	var env struct {
		Result struct {
			Operations []struct{ Name, Scope, Toolset string }
		}
	}
	if status != 200 || json.Unmarshal(b, &env) != nil {
		t.Fatalf("%s GET /v1/ops: %d %s", who, status, b)
	}
	var names []string
	for _, o := range env.Result.Operations {
		if o.Scope == "" || o.Toolset == "" {
			t.Errorf("%s: %s has no scope or toolset", who, o.Name)
		}
		names = append(names, o.Name)
	}
	return names
}

func openAPIPaths(t *testing.T, base, who string) map[string]any {
	t.Helper()
	status, b := getAs(t, base, who, http.MethodGet, "/openapi.json")
	var doc struct{ Paths map[string]any }
	if status != 200 || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("%s /openapi.json: %d", who, status)
	}
	return doc.Paths
}

// TestListingByPrincipal: GET /v1/ops, GET /v1/ops/{name}, /v1 and
// /openapi.json show a principal only the operations it may call, and a
// hidden one called anyway is forbidden.
func TestListingByPrincipal(t *testing.T) {
	base := listingServer(t, nil)
	owner, reader, editor := listedOps(t, base, "owner"), listedOps(t, base, "reader"), listedOps(t, base, "editor")
	if len(owner) != len(catalog.All().List()) {
		t.Errorf("owner sees %d of %d operations", len(owner), len(catalog.All().List()))
	}
	if slices.Contains(reader, "edit_note") || slices.Contains(reader, "delete_note") || !slices.Contains(reader, "search_notes") {
		t.Errorf("reader sees %v", reader)
	}
	if !slices.Contains(editor, "edit_note") || slices.Contains(editor, "delete_note") {
		t.Errorf("editor sees %v", editor)
	}
	if status, b := getAs(t, base, "reader", http.MethodGet, "/v1/ops/edit_note"); status != http.StatusForbidden {
		t.Errorf("reader GET /v1/ops/edit_note: %d %s", status, b)
	}
	if status, b := getAs(t, base, "reader", http.MethodPost, "/v1/ops/capture_note"); status != http.StatusForbidden {
		t.Errorf("reader POST /v1/ops/capture_note: %d %s", status, b)
	}
	if status, _ := getAs(t, base, "reader", http.MethodGet, "/v1/ops/search_notes"); status != http.StatusOK {
		t.Errorf("reader GET /v1/ops/search_notes: %d", status)
	}

	ownerDoc, readerDoc := openAPIPaths(t, base, "owner"), openAPIPaths(t, base, "reader")
	if ownerDoc["/v1/ops/edit_note"] == nil || ownerDoc["/v1/ops/delete_note"] == nil {
		t.Error("owner's OpenAPI lacks edit_note or delete_note")
	}
	if readerDoc["/v1/ops/edit_note"] != nil || readerDoc["/v1/ops/delete_note"] != nil || readerDoc["/v1/ops/search_notes"] == nil || readerDoc["/v1/search"] == nil {
		t.Errorf("reader's OpenAPI paths: edit_note %v, search_notes %v", readerDoc["/v1/ops/edit_note"] != nil, readerDoc["/v1/ops/search_notes"] != nil)
	}
	// The owner's cached document is not served to the reader afterwards.
	if again := openAPIPaths(t, base, "reader"); again["/v1/ops/edit_note"] != nil {
		t.Error("reader got the owner's cached OpenAPI document")
	}
	if again := openAPIPaths(t, base, "owner"); again["/v1/ops/edit_note"] == nil {
		t.Error("owner got the reader's cached OpenAPI document")
	}
}

// TestListingServerToolsets: with server toolsets [read] even the owner
// is not shown the write operations, and they are refused.
func TestListingServerToolsets(t *testing.T) {
	base := listingServer(t, []string{"read"})
	owner := listedOps(t, base, "owner")
	for _, name := range owner {
		op, _ := catalog.All().Get(name)
		if op.Group() != "read" {
			t.Errorf("server toolsets [read]: owner sees %s (%s)", name, op.Group())
		}
	}
	if !slices.Contains(owner, "search_notes") {
		t.Error("search_notes not listed")
	}
	if status, b := getAs(t, base, "owner", http.MethodPost, "/v1/ops/capture_note"); status != http.StatusForbidden {
		t.Errorf("owner POST capture_note under server toolsets [read]: %d %s", status, b)
	}
	if openAPIPaths(t, base, "owner")["/v1/ops/capture_note"] != nil {
		t.Error("OpenAPI shows capture_note under server toolsets [read]")
	}
}
