package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpGroups: `loci help` lists every command exactly once, under one
// of the purpose headings, in the whole tree and in the lazy one (root
// help builds no operation in full); nothing lands in cobra's
// "Additional Commands".
func TestHelpGroups(t *testing.T) {
	ids := map[string]bool{}
	for _, hg := range helpGroups {
		ids[hg.id] = true
	}
	for _, args := range [][]string{nil, {"--help"}} {
		root := newRoot(&globals{}, args)
		root.InitDefaultHelpCmd()
		root.InitDefaultCompletionCmd()
		n := 0
		for _, c := range root.Commands() {
			if !c.IsAvailableCommand() && c.Name() != "help" {
				continue
			}
			n++
			if !ids[c.GroupID] {
				t.Errorf("%v: command %q has group %q, not one of the help groups (add it to commandGroup)", args, c.Name(), c.GroupID)
			}
		}
		if n < 50 {
			t.Fatalf("%v: only %d commands", args, n)
		}
	}

	out, errOut, code := run(t, "help")
	if code != 0 {
		t.Fatalf("help: code %d %s", code, errOut)
	}
	if strings.Contains(out, "Additional Commands") {
		t.Errorf("commands without a group:\n%s", out)
	}
	// Each command's line appears once, under the heading its group
	// dictates (hand-checked examples for each group).
	section := map[string]string{}
	heading := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " "):
			heading = line
		case strings.HasPrefix(line, "  ") && heading != "" && heading != "Usage:" && heading != "Flags:":
			name := strings.Fields(line)[0]
			if prev, dup := section[name]; dup {
				t.Errorf("%q listed twice: under %q and %q", name, prev, heading)
			}
			section[name] = heading
		}
	}
	for name, want := range map[string]string{
		"search": "Search & read:", "read": "Search & read:", "tasks": "Search & read:",
		"write": "Write (previewed; --apply writes):", "mv": "Write (previewed; --apply writes):", "task-status": "Write (previewed; --apply writes):",
		"page": "Logseq:", "create-block": "Logseq:",
		"ai": "AI:", "chat": "AI:",
		"serve": "Serve & clients:", "mcp": "Serve & clients:", "mcp-config": "Serve & clients:", "token": "Serve & clients:", "confirm": "Serve & clients:",
		"index": "Admin:", "config": "Admin:", "version": "Admin:", "help": "Admin:", "completion": "Admin:", "inspect-acl": "Admin:",
	} {
		if section[name] != want {
			t.Errorf("%s under %q, want %q", name, section[name], want)
		}
	}
	whole := newRoot(&globals{}, nil)
	var names []string
	for _, c := range whole.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	for _, name := range names {
		if section[name] == "" {
			t.Errorf("%s not listed by loci help", name)
		}
	}
}

// everyCommand walks the whole tree.
func everyCommand(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		everyCommand(sub, f)
	}
}

// TestFlagPlaceholders: pflag shows a backquoted word of a flag's usage
// as its value placeholder (`--addr loci serve` was the result of
// "address of `loci serve`"): over every flag of every command, the
// placeholder is one word (a type name or a chosen noun), a boolean flag
// has none, and no backquote is left in the text.
func TestFlagPlaceholders(t *testing.T) {
	word := regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*$`)
	root := newRoot(&globals{}, nil)
	n := 0
	everyCommand(root, func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			n++
			name, usage := pflag.UnquoteUsage(f)
			where := c.CommandPath() + " --" + f.Name
			switch {
			case f.Value.Type() == "bool" && name != "":
				t.Errorf("%s: a boolean flag shows the placeholder %q", where, name)
			case f.Value.Type() != "bool" && !word.MatchString(name):
				t.Errorf("%s: placeholder %q is not one word", where, name)
			case strings.Contains(usage, "`"):
				t.Errorf("%s: a backquote left in %q", where, usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.InheritedFlags().VisitAll(check)
	})
	if n < 400 {
		t.Fatalf("only %d flags checked", n)
	}
	// The rendered help, as a person sees it.
	for args, want := range map[string]string{
		"serve --help":      "--addr address ",
		"confirm --help":    "--addr address ",
		"mcp-config --help": "--addr address ",
		"search --help":     "--vault folder ",
		"index --help":      "--index-dir folder ",
	} {
		out, _, code := run(t, strings.Fields(args)...)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("loci %s: code %d, no %q in\n%s", args, code, want, out)
		}
	}
	out, _, _ := run(t, "mcp-config", "--help")
	if !regexp.MustCompile(`(?m)^\s+--http\s+connect to`).MatchString(out) {
		t.Errorf("mcp-config --http renders with a placeholder:\n%s", out)
	}
}
