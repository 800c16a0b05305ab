package embed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // the pure-Go backend of GoMLX ("go")
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/onnx-gomlx/onnx"
	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/loci-dev/loci/internal/errs"
)

// ONNX is a sentence transformer exported to ONNX (model.onnx and
// tokenizer.json, as Hugging Face's optimum or sentence-transformers export
// them), read from a folder the user brings and run in pure Go: the graph
// is converted by onnx-gomlx and executed by GoMLX's simplego backend. A
// text's vector is the model's token embeddings pooled as the folder's
// 1_Pooling/config.json says (the mean over the attention mask, the
// default, or the first token's), L2-normalised. The graph is parsed and
// compiled on the first Embed, not when the provider is made: building a
// provider only stats and hashes files.
type ONNX struct {
	dir       string // the model folder (absolute)
	modelPath string // model.onnx (in dir or dir/onnx)
	tokPath   string
	id        Identity
	qPrefix   string
	dPrefix   string
	pooling   string // mean | cls
	maxLen    int    // tokens per text, special tokens included
	dims      atomic.Int64
	u         usage

	mu      sync.Mutex // guards rt and loadErr (the load); runs are concurrent
	rt      *onnxRuntime
	loadErr error
}

// onnxRuntime is the loaded model: its tokenizer and its GoMLX program.
type onnxRuntime struct {
	tok    *tokenizer.Tokenizer
	exec   *mlctx.Exec // computes the one output used
	rank   int         // 3: token embeddings [batch, seq, dim]; 2: sentence embeddings [batch, dim]
	inputs []string
}

// Bounds of an ONNX folder and of a run.
const (
	maxONNXFile     = 2 << 30 // protobuf's own limit for one message
	maxExternalData = 8 << 30 // one external weights file
	maxSmallJSON    = 1 << 20 // the folder's small config files
	onnxHashSpan    = 1 << 20 // bytes hashed at each end of model.onnx
	onnxMaxTokens   = 512     // tokens per text when the folder says nothing
	onnxBatchTokens = 4096    // batch × padded length of one run
)

// Shape buckets: the Go backend compiles one program per input shape, so
// batches come in these sizes and sequences are padded to these lengths
// (at most 5 × 8 programs per model).
var (
	onnxBatchBuckets = []int{1, 2, 4, 8, 16}
	onnxSeqBuckets   = []int{8, 16, 32, 64, 128, 256, 384, 512}
)

// onnxCache keeps providers by folder, the size and modification time of
// their files, and the prefixes: loading a model costs seconds.
var (
	onnxMu    sync.Mutex
	onnxCache = map[string]*ONNX{}
)

// NewONNX returns the ONNX model in dir. The files are checked and hashed
// here; the graph is loaded on the first Embed. prefixes are the
// configured query and document prefixes (nil: the folder's own prompts).
func NewONNX(dir string, queryPrefix, documentPrefix *string) (*ONNX, error) {
	if dir == "" {
		return nil, errs.New(CodeUnavailable, "embed.provider is onnx but no model folder is set: set embed.model_path in your own config (or LOCI_EMBED_MODEL_PATH) to a folder holding model.onnx and tokenizer.json")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, onnxError(dir, "invalid folder", err)
	}
	tjPath := filepath.Join(abs, "tokenizer.json")
	modelPath := filepath.Join(abs, "model.onnx")
	if _, err := os.Stat(modelPath); err != nil {
		if alt := filepath.Join(abs, "onnx", "model.onnx"); fileExists(alt) {
			modelPath = alt
		}
	}
	key := abs
	for _, p := range []string{modelPath, tjPath} {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, onnxError(abs, "missing "+filepath.Base(p)+" (an ONNX model folder holds model.onnx, or onnx/model.onnx, and tokenizer.json)", err)
		}
		if fi.IsDir() {
			return nil, onnxError(abs, filepath.Base(p)+" is a folder", nil)
		}
		key += fmt.Sprintf("|%d|%d", fi.Size(), fi.ModTime().UnixNano())
	}
	for _, p := range []*string{queryPrefix, documentPrefix} {
		if p == nil {
			key += "|-"
		} else {
			key += "|" + fmt.Sprintf("%q", *p)
		}
	}
	onnxMu.Lock()
	defer onnxMu.Unlock()
	if m, ok := onnxCache[key]; ok {
		return m, nil
	}
	m, err := openONNX(abs, modelPath, tjPath, queryPrefix, documentPrefix)
	if err != nil {
		return nil, err
	}
	if len(onnxCache) >= 4 {
		clear(onnxCache)
	}
	onnxCache[key] = m
	return m, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func onnxError(dir, reason string, cause error) error {
	msg := "the ONNX model in " + dir + " cannot be used: " + reason
	var e *errs.Error
	if cause != nil {
		e = errs.Wrap(cause, CodeUnavailable, msg)
	} else {
		e = errs.New(CodeUnavailable, "%s", msg)
	}
	return e.With("model_path", dir)
}

// folderConfig is what the small JSON files of a sentence-transformers
// folder say.
type folderConfig struct {
	prompts map[string]string
	pooling string
	dims    int
	maxLen  int
}

// readFolderConfig reads config_sentence_transformers.json (prompts),
// 1_Pooling/config.json (pooling and width), sentence_bert_config.json
// (max_seq_length) and config.json (max_position_embeddings, hidden_size).
// Each is optional; a present but unreadable one is an error.
func readFolderConfig(dir string) (folderConfig, error) {
	fc := folderConfig{pooling: "mean", maxLen: onnxMaxTokens}
	var st struct {
		Prompts map[string]string `json:"prompts"`
	}
	if err := readJSONIfPresent(filepath.Join(dir, "config_sentence_transformers.json"), &st); err != nil {
		return fc, err
	}
	fc.prompts = st.Prompts
	var pool struct {
		Dim     int  `json:"word_embedding_dimension"`
		CLS     bool `json:"pooling_mode_cls_token"`
		Mean    bool `json:"pooling_mode_mean_tokens"`
		Max     bool `json:"pooling_mode_max_tokens"`
		MeanSqr bool `json:"pooling_mode_mean_sqrt_len_tokens"`
		Weight  bool `json:"pooling_mode_weightedmean_tokens"`
		Last    bool `json:"pooling_mode_lasttoken"`
	}
	pp := filepath.Join(dir, "1_Pooling", "config.json")
	if err := readJSONIfPresent(pp, &pool); err != nil {
		return fc, err
	}
	n := 0
	for _, b := range []bool{pool.CLS, pool.Mean, pool.Max, pool.MeanSqr, pool.Weight, pool.Last} {
		if b {
			n++
		}
	}
	switch {
	case n == 0:
	case n > 1 || !(pool.CLS || pool.Mean):
		return fc, fmt.Errorf("1_Pooling/config.json: unsupported pooling (supported: exactly one of pooling_mode_mean_tokens, pooling_mode_cls_token)")
	case pool.CLS:
		fc.pooling = "cls"
	}
	fc.dims = pool.Dim
	var cfg struct {
		MaxPos int `json:"max_position_embeddings"`
		Hidden int `json:"hidden_size"`
	}
	if err := readJSONIfPresent(filepath.Join(dir, "config.json"), &cfg); err != nil {
		return fc, err
	}
	if fc.dims == 0 {
		fc.dims = cfg.Hidden
	}
	if cfg.MaxPos > 0 {
		fc.maxLen = min(fc.maxLen, cfg.MaxPos)
	}
	var sb struct {
		MaxSeq int `json:"max_seq_length"`
	}
	if err := readJSONIfPresent(filepath.Join(dir, "sentence_bert_config.json"), &sb); err != nil {
		return fc, err
	}
	if sb.MaxSeq > 0 {
		fc.maxLen = min(fc.maxLen, sb.MaxSeq)
	}
	if fc.dims < 0 || fc.dims > 1<<16 {
		return fc, fmt.Errorf("implausible embedding width %d", fc.dims)
	}
	fc.maxLen = max(fc.maxLen, 2)
	return fc, nil
}

func readJSONIfPresent(path string, v any) error {
	b, err := readCapped(path, maxSmallJSON)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// openONNX reads the folder's configuration and computes the identity.
func openONNX(dir, modelPath, tjPath string, qp, dp *string) (*ONNX, error) {
	fc, err := readFolderConfig(dir)
	if err != nil {
		return nil, onnxError(dir, err.Error(), nil)
	}
	m := &ONNX{dir: dir, modelPath: modelPath, tokPath: tjPath, pooling: fc.pooling, maxLen: fc.maxLen}
	m.qPrefix = fc.prompts["query"]
	for _, k := range []string{"passage", "document", "doc"} {
		if v, ok := fc.prompts[k]; ok {
			m.dPrefix = v
			break
		}
	}
	if qp != nil {
		m.qPrefix = *qp
	}
	if dp != nil {
		m.dPrefix = *dp
	}
	tj, err := readCapped(tjPath, maxTokenizerJSON)
	if err != nil {
		return nil, onnxError(dir, "tokenizer.json", err)
	}
	h := sha256.New()
	h.Write(tj)
	if err := hashEnds(h, modelPath); err != nil {
		return nil, onnxError(dir, "model.onnx", err)
	}
	fmt.Fprintf(h, "|pool=%s|max=%d|q=%q|d=%q", m.pooling, m.maxLen, m.qPrefix, m.dPrefix)
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	m.id = Identity{Provider: "onnx", Model: filepath.Base(dir) + "@" + sum}
	m.dims.Store(int64(fc.dims))
	return m, nil
}

// hashEnds hashes a file's size and its first and last onnxHashSpan bytes.
func hashEnds(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(size))
	h.Write(n[:])
	if _, err := io.CopyN(h, f, min(size, onnxHashSpan)); err != nil {
		return err
	}
	if size > onnxHashSpan {
		off := max(onnxHashSpan, size-onnxHashSpan)
		if _, err := io.Copy(h, io.NewSectionReader(f, off, size-off)); err != nil {
			return err
		}
	}
	return nil
}

// Identity is onnx, the folder's name with a hash of tokenizer.json, of
// model.onnx's size and first and last MiB, of the pooling, the length cap
// and the prefixes; the width comes from the folder's config until the
// model has run, then from its output.
func (m *ONNX) Identity() Identity {
	id := m.id
	id.Dims = int(m.dims.Load())
	return id
}

func (m *ONNX) Usage() Usage { return m.u.snapshot() }

// Prefixes returns the query and document prefixes in use.
func (m *ONNX) Prefixes() (query, document string) { return m.qPrefix, m.dPrefix }

// Embed embeds documents: each text with the document prefix.
func (m *ONNX) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return m.run(ctx, withPrefix(m.dPrefix, texts))
}

// EmbedQuery embeds a query with the query prefix.
func (m *ONNX) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vs, err := m.run(ctx, []string{m.qPrefix + text})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

func withPrefix(p string, texts []string) []string {
	if p == "" {
		return texts
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = p + t
	}
	return out
}

// load parses the tokenizer and the graph once; a failure sticks (a
// changed folder is another cache entry).
func (m *ONNX) load() (*onnxRuntime, error) {
	if m.rt != nil || m.loadErr != nil {
		return m.rt, m.loadErr
	}
	m.rt, m.loadErr = m.loadRuntime()
	return m.rt, m.loadErr
}

func (m *ONNX) loadRuntime() (rt *onnxRuntime, err error) {
	defer func() {
		if r := recover(); r != nil {
			rt, err = nil, onnxError(m.dir, fmt.Sprintf("the ONNX runtime failed while loading: %v", r), nil)
		}
	}()
	tj, err := readCapped(m.tokPath, maxTokenizerJSON)
	if err != nil {
		return nil, onnxError(m.dir, "tokenizer.json", err)
	}
	tok, err := pretrained.FromReader(bytes.NewReader(tj))
	if err != nil {
		return nil, onnxError(m.dir, "unsupported or damaged tokenizer.json", err)
	}
	tok.WithPadding(nil)
	tok.WithTruncation(nil)
	raw, err := readCapped(m.modelPath, maxONNXFile)
	if err != nil {
		return nil, onnxError(m.dir, "model.onnx", err)
	}
	om, err := onnx.Parse(raw)
	if err != nil {
		return nil, onnxError(m.dir, "model.onnx", err)
	}
	raw = nil
	if err := readExternalData(filepath.Dir(m.modelPath), om); err != nil {
		return nil, onnxError(m.dir, "model.onnx external data", err)
	}
	if err := checkTensors(om.Proto.ProtoReflect()); err != nil {
		return nil, onnxError(m.dir, "model.onnx", err)
	}
	rt = &onnxRuntime{tok: tok}
	hasIDs := false
	for _, name := range om.InputsNames {
		switch name {
		case "input_ids":
			hasIDs = true
		case "attention_mask", "token_type_ids", "position_ids":
		default:
			return nil, onnxError(m.dir, fmt.Sprintf("model.onnx has an input %q (supported: input_ids, attention_mask, token_type_ids, position_ids)", name), nil)
		}
		rt.inputs = append(rt.inputs, name)
	}
	if !hasIDs {
		return nil, onnxError(m.dir, "model.onnx has no input_ids input", nil)
	}
	out := -1
	for _, want := range []string{"last_hidden_state", "token_embeddings", "sentence_embedding"} {
		if i := slices.Index(om.OutputsNames, want); i >= 0 {
			out = i
			break
		}
	}
	if out < 0 && len(om.OutputsNames) > 0 {
		out = 0
	}
	if out < 0 {
		return nil, onnxError(m.dir, "model.onnx has no output", nil)
	}
	outName := om.OutputsNames[out]
	rt.rank = len(om.OutputsShapes[out].Dimensions)
	if rt.rank != 2 && rt.rank != 3 {
		return nil, onnxError(m.dir, fmt.Sprintf("model.onnx output %q has shape %v; want [batch, sequence, dims] token embeddings or [batch, dims] sentence embeddings", outName, om.OutputsShapes[out].Dimensions), nil)
	}
	ctx := mlctx.New().Reuse()
	if err := om.VariablesToContext(ctx); err != nil {
		return nil, onnxError(m.dir, "model.onnx weights", err)
	}
	// ops_sequential: simplego's default runs independent operations in
	// parallel, and that path has a data race (go test -race, gomlx
	// v0.26.0); each operation still uses the cores.
	be, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		return nil, onnxError(m.dir, "the Go backend", err)
	}
	names := slices.Clone(rt.inputs)
	exec, err := mlctx.NewExec(be, ctx, func(ctx *mlctx.Context, inputs []*graph.Node) []*graph.Node {
		byName := make(map[string]*graph.Node, len(inputs))
		for i, n := range names {
			byName[n] = inputs[i]
		}
		return om.CallGraph(ctx, inputs[0].Graph(), byName, outName)
	})
	if err != nil {
		be.Finalize()
		return nil, onnxError(m.dir, "model.onnx", err)
	}
	exec.SetMaxCache(len(onnxBatchBuckets) * len(seqBuckets(m.maxLen)))
	rt.exec = exec
	return rt, nil
}

// readExternalData loads the weights an ONNX file keeps in other files
// (data_location EXTERNAL: location, offset, length), which must lie in
// the model's folder.
func readExternalData(dir string, om *onnx.Model) error {
	files := map[string][]byte{}
	for _, tp := range om.Proto.Graph.GetInitializer() {
		if tp.GetDataLocation() != 1 {
			continue
		}
		var loc string
		off, length := int64(0), int64(-1)
		for _, e := range tp.GetExternalData() {
			var err error
			switch e.GetKey() {
			case "location":
				loc = e.GetValue()
			case "offset":
				off, err = strconv.ParseInt(e.GetValue(), 10, 64)
			case "length":
				length, err = strconv.ParseInt(e.GetValue(), 10, 64)
			}
			if err != nil {
				return fmt.Errorf("tensor %q: %s: %w", tp.GetName(), e.GetKey(), err)
			}
		}
		if loc == "" || !filepath.IsLocal(loc) {
			return fmt.Errorf("tensor %q: external data location %q is not a file in the model's folder", tp.GetName(), loc)
		}
		b, ok := files[loc]
		if !ok {
			var err error
			if b, err = readCapped(filepath.Join(dir, loc), maxExternalData); err != nil {
				return err
			}
			files[loc] = b
		}
		if length < 0 {
			length = int64(len(b)) - off
		}
		if off < 0 || length < 0 || off+length > int64(len(b)) {
			return fmt.Errorf("tensor %q: bytes %d+%d outside %s (%d bytes)", tp.GetName(), off, length, loc, len(b))
		}
		tp.RawData = b[off : off+length]
		tp.DataLocation = 0
		tp.ExternalData = nil
	}
	return nil
}

// onnxElemSize is the byte size of an ONNX element type (0: unsupported).
var onnxElemSize = map[int32]int64{1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}

// checkTensors checks every tensor of the model (initializers, Constant
// attributes, subgraphs) before anything is allocated for it: its element
// count must fit and match the data it carries. The converter allocates
// by the declared dimensions, so a damaged file declaring 2^40 elements
// would otherwise exhaust memory. Integer attributes (axes, perms, sizes)
// are bounded for the same reason (a LayerNormalization axis of -2^40
// makes the converter allocate 2^40 axes).
func checkTensors(msg protoreflect.Message) error {
	switch msg.Descriptor().Name() {
	case "TensorProto":
		return checkTensor(msg)
	case "NodeProto":
		if err := checkAttributes(msg); err != nil {
			return err
		}
	}
	var err error
	msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind {
			return true
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = checkTensors(l.Get(i).Message())
			}
		case fd.IsMap():
		default:
			err = checkTensors(v.Message())
		}
		return err == nil
	})
	return err
}

// maxIntAttr bounds the integer attributes of operators other than
// Constant (whose value_int may legitimately be INT64_MAX).
const maxIntAttr = 1 << 20

func checkAttributes(node protoreflect.Message) error {
	fields := node.Descriptor().Fields()
	op := node.Get(fields.ByName("op_type")).String()
	if op == "Constant" {
		return nil
	}
	attrs := node.Get(fields.ByName("attribute")).List()
	for i := range attrs.Len() {
		a := attrs.Get(i).Message()
		af := a.Descriptor().Fields()
		name := a.Get(af.ByName("name")).String()
		vals := []int64{a.Get(af.ByName("i")).Int()}
		ints := a.Get(af.ByName("ints")).List()
		for j := range ints.Len() {
			vals = append(vals, ints.Get(j).Int())
		}
		for _, v := range vals {
			if v > maxIntAttr || v < -maxIntAttr {
				return fmt.Errorf("operator %s: attribute %s = %d is out of range", op, name, v)
			}
		}
	}
	return nil
}

func checkTensor(t protoreflect.Message) error {
	fields := t.Descriptor().Fields()
	get := func(name protoreflect.Name) protoreflect.Value { return t.Get(fields.ByName(name)) }
	name := get("name").String()
	n := int64(1)
	dims := get("dims").List()
	for i := range dims.Len() {
		d := dims.Get(i).Int()
		if d < 0 || (d > 0 && n > (1<<34)/d) {
			return fmt.Errorf("tensor %q: implausible dimensions", name)
		}
		n *= d
	}
	dt := int32(get("data_type").Int())
	if dt == 8 { // strings: not used by text models' weights
		return nil
	}
	size := onnxElemSize[dt]
	if size == 0 {
		return fmt.Errorf("tensor %q: unsupported element type %d", name, dt)
	}
	if raw := get("raw_data").Bytes(); len(raw) > 0 {
		if int64(len(raw)) != n*size {
			return fmt.Errorf("tensor %q: %d bytes of data for %d elements of %d bytes", name, len(raw), n, size)
		}
		return nil
	}
	if get("data_location").Enum() == 1 {
		return fmt.Errorf("tensor %q: external data was not read", name)
	}
	count := 0
	for _, f := range []protoreflect.Name{"float_data", "int32_data", "int64_data", "double_data", "uint64_data"} {
		count += get(f).List().Len()
	}
	// float16, bfloat16, int8/16 and the like pack into int32_data one
	// element per value; complex types are not used by text models.
	if int64(count) != n {
		return fmt.Errorf("tensor %q: %d values for %d elements", name, count, n)
	}
	return nil
}

// seqBuckets are the padded lengths up to maxLen (maxLen the last).
func seqBuckets(maxLen int) []int {
	var out []int
	for _, b := range onnxSeqBuckets {
		if b < maxLen {
			out = append(out, b)
		}
	}
	return append(out, maxLen)
}

// encoded is one tokenized text.
type encoded struct {
	ids, types, mask []uint32
}

// tokenize encodes a text with special tokens and cuts it to maxLen,
// keeping the closing special token as the tokenizer's truncation would.
func (rt *onnxRuntime) tokenize(text string, maxLen int) (e encoded, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the tokenizer failed: %v", r)
		}
	}()
	// Tokenizing costs the whole text; past maxLen × 32 bytes no token
	// would be kept (tokens are far shorter), so cut there first, on a
	// character boundary.
	if limit := maxLen * 32; len(text) > limit {
		text = strings.ToValidUTF8(text[:limit], "")
	}
	enc, err := rt.tok.EncodeSingle(text, true)
	if err != nil {
		return e, err
	}
	n := len(enc.Ids)
	e.ids, e.types, e.mask = make([]uint32, 0, min(n, maxLen)), make([]uint32, 0, min(n, maxLen)), make([]uint32, 0, min(n, maxLen))
	for i := range n {
		e.ids = append(e.ids, uint32(enc.Ids[i]))
		e.types = append(e.types, uint32(at(enc.TypeIds, i)))
		e.mask = append(e.mask, uint32(at(enc.AttentionMask, i, 1)))
	}
	if n > maxLen {
		last := n - 1
		closing := at(enc.SpecialTokenMask, last) == 1
		e.ids, e.types, e.mask = e.ids[:maxLen], e.types[:maxLen], e.mask[:maxLen]
		if closing {
			e.ids[maxLen-1], e.types[maxLen-1], e.mask[maxLen-1] = uint32(enc.Ids[last]), uint32(at(enc.TypeIds, last)), 1
		}
	}
	if len(e.ids) == 0 {
		// A tokenizer without special tokens and an empty text: one pad.
		e.ids, e.types, e.mask = []uint32{0}, []uint32{0}, []uint32{0}
	}
	return e, nil
}

func at(s []int, i int, def ...int) int {
	if i < len(s) {
		return s[i]
	}
	if len(def) > 0 {
		return def[0]
	}
	return 0
}

// run embeds texts as they are: tokenized, sorted by length (less
// padding), in batches of the bucket sizes, checking ctx between batches.
func (m *ONNX) run(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// GoMLX executables may run concurrently: a query does not wait for
	// an indexing batch.
	m.mu.Lock()
	rt, err := m.load()
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	enc := make([]encoded, len(texts))
	var tokens int64
	for i, t := range texts {
		if enc[i], err = rt.tokenize(t, m.maxLen); err != nil {
			return nil, onnxError(m.dir, "tokenizing", err)
		}
		tokens += int64(len(enc[i].ids))
	}
	order := make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(enc[order[a]].ids) < len(enc[order[b]].ids) })
	buckets := seqBuckets(m.maxLen)
	for start := 0; start < len(order); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := 1
		for _, b := range onnxBatchBuckets {
			if b > len(order)-start {
				break
			}
			seq := padTo(len(enc[order[start+b-1]].ids), buckets)
			if b*seq <= onnxBatchTokens {
				n = b
			}
		}
		batch := make([]encoded, n)
		for j := range n {
			batch[j] = enc[order[start+j]]
		}
		vs, err := m.runBatch(rt, batch, padTo(len(batch[n-1].ids), buckets))
		if err != nil {
			return nil, err
		}
		for j, v := range vs {
			out[order[start+j]] = v
		}
		start += n
	}
	m.u.requests.Add(1)
	m.u.texts.Add(int64(len(texts)))
	m.u.tokens.Add(tokens)
	return out, nil
}

func padTo(n int, buckets []int) int {
	for _, b := range buckets {
		if n <= b {
			return b
		}
	}
	return buckets[len(buckets)-1]
}

// runBatch runs the graph on one batch and pools its output. The inputs
// are int64 [batch, padded length]: the ids (0 past the text), the
// attention mask (0 past the text), the token types and the positions
// 0, 1, … (as a BERT export computes them when they are not given).
func (m *ONNX) runBatch(rt *onnxRuntime, batch []encoded, seq int) (vs [][]float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			vs, err = nil, onnxError(m.dir, fmt.Sprintf("the ONNX runtime failed: %v", r), nil)
		}
	}()
	b := len(batch)
	inputs := make([]*tensors.Tensor, len(rt.inputs))
	for k, name := range rt.inputs {
		data := make([]int64, b*seq)
		for i, e := range batch {
			row := data[i*seq : (i+1)*seq]
			for p := range row {
				switch name {
				case "input_ids":
					if p < len(e.ids) {
						row[p] = int64(e.ids[p])
					}
				case "attention_mask":
					if p < len(e.mask) {
						row[p] = int64(e.mask[p])
					}
				case "token_type_ids":
					if p < len(e.types) {
						row[p] = int64(e.types[p])
					}
				case "position_ids":
					row[p] = int64(p)
				}
			}
		}
		inputs[k] = tensors.FromFlatDataAndDimensions(data, b, seq)
	}
	defer func() {
		for _, t := range inputs {
			_ = t.FinalizeAll()
		}
	}()
	outs, err := rt.exec.Exec(inputs)
	if err != nil {
		return nil, onnxError(m.dir, "running the model", err)
	}
	defer func() {
		for _, t := range outs {
			_ = t.FinalizeAll()
		}
	}()
	if len(outs) != 1 {
		return nil, onnxError(m.dir, fmt.Sprintf("the model returned %d outputs", len(outs)), nil)
	}
	t := outs[0]
	dims := t.Shape().Dimensions
	var poolErr error
	if err := tensors.ConstFlatData(t, func(flat []float32) {
		vs, poolErr = m.pool(rt, batch, dims, flat)
	}); err != nil {
		return nil, onnxError(m.dir, "reading the output (want float32)", err)
	}
	if poolErr != nil {
		return nil, poolErr
	}
	return vs, nil
}

// pool turns the output of one batch into one unit vector per text.
func (m *ONNX) pool(rt *onnxRuntime, batch []encoded, dims []int, flat []float32) ([][]float32, error) {
	if len(dims) != rt.rank || dims[0] < len(batch) || dims[len(dims)-1] <= 0 {
		return nil, onnxError(m.dir, fmt.Sprintf("the model's output has shape %v for a batch of %d", dims, len(batch)), nil)
	}
	d := dims[len(dims)-1]
	if want := int(m.dims.Load()); want > 0 && want != d {
		return nil, onnxError(m.dir, fmt.Sprintf("the model's output has %d dimensions but the folder's config says %d", d, want), nil)
	}
	out := make([][]float32, len(batch))
	if rt.rank == 2 {
		for i := range batch {
			out[i] = Normalize(slices.Clone(flat[i*d : (i+1)*d]))
		}
	} else {
		seq := dims[1]
		for i, e := range batch {
			if len(e.ids) > seq {
				return nil, onnxError(m.dir, fmt.Sprintf("the model's output has %d positions for %d tokens", seq, len(e.ids)), nil)
			}
			v := make([]float32, d)
			if m.pooling == "cls" {
				copy(v, flat[(i*seq)*d:(i*seq+1)*d])
			} else {
				var n float32
				for p := range e.ids {
					if e.mask[p] == 0 {
						continue
					}
					row := flat[(i*seq+p)*d : (i*seq+p+1)*d]
					for k, x := range row {
						v[k] += x
					}
					n++
				}
				if n > 0 {
					for k := range v {
						v[k] /= n
					}
				}
			}
			out[i] = Normalize(v)
		}
	}
	m.dims.Store(int64(d))
	return out, nil
}
