package logseq

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
)

// BlockInfo is one Logseq block without its children.
type BlockInfo struct {
	UUID       string            `json:"uuid,omitempty" jsonschema:"the block's id:: uuid, when it has one (use it with get_block or ((uuid)) references)"`
	Content    string            `json:"content" jsonschema:"the block text without the bullet and property lines"`
	Properties map[string]string `json:"properties,omitempty" jsonschema:"the block's key:: value properties (id excluded)"`
	Line       int               `json:"line" jsonschema:"1-based line of the block's bullet"`
	// MoreChildren counts children left out by the depth limit.
	MoreChildren int `json:"more_children,omitempty" jsonschema:"number of child blocks not shown because of the depth limit"`
}

// BlockNode is a block with its nested children.
type BlockNode struct {
	BlockInfo
	Children []BlockNode `json:"children,omitempty"`
}

var (
	schemaOnce sync.Once
	schemaMap  map[reflect.Type]*jsonschema.Schema
)

// typeSchemas holds the schemas of types the generator cannot derive on its
// own: BlockNode is recursive, so its children are described by hand
// (Def.TypeSchemas of get_page and get_block).
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	schemaOnce.Do(func() {
		s, err := jsonschema.For[BlockInfo](nil)
		if err != nil {
			panic("logseq: BlockInfo schema: " + err.Error())
		}
		s.Properties["children"] = &jsonschema.Schema{
			Type:        "array",
			Description: "child blocks, each of this same shape (uuid, content, properties, line, more_children, children)",
			Items:       &jsonschema.Schema{Type: "object"},
		}
		s.PropertyOrder = append(s.PropertyOrder, "children")
		schemaMap = map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[BlockNode](): s}
	})
	return schemaMap
}

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func cleanUUID(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimSuffix(s, "))"), "((")
	return strings.TrimSpace(s)
}

// checkUUID accepts a block uuid, bare or as a ((reference)).
func checkUUID(u string) error {
	if !uuidRe.MatchString(cleanUUID(u)) {
		return errs.New(errs.CodeInvalidInput, "%q is not a block uuid (like 6745a1b2-0000-4000-8000-000000000001)", u).With("uuid", u)
	}
	return nil
}

func checkDepth(d int) error {
	if d < 0 || d > 100 {
		return errs.New(errs.CodeInvalidInput, "depth must be between 1 and 100").With("depth", d)
	}
	return nil
}

// blockTree builds the nested children of parent (-1 for the top level), down
// to depth levels (0 = all).
func blockTree(blocks []index.BlockRow, parent, depth int) []BlockNode {
	kids := map[int][]int{}
	for i, b := range blocks {
		kids[b.ParentSeq] = append(kids[b.ParentSeq], i)
	}
	var build func(p, level int) []BlockNode
	build = func(p, level int) []BlockNode {
		out := []BlockNode{}
		for _, i := range kids[p] {
			b := blocks[i]
			n := BlockNode{BlockInfo: BlockInfo{UUID: b.UUID, Content: b.Content, Properties: blockProps(b), Line: b.Line}}
			if depth == 0 || level < depth {
				n.Children = build(b.Seq, level+1)
				if len(n.Children) == 0 {
					n.Children = nil
				}
			} else {
				n.MoreChildren = len(kids[b.Seq])
			}
			out = append(out, n)
		}
		return out
	}
	return build(parent, 1)
}

func blockProps(b index.BlockRow) map[string]string {
	if len(b.Properties) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range b.Properties {
		if k == "id" && strings.EqualFold(v, b.UUID) {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func preview(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j]) + "…"
		}
		i++
	}
	return s
}

func writeBlocks(b *strings.Builder, nodes []BlockNode, level int) {
	for _, n := range nodes {
		indent := strings.Repeat("  ", level)
		content := strings.ReplaceAll(n.Content, "\n", "\n"+indent+"  ")
		fmt.Fprintf(b, "%s- %s", indent, content)
		if n.UUID != "" {
			fmt.Fprintf(b, "  ((%s))", n.UUID)
		}
		if n.MoreChildren > 0 {
			fmt.Fprintf(b, "  [+%d]", n.MoreChildren)
		}
		b.WriteString("\n")
		writeBlocks(b, n.Children, level+1)
	}
}
