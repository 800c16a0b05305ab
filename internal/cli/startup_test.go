package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestInvokedCommand: the command a command line invokes is read past the
// root's flags and their values; help and completion need every command.
func TestInvokedCommand(t *testing.T) {
	root := newRoot(&globals{}, nil)
	for _, c := range []struct {
		args  []string
		name  string
		whole bool
	}{
		{[]string{"--version"}, "", false},
		{[]string{}, "", false},
		{[]string{"search", "plugin", "--mode", "lexical"}, "search", false},
		{[]string{"--vault", "search", "read", "x"}, "read", false},
		{[]string{"--vault=v", "--format", "json", "search", "x"}, "search", false},
		{[]string{"--read-only", "--exclude", "a/**", "list-tags"}, "list-tags", false},
		{[]string{"--enable-writes", "ai", "ask", "q"}, "ai", false},
		{[]string{"--", "search"}, "search", false},
		{[]string{"help", "search"}, "help", true},
		{[]string{"completion", "bash"}, "completion", true},
		{[]string{"__complete", "sea"}, "__complete", true},
		{nil, "", true},
	} {
		name, whole := invokedCommand(root, c.args)
		if name != c.name || whole != c.whole {
			t.Errorf("%q: got %q whole=%v, want %q whole=%v", c.args, name, whole, c.name, c.whole)
		}
	}
}

// TestStubCommands: a tree built for one command lists every other one by
// the same name and summary, and a stub that runs asks for the whole tree,
// which Main then runs: the same output as with every command built.
func TestStubCommands(t *testing.T) {
	whole := newRoot(&globals{}, nil)
	lazy := newRoot(&globals{}, []string{"version"})
	wholeCmds, lazyCmds := map[string]string{}, map[string]string{}
	for _, c := range whole.Commands() {
		wholeCmds[c.Use] = c.Short
	}
	for _, c := range lazy.Commands() {
		lazyCmds[c.Use] = c.Short
	}
	if len(wholeCmds) < 30 || len(wholeCmds) != len(lazyCmds) {
		t.Fatalf("%d commands in the whole tree, %d in the lazy one", len(wholeCmds), len(lazyCmds))
	}
	for use, s := range wholeCmds {
		if lazyCmds[use] != s {
			t.Errorf("command %q: lazy summary %q, want %q", use, lazyCmds[use], s)
		}
	}
	// The search command of a tree built for `version` is a stub.
	var out bytes.Buffer
	lazy.SetArgs([]string{"search", "x", "--mode", "lexical"})
	lazy.SetOut(&out)
	lazy.SetErr(&out)
	if err := lazy.ExecuteContext(context.Background()); !errors.Is(err, errWholeTree) {
		t.Fatalf("stub ran with %v, want errWholeTree", err)
	}
	// Help of the root (stubs) and of a command (built in full) as before.
	var a, b bytes.Buffer
	Main(context.Background(), []string{"--help"}, &a, &a)
	whole.SetArgs([]string{"--help"})
	whole.SetOut(&b)
	whole.ExecuteContext(context.Background())
	if a.String() != b.String() || !strings.Contains(a.String(), "search") {
		t.Errorf("root help differs:\n%s\nwant\n%s", a.String(), b.String())
	}
	a.Reset()
	Main(context.Background(), []string{"search", "--help"}, &a, &a)
	if !strings.Contains(a.String(), "--mode string") {
		t.Errorf("search help lacks its flags:\n%s", a.String())
	}
}

// FuzzInvokedCommand: any command line (arguments split at NUL) gives a
// command name that is one of its arguments, or none, and never panics.
func FuzzInvokedCommand(f *testing.F) {
	root := newRoot(&globals{}, nil)
	for _, s := range []string{"search\x00x", "--vault\x00v\x00read", "--format=json\x00-\x00--", "-h", "--\x00help", "--exclude"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		name, _ := invokedCommand(root, args)
		if name == "" {
			return
		}
		for _, a := range args {
			if a == name {
				return
			}
		}
		t.Fatalf("%q: name %q is none of the arguments", args, name)
	})
}
