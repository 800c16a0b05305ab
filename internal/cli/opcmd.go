package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// field is one input field exposed as a flag or positional argument.
type field struct {
	json string // JSON name
	flag string // flag name
	kind reflect.Kind
	typ  reflect.Type
	help string
}

func inputFields(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			out = append(out, inputFields(f.Type)...) // shared inputs (write options, guards)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || name == "vault" {
			continue // the CLI picks the vault with the global --vault folder flag
		}
		flag := f.Tag.Get("cli")
		if flag == "" {
			flag = strings.ReplaceAll(name, "_", "-")
		}
		out = append(out, field{json: name, flag: flag, kind: f.Type.Kind(), typ: f.Type, help: f.Tag.Get("jsonschema")})
	}
	return out
}

// opCommand generates a cobra command from an operation definition: positional
// arguments and flags come from the input struct, the result is printed with
// the op's text renderer or as JSON, and the call goes through the registry's
// dispatch pipeline like every other surface.
func opCommand(g *globals, reg *ops.Registry, op *ops.Op) *cobra.Command {
	op, _ = reg.Get(op.Name) // with its schemas (ListShallow's ops may lack them)
	fields := inputFields(op.InputType)
	cmd := opCommandShell(op)
	// Positional arguments the schema requires are mandatory; optional ones
	// (read_note's path, when --note names the note instead) may be left out.
	required := map[string]bool{}
	for _, r := range op.InputSchema.Required {
		required[r] = true
	}
	// A field an alias flag can fill (get_block's uuid: --block-uuid) is
	// left to the schema's check.
	aliased := map[string]bool{}
	for _, a := range op.Aliases {
		if a.Within == "" {
			aliased[a.Canonical] = true
		}
	}
	minArgs := 0
	for _, a := range op.CLI.Args {
		if !required[a] || aliased[a] {
			break
		}
		minArgs++
	}
	cmd.Args = cobra.RangeArgs(minArgs, len(op.CLI.Args))
	if n := len(op.CLI.Args); n > 0 && op.CLI.Args[n-1] == "query" {
		cmd.Args = cobra.MinimumNArgs(minArgs) // `loci search two words` needs no quotes
	}
	cmd.Args = queryArgs(cmd.Args, op.CLI.Args)
	values := map[string]any{}
	jsonFlags := map[string]bool{}
	positional := map[string]bool{}
	for _, a := range op.CLI.Args {
		positional[a] = true
	}
	fs := cmd.Flags()
	for _, f := range fields {
		if positional[f.json] {
			continue
		}
		help := flagUsage(f.help)
		switch {
		case f.kind == reflect.String:
			values[f.json] = fs.String(f.flag, "", help)
		case f.kind == reflect.Int:
			values[f.json] = fs.Int(f.flag, 0, help)
		case f.kind == reflect.Bool:
			values[f.json] = fs.Bool(f.flag, false, help)
		case f.kind == reflect.Slice && f.typ.Elem().Kind() == reflect.String:
			values[f.json] = fs.StringSlice(f.flag, nil, help+" (repeatable)")
		case f.kind == reflect.Pointer && f.typ.Elem().Kind() == reflect.Bool:
			values[f.json] = fs.Bool(f.flag, false, help)
		case f.kind == reflect.Map && f.typ.Key().Kind() == reflect.String && f.typ.Elem().Kind() == reflect.String:
			values[f.json] = fs.StringToString(f.flag, nil, help+" (key=value, repeatable)")
		default:
			// Lists of objects, free-form values: JSON text, @file or - (stdin).
			values[f.json] = fs.String(f.flag, "", help+" (JSON; @file reads a file, - reads stdin)")
			jsonFlags[f.json] = true
		}
	}
	// The seed documents' names (ops.Alias) work as hidden flags too:
	// --page-name, --block-uuid, --reindex-after-apply, --scope '{...}'.
	aliasFlags := map[string]string{} // flag → alias
	for _, a := range op.Aliases {
		name := strings.ReplaceAll(a.Name, "_", "-")
		if a.Within != "" || fs.Lookup(name) != nil || aliasFlags[name] != "" {
			continue
		}
		switch a.Type {
		case "string":
			values["alias:"+a.Name] = fs.String(name, "", "alias of "+a.Canonical)
		case "boolean":
			values["alias:"+a.Name] = fs.Bool(name, false, "alias")
		default:
			values["alias:"+a.Name] = fs.String(name, "", "alias (JSON)")
			jsonFlags["alias:"+a.Name] = true
		}
		fs.MarkHidden(name)
		aliasFlags[name] = a.Name
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		in := map[string]any{}
		for i, a := range op.CLI.Args {
			if i >= len(args) {
				break
			}
			if i == len(op.CLI.Args)-1 && a == "query" {
				in[a] = strings.Join(args[i:], " ")
			} else {
				in[a] = args[i]
			}
		}
		var flagErr error
		cmd.Flags().Visit(func(pf *pflag.Flag) {
			if alias := aliasFlags[pf.Name]; alias != "" {
				v := reflect.ValueOf(values["alias:"+alias]).Elem().Interface()
				if jsonFlags["alias:"+alias] {
					parsed, err := jsonFlag(cmd, pf.Name, v.(string))
					if err != nil {
						flagErr = err
						return
					}
					v = parsed
				}
				in[alias] = v
				return
			}
			for _, f := range fields {
				if f.flag != pf.Name {
					continue
				}
				v := reflect.ValueOf(values[f.json]).Elem().Interface()
				switch {
				case jsonFlags[f.json]:
					parsed, err := jsonFlag(cmd, f.flag, v.(string))
					if err != nil {
						flagErr = err
						return
					}
					in[f.json] = parsed
				case f.json == "content" && v == "-":
					b, err := io.ReadAll(cmd.InOrStdin())
					if err != nil {
						flagErr = errs.Wrap(err, errs.CodeInvalidInput, "cannot read stdin")
						return
					}
					in[f.json] = string(b)
				default:
					in[f.json] = v
				}
			}
		})
		if flagErr != nil {
			return flagErr
		}
		raw, err := json.Marshal(in)
		if err != nil {
			return errs.Wrap(err, errs.CodeInvalidInput, "cannot encode arguments")
		}
		// The person at the terminal may write (unless the config, the
		// environment or --read-only say otherwise).
		env, err := g.openEnv(cmd.Context(), true)
		if err != nil {
			return err
		}
		defer env.Close()
		ctx := cmd.Context()
		stream := in["stream"] == true
		if stream {
			// --stream: NDJSON progress events, then the final result.
			ctx = ops.WithStream(ctx, ndjsonStream(g.stdout))
		}
		res := reg.Call(ctx, env, ops.Caller{Surface: "cli"}, op.Name, raw)
		if res.Err != nil {
			if stream {
				ndjsonStream(g.stdout)("ai.error", res.Err)
			}
			return res.Err
		}
		if stream {
			ndjsonStream(g.stdout)("ai.complete", res.Output)
			return nil
		}
		text := op.CLI.Text
		if text != nil && isTerminal(g.stdout) {
			// A note's text may hold escape sequences (a hostile vault):
			// on a terminal they are shown, not obeyed (colour.go).
			text = func(o any) string { return escapeControls(op.CLI.Text(o)) }
		}
		if on, _ := useColour(g.color, g.stdout); on && text != nil {
			plain := text
			text = func(o any) string { return colourOutput(op, plain(o)) }
		}
		return g.print(res.Output, text)
	}
	return cmd
}

// flagUsage makes an operation's field description a flag's usage: pflag
// reads a backquoted word of a usage as the flag's value placeholder
// (`--addr loci serve`), so backquotes (Markdown code in the schema's
// descriptions) become plain quotes.
func flagUsage(s string) string { return strings.ReplaceAll(s, "`", "'") }

// opCommandShell is an operation's command without flags or a run
// function: its use line and descriptions.
func opCommandShell(op *ops.Op) *cobra.Command {
	use := op.CLI.Use
	if i := strings.LastIndex(use, " "); i >= 0 {
		use = use[i+1:] // "ai ask": a subcommand of the "ai" group (root.go)
	}
	for _, a := range op.CLI.Args {
		use += " <" + a + ">"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: op.CLI.Short,
		Long:  op.Description + "\n\nOperation: " + op.Name + " (also available over MCP and REST).",
	}
	if cmd.Short == "" {
		cmd.Short = firstSentence(op.Description)
	}
	return cmd
}

// opStub stands for an operation's command that the command line does not
// invoke (newRoot): it is listed like the real one, and if it runs after
// all, Main builds every command and runs the command line again.
func opStub(_ *globals, _ *ops.Registry, op *ops.Op) *cobra.Command {
	cmd := opCommandShell(op)
	cmd.DisableFlagParsing = true
	cmd.RunE = func(*cobra.Command, []string) error { return errWholeTree }
	return cmd
}

func (g *globals) print(out any, text func(any) string) error {
	if g.format == "json" || text == nil {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(g.stdout, string(b))
		return nil
	}
	s := text(out)
	fmt.Fprint(g.stdout, s)
	if s != "" && !strings.HasSuffix(s, "\n") {
		fmt.Fprintln(g.stdout)
	}
	return nil
}

// firstSentence makes a one-line summary for the command list: the first
// sentence or clause of the description, cut at a word boundary.
func firstSentence(s string) string {
	for _, sep := range []string{". ", " (", ", "} {
		if i := strings.Index(s, sep); i > 0 && i < len(s) {
			s = s[:i]
		}
	}
	s = strings.TrimSuffix(s, ".")
	const maxLen = 72
	if len(s) > maxLen {
		cut := strings.LastIndex(s[:maxLen], " ")
		if cut < 20 {
			cut = maxLen
		}
		s = s[:cut] + "…"
	}
	return s
}

// jsonFlag reads a flag holding JSON: inline, from a file (@path) or from
// stdin (-).
func jsonFlag(cmd *cobra.Command, name, v string) (any, error) {
	b := []byte(v)
	switch {
	case v == "-":
		var err error
		if b, err = io.ReadAll(cmd.InOrStdin()); err != nil {
			return nil, errs.Wrap(err, errs.CodeInvalidInput, "cannot read stdin")
		}
	case strings.HasPrefix(v, "@"):
		var err error
		if b, err = os.ReadFile(v[1:]); err != nil {
			return nil, errs.Wrap(err, errs.CodeInvalidInput, "cannot read --"+name+" file")
		}
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, errs.New(errs.CodeInvalidInput, "--%s is not valid JSON: %v", name, err)
	}
	return out, nil
}
