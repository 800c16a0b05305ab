package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ToolsMarkdown renders the reference of every operation (docs/tools.md):
// description, annotations, the three surfaces, input and output fields,
// error codes and an example input. A test keeps the committed file current.
func ToolsMarkdown(r *Registry) string {
	var b strings.Builder
	b.WriteString(`# Operations

<!-- Generated from the operation registry (internal/ops) by
     go test ./internal/ops -run TestToolsDoc -update; do not edit by hand. -->

Every loci operation is defined once, in the registry, and reaches you through three surfaces
that run the same pipeline (input validation, the handler, a result-size limit):

- **MCP**: the tool name is the operation name (` + "`search_notes`" + `); arguments are the input object,
  the structured result is the output object.
- **REST**: ` + "`POST /v1/ops/<name>`" + ` with the input as the JSON body; the answer is
  ` + "`{\"ok\": true, \"result\": <output>}`" + `, or ` + "`{\"ok\": false, \"error\": {\"code\", \"message\", \"details\"}}`" + `
  with an HTTP status for the code (see [api.md](api.md)).
- **CLI**: ` + "`loci <command>`" + `; positional arguments and flags are the input fields (` + "`path_glob`" + ` → ` + "`--path-glob`" + `),
  ` + "`--format json`" + ` prints the output object.

Conventions: paths are vault-relative with forward slashes (absolute paths, ` + "`..`" + ` and encoded
traversal are refused with ` + "`path_denied`" + `); a ` + "`note`" + ` input takes a path, a frontmatter id, a title, an alias,
a file name or ` + "`[[wikilink]]`" + ` text; lists are paginated with ` + "`limit`" + ` and an opaque ` + "`cursor`" + ` (pass back
` + "`next_cursor`" + `); every input takes ` + "`vault`" + ` to pick one of several served vaults. Any operation may also fail
with ` + "`internal`" + ` or ` + "`payload_too_large`" + ` (narrow the request).

Operations marked *writes* change the vault. They preview by default (` + "`apply`" + ` writes), take ` + "`if_match`" + `,
` + "`idempotency_key`" + ` and ` + "`reindex`" + `, are journaled for ` + "`undo`" + `, and are off unless enabled
(` + "`writes_disabled`" + `): the safety contract is in [writes.md](writes.md).

`)
	ops := r.List()
	b.WriteString("| operation | CLI | summary |\n| --- | --- | --- |\n")
	for _, op := range ops {
		cli := "—"
		if op.CLI.Use != "" {
			cli = "`loci " + op.CLI.Use + "`"
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", op.Name, op.Name, cli, cell(op.Title))
	}
	for _, op := range ops {
		fmt.Fprintf(&b, "\n## %s\n\n", op.Name)
		scope := "`" + string(op.Scope) + "`"
		if op.ScopeRaised() {
			scope += " (`destructive` for some inputs)"
		}
		fmt.Fprintf(&b, "*%s* · %s · scope %s · toolset `%s`\n\n", op.Title, annotationText(op.Annotations), scope, op.Group())
		b.WriteString(op.Description + "\n\n")
		fmt.Fprintf(&b, "- MCP tool: `%s`\n- REST: `POST /v1/ops/%s`\n", op.Name, op.Name)
		if op.CLI.Use != "" {
			use := "loci " + op.CLI.Use
			for _, a := range op.CLI.Args {
				use += " <" + a + ">"
			}
			fmt.Fprintf(&b, "- CLI: `%s`\n", use)
		} else {
			b.WriteString("- CLI: none\n")
		}
		b.WriteString("\n**Input**\n\n")
		if len(op.InputSchema.Properties) == 0 {
			b.WriteString("No fields.\n")
		} else {
			b.WriteString("| field | type | required | description |\n| --- | --- | --- | --- |\n")
			for _, name := range propertyNames(op.InputSchema) {
				p := op.InputSchema.Properties[name]
				req := "no"
				if slices.Contains(op.InputSchema.Required, name) {
					req = "yes"
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, typeText(p), req, cell(p.Description))
			}
		}
		if len(op.Aliases) > 0 {
			b.WriteString("\n**Aliases** (other tools' names, accepted and rewritten; see [aliases.md](aliases.md))\n\n| alias | type | loci field | from | conversion |\n| --- | --- | --- | --- | --- |\n")
			for _, a := range op.Aliases {
				name := "`" + a.Name + "`"
				if a.Within != "" {
					name = "`" + a.Within + "[]." + a.Name + "`"
				}
				canon := "—"
				if a.Canonical != "" {
					canon = "`" + strings.ReplaceAll(a.Canonical, ", ", "`, `") + "`"
				}
				note := a.Note
				if note == "" {
					note = "same value"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, a.Type, canon, a.Seed, cell(note))
			}
		}
		b.WriteString("\n**Output**\n\n| field | type | description |\n| --- | --- | --- |\n")
		for _, name := range propertyNames(op.OutputSchema) {
			p := op.OutputSchema.Properties[name]
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, typeText(p), cell(p.Description))
		}
		b.WriteString("\n**Errors**: ")
		if len(op.Errors) == 0 {
			b.WriteString("none specific")
		} else {
			codes := make([]string, len(op.Errors))
			for i, c := range op.Errors {
				codes[i] = "`" + c + "`"
			}
			b.WriteString(strings.Join(codes, ", "))
		}
		b.WriteString("\n")
		if op.Example != "" {
			var buf bytes.Buffer
			if err := json.Indent(&buf, []byte(op.Example), "", "  "); err != nil {
				buf.Reset()
				buf.WriteString(op.Example)
			}
			fmt.Fprintf(&b, "\n**Example input**\n\n```json\n%s\n```\n", buf.String())
		}
	}
	return b.String()
}

func annotationText(a Annotations) string {
	var parts []string
	if a.ReadOnly {
		parts = append(parts, "read-only")
	} else {
		parts = append(parts, "writes")
	}
	if a.Destructive {
		parts = append(parts, "destructive")
	}
	if a.Idempotent {
		parts = append(parts, "idempotent")
	}
	if a.OpenWorld {
		parts = append(parts, "open world")
	}
	return strings.Join(parts, " · ")
}

// propertyNames returns a schema's properties in declaration order.
func propertyNames(s *jsonschema.Schema) []string {
	var out []string
	for _, n := range s.PropertyOrder {
		if _, ok := s.Properties[n]; ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	var rest []string
	for n := range s.Properties {
		if !slices.Contains(out, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// typeText renders a schema's type for a table: string, integer, array of
// string, object of string, ...
func typeText(s *jsonschema.Schema) string {
	if s == nil {
		return "any"
	}
	t := s.Type
	if t == "" {
		for _, x := range s.Types {
			if x != "null" {
				t = x
			}
		}
	}
	switch t {
	case "":
		return "any"
	case "array":
		return "array of " + typeText(s.Items)
	case "object":
		if s.AdditionalProperties != nil && s.AdditionalProperties.Not == nil && len(s.Properties) == 0 {
			return "object of " + typeText(s.AdditionalProperties)
		}
	}
	return t
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
