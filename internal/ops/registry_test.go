package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
	"github.com/loci-dev/loci/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/toolsnaps and docs/tools.md from the registry")

// knownCodes are the codes an op may declare in Errors.
var knownCodes = []string{
	errs.CodeInvalidInput, errs.CodeNotFound, errs.CodePathDenied, errs.CodeVaultNotFound, errs.CodeIndexMissing,
	errs.CodeIndexBusy, errs.CodeIndexSchema, errs.CodeAmbiguous, errs.CodeInternal, errs.CodeUnauthorized,
	errs.CodeForbidden, errs.CodeTooLarge, errs.CodeRateLimited, errs.CodeBlockNotFound, errs.CodeNotLogseqGraph,
	errs.CodeEmbedMismatch, errs.CodeEmbedUnavailable,
	errs.CodeEtagMismatch, errs.CodeWritesDisabled, errs.CodeIdempotencyReuse, errs.CodeConflict, errs.CodeInvalidUTF8,
	errs.CodeNoteLocked, errs.CodeUndoNotFound,
	errs.CodeAIUnavailable, errs.CodeAIQuota, errs.CodeAIProvider, errs.CodeAIGrounding, errs.CodeAIInputTooLarge, errs.CodeAISchemaInvalid,
	errs.CodeUnsupportedQuery, errs.CodeQueryTimeout,
}

// readOps are the operations that only read: read-only and idempotent, never destructive.
var readOps = []string{
	"search_notes", "read_note", "get_links", "list_tags", "index_status", "get_context", "resolve_note", "find_similar",
	"find_broken_links", "list_frontmatter_keys", "list_frontmatter_values", "get_vault_tree", "frontmatter_validate", "suggest_typed_links",
	"recent_notes", "list_pages", "get_page", "get_block", "write_history", "query",
}

type toolSnap struct {
	Name         string             `json:"name"`
	Title        string             `json:"title"`
	Description  string             `json:"description"`
	Annotations  ops.Annotations    `json:"annotations"`
	Scope        string             `json:"scope"`
	Dynamic      bool               `json:"scope_raised_per_call,omitempty"`
	Toolset      string             `json:"toolset"`
	InputSchema  *jsonschema.Schema `json:"input_schema"`
	OutputSchema *jsonschema.Schema `json:"output_schema"`
}

// TestToolSnapshots pins every operation's public contract (name,
// description, annotations, input and output schemas) in
// testdata/toolsnaps/<name>.json. After an intended change run
// go test ./internal/ops -run TestToolSnapshots -update and review the diff.
func TestToolSnapshots(t *testing.T) {
	dir := filepath.Join("testdata", "toolsnaps")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{}
	for _, op := range opstest.Reg.List() {
		file := op.Name + ".json"
		want[file] = true
		b, err := json.MarshalIndent(toolSnap{op.Name, op.Title, op.Description, op.Annotations, string(op.Scope), op.ScopeRaised(), op.Group(), op.InputSchema, op.OutputSchema}, "", "  ")
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		b = append(b, '\n')
		p := filepath.Join(dir, file)
		if *update {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: no snapshot (%v); run go test ./internal/ops -run TestToolSnapshots -update", op.Name, err)
			continue
		}
		if !bytes.Equal(old, b) {
			t.Errorf("%s: the tool contract drifted from %s:\n%s\nIf intended, run go test ./internal/ops -run TestToolSnapshots -update", op.Name, p, firstDiff(string(old), string(b)))
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !want[e.Name()] {
			if *update {
				os.Remove(filepath.Join(dir, e.Name()))
			} else {
				t.Errorf("stale snapshot %s: no operation has that name", e.Name())
			}
		}
	}
}

// TestToolsDoc keeps docs/tools.md equal to what the registry generates.
func TestToolsDoc(t *testing.T) {
	p := filepath.Join(testutil.RepoRoot(), "docs", "tools.md")
	doc := ops.ToolsMarkdown(opstest.Reg)
	if *update {
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(p)
	if err != nil || string(old) != doc {
		t.Errorf("docs/tools.md is stale; run go test ./internal/ops -run TestToolsDoc -update\n%s", firstDiff(string(old), doc))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestOpHygiene checks what the schema snapshots cannot: every op is
// described for an agent, annotated consistently, documents its inputs and
// errors, and has an example input that passes validation.
func TestOpHygiene(t *testing.T) {
	names := map[string]bool{}
	uses := map[string]string{}
	for _, op := range opstest.Reg.List() {
		names[op.Name] = true
		if len(op.Description) < 40 {
			t.Errorf("%s: description too short for an agent (%d chars)", op.Name, len(op.Description))
		}
		if op.Title == "" {
			t.Errorf("%s: no title", op.Name)
		}
		a := op.Annotations
		if a.ReadOnly && a.Destructive {
			t.Errorf("%s: read-only and destructive", op.Name)
		}
		if slices.Contains(readOps, op.Name) && (!a.ReadOnly || !a.Idempotent || a.Destructive || a.OpenWorld) {
			t.Errorf("%s: a read operation must be ReadOnly+Idempotent, got %+v", op.Name, a)
		}
		if op.InputSchema.Type != "object" || op.OutputSchema.Type != "object" {
			t.Errorf("%s: input and output schemas must be objects", op.Name)
		}
		for name, p := range op.InputSchema.Properties {
			if strings.TrimSpace(p.Description) == "" {
				t.Errorf("%s: input field %s has no jsonschema description", op.Name, name)
			}
		}
		if _, ok := op.InputSchema.Properties["vault"]; !ok {
			t.Errorf("%s: no vault input", op.Name)
		}
		if len(op.Errors) == 0 {
			t.Errorf("%s: declares no error codes", op.Name)
		}
		for _, c := range op.Errors {
			if !slices.Contains(knownCodes, c) {
				t.Errorf("%s: unknown error code %q", op.Name, c)
			}
		}
		if op.Example == "" {
			t.Errorf("%s: no example input", op.Name)
		} else if _, err := op.Decode(json.RawMessage(op.Example)); err != nil {
			t.Errorf("%s: example input is rejected: %v", op.Name, err)
		}
		if op.CLI.Use != "" {
			if other, dup := uses[op.CLI.Use]; dup {
				t.Errorf("%s and %s share the command %q", op.Name, other, op.CLI.Use)
			}
			uses[op.CLI.Use] = op.Name
			for _, a := range op.CLI.Args {
				if _, ok := op.InputSchema.Properties[a]; !ok {
					t.Errorf("%s: CLI argument %q is not an input field", op.Name, a)
				}
			}
		}
	}
	for _, n := range readOps {
		if !names[n] {
			t.Errorf("operation %s is not registered", n)
		}
	}
}

// TestErrorCodesAreDeclared checks that the validation failures an op
// produces are among the codes it declares.
func TestErrorCodesAreDeclared(t *testing.T) {
	env := opstest.DemoEnv(t)
	for _, op := range opstest.Reg.List() {
		for _, in := range []string{`{"bogus": true}`, `{"vault": "nope"}`} {
			code, _ := opstest.CallErr(t, env, op.Name, in)
			if !slices.Contains(op.Errors, code) {
				t.Errorf("%s %s: undeclared error %s", op.Name, in, code)
			}
		}
	}
}

// Output schemas type arrays as arrays (never ["null","array"]), optional
// properties never as ["null",T], and no subschema is a bare `true` (the
// MCP Inspector's --strict portability check: type unions warn, boolean
// schemas fail); NormalizeOutput makes a handler's nil slices match them.
func TestArraysAreArrays(t *testing.T) {
	reg := catalog.All()
	var walk func(path string, s *jsonschema.Schema, optional bool)
	walk = func(path string, s *jsonschema.Schema, optional bool) {
		if s == nil {
			return
		}
		if b, _ := json.Marshal(s); string(b) == "true" {
			t.Errorf("%s: bare true schema", path)
		}
		if slices.Contains(s.Types, "null") && (slices.Contains(s.Types, "array") || optional) {
			t.Errorf("%s: nullable type %v", path, s.Types)
		}
		walk(path+".items", s.Items, false)
		for k, p := range s.Properties {
			walk(path+"."+k, p, !slices.Contains(s.Required, k))
		}
	}
	for _, op := range reg.List() {
		walk(op.Name+".input", op.InputSchema, false)
		walk(op.Name+".output", op.OutputSchema, false)
	}
	op, _ := reg.Get("list_tags")
	b, err := op.NormalizeOutput(&read.ListTagsOut{})
	if err != nil || string(b) != `{"tags":[]}` {
		t.Errorf("NormalizeOutput(nil tags) = %s, %v", b, err)
	}
	// index_status's watcher is optional and typed "object": a null there is
	// dropped, so the output still matches the schema.
	op, _ = reg.Get("index_status")
	if w := op.OutputSchema.Properties["watcher"]; w == nil || w.Type != "object" || slices.Contains(op.OutputSchema.Required, "watcher") {
		t.Fatalf("index_status watcher schema = %+v", w)
	}
	b, err = op.NormalizeOutput(map[string]any{"watcher": nil, "notes": 1})
	if err != nil || string(b) != `{"notes":1}` {
		t.Errorf("NormalizeOutput(null watcher) = %s, %v", b, err)
	}
	// query's row values accept any JSON value, spelled as an anyOf.
	op, _ = reg.Get("query")
	v := op.OutputSchema.Properties["rows"].Items.Properties["values"].Items
	if len(v.AnyOf) != 6 || v.AnyOf[5].Type != "null" {
		t.Errorf("query rows[].values[] = %+v, want anyOf of the six JSON types", v)
	}
}

func TestWriteResultsMarshal(t *testing.T) {
	env := opstest.WriteEnv(t, map[string]string{"n.md": "x\n"})
	// Every write op's example runs (preview) and returns a result or a typed error.
	for _, op := range opstest.Reg.List() {
		if !op.IsWrite() {
			continue
		}
		res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, op.Name, json.RawMessage(op.Example))
		if res.Err != nil && !slices.Contains(op.Errors, res.Err.Code) {
			t.Errorf("%s example: undeclared error %s: %s", op.Name, res.Err.Code, res.Err.Message)
		}
	}
}
