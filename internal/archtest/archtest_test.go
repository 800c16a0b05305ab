package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

const module = "github.com/loci-dev/loci"

// maxShare is the largest part of the module's non-test lines one package
// may hold.
const maxShare = 0.20

// shared are the packages under internal/ops that are not a family of
// operations: catalog assembles the families, opstest serves their tests.
var shared = map[string]bool{"catalog": true, "opstest": true}

// goDirs maps every package directory of the module (relative, slash
// separated) to its .go files; testdata, hidden and underscore folders
// are not packages.
func goDirs(t *testing.T) map[string][]string {
	t.Helper()
	root := testutil.RepoRoot()
	dirs := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			dirs[filepath.ToSlash(rel)] = append(dirs[filepath.ToSlash(rel)], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no Go files found under " + root)
	}
	return dirs
}

func nonTest(files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

// TestNoPackageHoldsAFifth: no package holds more than maxShare of the
// module's non-test lines (every line of every non-test .go file counts).
func TestNoPackageHoldsAFifth(t *testing.T) {
	lines := map[string]int{}
	total := 0
	for dir, files := range goDirs(t) {
		for _, f := range nonTest(files) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			n := bytes.Count(b, []byte("\n"))
			if len(b) > 0 && b[len(b)-1] != '\n' {
				n++
			}
			lines[dir] += n
			total += n
		}
	}
	var dirs []string
	for d := range lines {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool { return lines[dirs[i]] > lines[dirs[j]] })
	var top []string
	for i, d := range dirs {
		share := float64(lines[d]) / float64(total)
		if i < 5 {
			top = append(top, fmt.Sprintf("%s %d (%.1f%%)", d, lines[d], 100*share))
		}
		if share > maxShare {
			t.Errorf("%s holds %d of the module's %d non-test lines (%.1f%%, over %.0f%%): give part of it a package of its own",
				d, lines[d], total, 100*share, 100*maxShare)
		}
	}
	t.Logf("%d non-test lines; largest: %s", total, strings.Join(top, ", "))
}

// families returns the directories of the families of operations: the
// packages right under internal/ops but catalog and opstest.
func families(dirs map[string][]string) map[string]bool {
	out := map[string]bool{}
	for d := range dirs {
		if rest, ok := strings.CutPrefix(d, "internal/ops/"); ok && !strings.Contains(rest, "/") && !shared[rest] {
			out[d] = true
		}
	}
	return out
}

// TestFamiliesStayApart: a family of operations imports no other family
// (nor catalog or opstest) and internal/ops imports none of them: what two
// families share belongs in internal/ops or a domain package. Tests are
// free to use several families.
func TestFamiliesStayApart(t *testing.T) {
	dirs := goDirs(t)
	fams := families(dirs)
	if len(fams) < 2 {
		t.Fatalf("found %d families under internal/ops", len(fams))
	}
	check := func(dir string, allowed func(string) bool) {
		for _, f := range nonTest(dirs[dir]) {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				rel, ok := strings.CutPrefix(p, module+"/")
				if !ok || !strings.HasPrefix(rel, "internal/ops/") || allowed(rel) {
					continue
				}
				t.Errorf("%s imports %s: families stay apart (move what they share down into internal/ops or a domain package)",
					filepath.ToSlash(strings.TrimPrefix(f, testutil.RepoRoot()+string(filepath.Separator))), p)
			}
		}
	}
	for fam := range fams {
		check(fam, func(string) bool { return false })
	}
	check("internal/ops", func(string) bool { return false })
}

// TestOperationsLiveInFilesNamedForThem: every operation of a family is
// defined (its ops.Def with its Name) in <name>.go of that family, and no
// name is defined twice, so that an operation is found from its name alone.
func TestOperationsLiveInFilesNamedForThem(t *testing.T) {
	dirs := goDirs(t)
	seen := map[string]string{}
	for fam := range families(dirs) {
		for _, f := range nonTest(dirs[fam]) {
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				cl, ok := n.(*ast.CompositeLit)
				if !ok || !isOpsDef(cl.Type) {
					return true
				}
				name := ""
				for _, e := range cl.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
							if lit, ok := kv.Value.(*ast.BasicLit); ok {
								name, _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
				where := fam + "/" + filepath.Base(f)
				switch {
				case name == "":
					t.Errorf("%s: an ops.Def without a literal Name", fset.Position(cl.Pos()))
				case filepath.Base(f) != name+".go":
					t.Errorf("operation %s is defined in %s, not in %s/%s.go", name, where, fam, name)
				case seen[name] != "":
					t.Errorf("operation %s is defined in %s and in %s", name, seen[name], where)
				}
				seen[name] = where
				return true
			})
		}
	}
	// Every operation pinned by a tool snapshot is defined in a family.
	snaps, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "internal", "ops", "testdata", "toolsnaps", "*.json"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no tool snapshots: %v", err)
	}
	for _, s := range snaps {
		if name := strings.TrimSuffix(filepath.Base(s), ".json"); seen[name] == "" {
			t.Errorf("operation %s (%s) is not defined in a family's %s.go", name, filepath.Base(s), name)
		}
	}
	if len(seen) != len(snaps) {
		t.Errorf("%d operations defined in families, %d tool snapshots", len(seen), len(snaps))
	}
}

// isOpsDef reports whether a composite literal's type is ops.Def[In, Out].
func isOpsDef(e ast.Expr) bool {
	if ix, ok := e.(*ast.IndexListExpr); ok {
		e = ix.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Def" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "ops"
}
