// Package onnxtest builds tiny sentence-transformer folders for tests: an
// ONNX graph encoded by hand (protobuf wire format, onnx.proto3 field
// numbers) and a WordPiece tokenizer.json as a BERT export has them. No
// download, a few KB.
package onnxtest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// ONNX element types.
const (
	Float = 1
	Int64 = 7
)

func pbBytes(b []byte, field protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func pbString(b []byte, field protowire.Number, s string) []byte {
	return pbBytes(b, field, []byte(s))
}

func pbVarint(b []byte, field protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// ValueInfo is a ValueInfoProto of a tensor of the element type; a dim is
// a name (string, dim_param) or a size (int, dim_value).
func ValueInfo(name string, elem int, dims ...any) []byte {
	var shape []byte
	for _, d := range dims {
		var dim []byte
		switch d := d.(type) {
		case string:
			dim = pbString(nil, 2, d)
		case int:
			dim = pbVarint(nil, 1, uint64(d))
		}
		shape = pbBytes(shape, 1, dim)
	}
	tensor := pbVarint(nil, 1, uint64(elem))
	tensor = pbBytes(tensor, 2, shape)
	typ := pbBytes(nil, 1, tensor)
	vi := pbString(nil, 1, name)
	return pbBytes(vi, 2, typ)
}

// FloatTensor is a TensorProto of float32 rows (raw_data).
func FloatTensor(name string, rows [][]float32) []byte {
	t := pbVarint(nil, 1, uint64(len(rows)))
	t = pbVarint(t, 1, uint64(len(rows[0])))
	t = pbVarint(t, 2, Float)
	t = pbString(t, 8, name)
	raw := make([]byte, 0, 4*len(rows)*len(rows[0]))
	for _, r := range rows {
		for _, x := range r {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
		}
	}
	return pbBytes(t, 9, raw)
}

// Node is a NodeProto with INT attributes.
func Node(op string, inputs, outputs []string, attrs map[string]int) []byte {
	var n []byte
	for _, in := range inputs {
		n = pbString(n, 1, in)
	}
	for _, out := range outputs {
		n = pbString(n, 2, out)
	}
	n = pbString(n, 3, op+"_"+outputs[0])
	n = pbString(n, 4, op)
	for k, v := range attrs {
		a := pbString(nil, 1, k)
		a = pbVarint(a, 3, uint64(v))
		a = pbVarint(a, 20, 2) // AttributeType INT
		n = pbBytes(n, 5, a)
	}
	return n
}

// Graph encodes a ModelProto (IR 8, opset 13) of one graph.
func Graph(nodes, inits, inputs, outputs [][]byte) []byte {
	var g []byte
	for _, n := range nodes {
		g = pbBytes(g, 1, n)
	}
	g = pbString(g, 2, "test")
	for _, t := range inits {
		g = pbBytes(g, 5, t)
	}
	for _, v := range inputs {
		g = pbBytes(g, 11, v)
	}
	for _, v := range outputs {
		g = pbBytes(g, 12, v)
	}
	m := pbVarint(nil, 1, 8) // ir_version
	m = pbString(m, 2, "loci-test")
	m = pbBytes(m, 7, g)
	opset := pbVarint(pbString(nil, 1, ""), 2, 13)
	return pbBytes(m, 8, opset)
}

// BertInputs are the three inputs of a BERT export: input_ids,
// attention_mask and token_type_ids, int64 [batch, sequence].
func BertInputs() [][]byte {
	return [][]byte{
		ValueInfo("input_ids", Int64, "batch", "sequence"),
		ValueInfo("attention_mask", Int64, "batch", "sequence"),
		ValueInfo("token_type_ids", Int64, "batch", "sequence"),
	}
}

// GatherModel is a sentence transformer whose token embeddings are rows
// of a table: input_ids → Gather(table) → last_hidden_state [batch,
// sequence, dims]. Its mean-pooled output is the masked mean of the rows.
func GatherModel(rows [][]float32) []byte {
	return Graph(
		[][]byte{Node("Gather", []string{"embeddings", "input_ids"}, []string{"last_hidden_state"}, map[string]int{"axis": 0})},
		[][]byte{FloatTensor("embeddings", rows)},
		BertInputs(),
		[][]byte{ValueInfo("last_hidden_state", Float, "batch", "sequence", len(rows[0]))},
	)
}

// TokenizerJSON is a WordPiece tokenizer.json as a BERT export has it
// (BertNormalizer lower-casing, BertPreTokenizer, [CLS] … [SEP] by
// TemplateProcessing); a token's id is its index in vocab, which must
// hold [PAD], [UNK], [CLS] and [SEP].
func TokenizerJSON(vocab []string) []byte {
	ids := map[string]int{}
	for i, t := range vocab {
		ids[t] = i
	}
	special := func(tok string) map[string]any {
		return map[string]any{"id": ids[tok], "content": tok, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
	}
	tok := func(id string, typ int) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": typ}}
	}
	seq := func(id string, typ int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typ}}
	}
	tj := map[string]any{
		"version":       "1.0",
		"truncation":    nil,
		"padding":       nil,
		"added_tokens":  []any{special("[PAD]"), special("[UNK]"), special("[CLS]"), special("[SEP]")},
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0)},
			"pair":   []any{tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0), seq("B", 1), tok("[SEP]", 1)},
			"special_tokens": map[string]any{
				"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{ids["[CLS]"]}, "tokens": []string{"[CLS]"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{ids["[SEP]"]}, "tokens": []string{"[SEP]"}},
			},
		},
		"decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model":   map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": ids},
	}
	b, err := json.Marshal(tj)
	if err != nil {
		panic(err)
	}
	return b
}

// WriteFolder writes a model folder: model.onnx, tokenizer.json of vocab,
// and extra files (path relative to dir → content).
func WriteFolder(t testing.TB, dir string, model []byte, vocab []string, extra map[string]string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir, 0o755))
	must(os.WriteFile(filepath.Join(dir, "model.onnx"), model, 0o644))
	must(os.WriteFile(filepath.Join(dir, "tokenizer.json"), TokenizerJSON(vocab), 0o644))
	for p, c := range extra {
		must(os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		must(os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644))
	}
}

// Int64Tensor is a 1-D TensorProto of int64 values (a shape or axes).
func Int64Tensor(name string, vals ...int64) []byte {
	t := pbVarint(nil, 1, uint64(len(vals)))
	t = pbVarint(t, 2, Int64)
	t = pbString(t, 8, name)
	var raw []byte
	for _, v := range vals {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
	}
	return pbBytes(t, 9, raw)
}

// FloatTensorFlat is a TensorProto of float32 data of the given dims.
func FloatTensorFlat(name string, data []float32, dims ...int) []byte {
	var t []byte
	for _, d := range dims {
		t = pbVarint(t, 1, uint64(d))
	}
	t = pbVarint(t, 2, Float)
	t = pbString(t, 8, name)
	raw := make([]byte, 0, 4*len(data))
	for _, x := range data {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
	}
	return pbBytes(t, 9, raw)
}

// BertShape is the shape of a BERT encoder.
type BertShape struct {
	Vocab, Hidden, Layers, Heads, FFN int
}

// MiniLML6 is all-MiniLM-L6-v2's shape.
var MiniLML6 = BertShape{Vocab: 30522, Hidden: 384, Layers: 6, Heads: 12, FFN: 1536}

// BertModel is a BERT-style encoder of the shape with random weights
// (seeded): word embeddings, LayerNorm, then per layer multi-head
// self-attention masked by attention_mask, residual + LayerNorm, a GELU
// feed-forward block, residual + LayerNorm. It has no position or token
// type embeddings (token_type_ids is an unused input). Its vectors mean
// nothing; it costs what a real model of the shape costs to run. Needs
// opset 17 (LayerNormalization), which Graph declares as 13: callers use
// BertModel's own header.
func BertModel(s BertShape, seed uint64) []byte {
	rng := seed | 1
	rnd := func(n int, scale float32) []float32 {
		out := make([]float32, n)
		for i := range out {
			// xorshift64*: fast, deterministic.
			rng ^= rng >> 12
			rng ^= rng << 25
			rng ^= rng >> 27
			u := float32((rng*2685821657736338717)>>40) / float32(1<<24)
			out[i] = (2*u - 1) * scale
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	h, dh := s.Hidden, s.Hidden/s.Heads
	var nodes, inits [][]byte
	node := func(op string, in []string, out string, attrs map[string]int) string {
		nodes = append(nodes, Node(op, in, []string{out}, attrs))
		return out
	}
	floatNode := func(op string, in []string, out string, fattrs map[string]float32, iattrs map[string]int) string {
		n := Node(op, in, []string{out}, iattrs)
		for k, v := range fattrs {
			a := pbString(nil, 1, k)
			a = protowire.AppendTag(a, 2, protowire.Fixed32Type)
			a = protowire.AppendFixed32(a, math.Float32bits(v))
			a = pbVarint(a, 20, 1) // AttributeType FLOAT
			n = pbBytes(n, 5, a)
		}
		nodes = append(nodes, n)
		return out
	}
	perm := func(op string, in, out string, p ...int64) string {
		n := Node(op, []string{in}, []string{out}, nil)
		a := pbString(nil, 1, "perm")
		for _, v := range p {
			a = pbVarint(a, 8, uint64(v))
		}
		a = pbVarint(a, 20, 7) // AttributeType INTS
		nodes = append(nodes, pbBytes(n, 5, a))
		return out
	}
	weight := func(name string, data []float32, dims ...int) string {
		inits = append(inits, FloatTensorFlat(name, data, dims...))
		return name
	}
	inits = append(inits,
		Int64Tensor("shape_heads", 0, 0, int64(s.Heads), int64(dh)),
		Int64Tensor("shape_hidden", 0, 0, int64(h)),
		Int64Tensor("axes_12", 1, 2),
		FloatTensorFlat("one", []float32{1}),
		FloatTensorFlat("neg_big", []float32{-10000}),
		FloatTensorFlat("scale", []float32{1 / float32(math.Sqrt(float64(dh)))}),
		FloatTensorFlat("half", []float32{0.5}),
		FloatTensorFlat("inv_sqrt2", []float32{1 / math.Sqrt2}),
	)
	ln := func(x, name string) string {
		return floatNode("LayerNormalization", []string{x, weight(name+".g", ones(h), h), weight(name+".b", make([]float32, h), h)}, name+".out", map[string]float32{"epsilon": 1e-12}, map[string]int{"axis": -1})
	}
	linear := func(x, name string, in, out int) string {
		y := node("MatMul", []string{x, weight(name+".w", rnd(in*out, 0.08), in, out)}, name+".mm", nil)
		return node("Add", []string{y, weight(name+".b", rnd(out, 0.02), out)}, name+".out", nil)
	}
	x := node("Gather", []string{weight("word_embeddings", rnd(s.Vocab*h, 1), s.Vocab, h), "input_ids"}, "emb", map[string]int{"axis": 0})
	x = ln(x, "emb_ln")
	// Mask bias [batch, 1, 1, seq]: (1 − mask) × −10000.
	m := node("Cast", []string{"attention_mask"}, "mask_f", map[string]int{"to": Float})
	m = node("Unsqueeze", []string{m, "axes_12"}, "mask_u", nil)
	m = node("Sub", []string{"one", m}, "mask_inv", nil)
	m = node("Mul", []string{m, "neg_big"}, "mask_bias", nil)
	for l := range s.Layers {
		p := fmt.Sprintf("l%d.", l)
		heads := func(name string) string {
			y := linear(x, p+name, h, h)
			y = node("Reshape", []string{y, "shape_heads"}, p+name+".r", nil)
			return perm("Transpose", y, p+name+".t", 0, 2, 1, 3) // [b, heads, seq, dh]
		}
		q, k, v := heads("q"), heads("k"), heads("v")
		kt := perm("Transpose", k, p+"kt", 0, 1, 3, 2)
		sc := node("MatMul", []string{q, kt}, p+"scores", nil)
		sc = node("Mul", []string{sc, "scale"}, p+"scaled", nil)
		sc = node("Add", []string{sc, m}, p+"masked", nil)
		sc = node("Softmax", []string{sc}, p+"probs", map[string]int{"axis": -1})
		ctx := node("MatMul", []string{sc, v}, p+"ctx", nil)
		ctx = perm("Transpose", ctx, p+"ctx.t", 0, 2, 1, 3)
		ctx = node("Reshape", []string{ctx, "shape_hidden"}, p+"ctx.r", nil)
		a := linear(ctx, p+"attn_out", h, h)
		x = ln(node("Add", []string{a, x}, p+"res1", nil), p+"ln1")
		f := linear(x, p+"ffn1", h, s.FFN)
		g := node("Mul", []string{f, "inv_sqrt2"}, p+"g1", nil)
		g = node("Erf", []string{g}, p+"g2", nil)
		g = node("Add", []string{g, "one"}, p+"g3", nil)
		g = node("Mul", []string{g, "half"}, p+"g4", nil)
		g = node("Mul", []string{f, g}, p+"gelu", nil)
		f = linear(g, p+"ffn2", s.FFN, h)
		x = ln(node("Add", []string{f, x}, p+"res2", nil), p+"ln2")
	}
	x = node("Identity", []string{x}, "last_hidden_state", nil)
	model := Graph(nodes, inits, BertInputs(), [][]byte{ValueInfo("last_hidden_state", Float, "batch", "sequence", h)})
	// Graph declares opset 13; LayerNormalization needs 17: append a
	// second opset_import for the default domain is not allowed, so patch
	// the version by re-encoding the trailing opset entry.
	opset13 := pbBytes(nil, 8, pbVarint(pbString(nil, 1, ""), 2, 13))
	opset17 := pbBytes(nil, 8, pbVarint(pbString(nil, 1, ""), 2, 17))
	return append(model[:len(model)-len(opset13)], opset17...)
}

// FloatTensorExternal is a TensorProto of float32 rows whose data lives in
// another file (data_location EXTERNAL) at location and offset; it returns
// the proto and the bytes to write there.
func FloatTensorExternal(name string, rows [][]float32, location string, offset int) (proto, data []byte) {
	t := pbVarint(nil, 1, uint64(len(rows)))
	t = pbVarint(t, 1, uint64(len(rows[0])))
	t = pbVarint(t, 2, Float)
	t = pbString(t, 8, name)
	for _, kv := range [][2]string{{"location", location}, {"offset", fmt.Sprint(offset)}, {"length", fmt.Sprint(4 * len(rows) * len(rows[0]))}} {
		t = pbBytes(t, 13, pbString(pbString(nil, 1, kv[0]), 2, kv[1]))
	}
	t = pbVarint(t, 14, 1) // DataLocation EXTERNAL
	for _, r := range rows {
		for _, x := range r {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
		}
	}
	return t, data
}

// Int64Scalar is a 0-D TensorProto of one int64.
func Int64Scalar(name string, v int64) []byte {
	t := pbVarint(nil, 2, Int64)
	t = pbString(t, 8, name)
	return pbBytes(t, 9, binary.LittleEndian.AppendUint64(nil, uint64(v)))
}
