// Package telemetry holds what loci uses to be watched from outside: the
// per-vault calls log (NDJSON, one line per dispatched call), the
// Prometheus registry behind /metrics, and the OpenTelemetry tracer that
// is set up only when an OTLP endpoint is configured. The dispatch
// pipeline (internal/ops, observe.go) feeds all three; this package knows
// nothing of operations or vaults beyond the names it is handed.
package telemetry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/safefs"
)

// CallsLogName is the calls log's file name inside a vault's index folder;
// rotation keeps one older file beside it (CallsLogName + ".1").
const CallsLogName = "calls.log"

// Defaults of the calls log.
const (
	DefaultCallsLogMaxBytes = 16 << 20
	DefaultCallsLogQueue    = 4096
	DefaultCallsLogInterval = 100 * time.Millisecond
	// maxBatch bounds the lines the writer takes from the queue at once.
	maxBatch = 256
	// maxVaultName clips a vault name a caller gave that names no served
	// vault (it is the caller's input).
	maxVaultName = 128
)

// CallRecord is one line of the calls log: who called which operation on
// which vault, how it ended, how long it took and how much it returned.
// It never holds arguments, results, note text, prompts or tokens: the
// arguments only as the SHA-256 of their canonical JSON.
type CallRecord struct {
	Time       time.Time `json:"time"`
	Principal  string    `json:"principal"`
	Via        string    `json:"via,omitempty"`
	Surface    string    `json:"surface"`
	Session    string    `json:"session,omitempty"`
	Op         string    `json:"op"`
	Vault      string    `json:"vault"`
	ArgsSHA256 string    `json:"args_sha256"`
	Code       string    `json:"code"` // "" on success
	DurationMs float64   `json:"duration_ms"`
	BytesOut   int       `json:"bytes_out"`
}

// Placement is where a call's line goes: the vault it names and that
// vault's index folder.
type Placement struct {
	Vault string
	Dir   safefs.Loc
}

// CallsLogOptions configure a CallsLog.
type CallsLogOptions struct {
	// MaxBytes rotates calls.log to calls.log.1 before a line would take
	// it past this size (default 16 MiB).
	MaxBytes int64
	// Queue bounds the lines waiting for the writer (default 4096); a
	// line that finds the queue full is dropped and counted.
	Queue int
	// Interval is how often the writer wakes to write what is queued
	// (default 100 ms); a queue half full wakes it at once.
	Interval time.Duration
	// Place picks a call's vault and folder from its arguments (the
	// "vault" field, else the default vault); false drops the line.
	Place func(args []byte) (Placement, bool)
	// OnError, when set, hears about lines that could not be written
	// (a link planted at calls.log, a full disk). Called from the writer.
	OnError func(error)
}

// CallsLog appends call records to per-vault NDJSON files from one writer
// goroutine, so that a call pays only for a copy of its arguments and a
// send on a buffered channel: hashing, encoding, rotation and the writes
// happen off the caller's path, in batches (the writer wakes every
// Interval, or when the queue is half full, not once per call). Flush and
// Close write everything queued before they return.
type CallsLog struct {
	opt     CallsLogOptions
	mu      sync.RWMutex // guards closed against sends after Close
	closed  bool
	queue   chan callEntry
	nudge   chan struct{}
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Int64
	written atomic.Int64
	failed  atomic.Int64
}

type callEntry struct {
	rec  CallRecord
	args []byte
}

// NewCallsLog starts the writer.
func NewCallsLog(opt CallsLogOptions) *CallsLog {
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultCallsLogMaxBytes
	}
	if opt.Queue <= 0 {
		opt.Queue = DefaultCallsLogQueue
	}
	if opt.Interval <= 0 {
		opt.Interval = DefaultCallsLogInterval
	}
	l := &CallsLog{opt: opt, queue: make(chan callEntry, opt.Queue), nudge: make(chan struct{}, 1),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// Log queues one call's line. args are the call's arguments as sent; they
// are copied, hashed by the writer and never written. It never blocks: a
// full queue (or a closed log) drops the line and counts it.
func (l *CallsLog) Log(rec CallRecord, args []byte) {
	if l == nil {
		return
	}
	e := callEntry{rec: rec}
	if len(args) > 0 {
		e.args = append(make([]byte, 0, len(args)), args...)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return
	}
	select {
	case l.queue <- e:
	default:
		l.dropped.Add(1)
	}
	if len(l.queue) > cap(l.queue)/2 {
		select {
		case l.nudge <- struct{}{}:
		default:
		}
	}
}

// Flush waits until every line queued before it is written.
func (l *CallsLog) Flush() {
	if l == nil {
		return
	}
	ch := make(chan struct{})
	select {
	case l.flushes <- ch:
		<-ch
	case <-l.done:
	}
}

// Close writes what is queued and stops the writer. Lines logged after
// Close are dropped (and counted).
func (l *CallsLog) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.stop)
	}
	l.mu.Unlock()
	<-l.done
}

// Dropped counts the lines lost to a full queue or a closed log.
func (l *CallsLog) Dropped() int64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// Written counts the lines written.
func (l *CallsLog) Written() int64 { return l.written.Load() }

// Failed counts the lines that could not be written (OnError heard why).
func (l *CallsLog) Failed() int64 { return l.failed.Load() }

func (l *CallsLog) run() {
	defer close(l.done)
	tick := time.NewTicker(l.opt.Interval)
	defer tick.Stop()
	batch := make([]callEntry, 0, maxBatch)
	drain := func() {
		for {
			batch = batch[:0]
		more:
			for len(batch) < maxBatch {
				select {
				case e := <-l.queue:
					batch = append(batch, e)
				default:
					break more
				}
			}
			if len(batch) == 0 {
				return
			}
			l.write(batch)
		}
	}
	for {
		select {
		case <-tick.C:
			drain()
		case <-l.nudge:
			drain()
		case ch := <-l.flushes:
			drain()
			close(ch)
		case <-l.stop:
			drain() // no sender is left: Close holds the lock past closed
			return
		}
	}
}

// write encodes a batch and appends it, file by file, in order.
func (l *CallsLog) write(batch []callEntry) {
	type file struct {
		dir   safefs.Loc
		lines [][]byte
	}
	var files []*file
	for i := range batch {
		e := &batch[i]
		p, ok := l.place(e.args)
		if !ok {
			l.dropped.Add(1)
			continue
		}
		e.rec.Vault = p.Vault
		e.rec.ArgsSHA256 = ArgsSHA256(e.args)
		line, err := json.Marshal(&e.rec)
		if err != nil {
			l.fail(err)
			continue
		}
		var f *file
		for _, g := range files {
			if g.dir == p.Dir {
				f = g
				break
			}
		}
		if f == nil {
			f = &file{dir: p.Dir}
			files = append(files, f)
		}
		f.lines = append(f.lines, append(line, '\n'))
	}
	for _, f := range files {
		l.appendLines(f.dir, f.lines)
	}
}

func (l *CallsLog) place(args []byte) (Placement, bool) {
	if l.opt.Place == nil {
		return Placement{}, false
	}
	p, ok := l.opt.Place(args)
	if len(p.Vault) > maxVaultName {
		p.Vault = p.Vault[:maxVaultName]
	}
	return p, ok
}

// appendLines appends lines to dir's calls.log, rotating it to calls.log.1
// before a line would take it past MaxBytes. Each run of lines goes in one
// write on an O_APPEND file, so lines of several processes (loci serve and
// loci mcp on one vault) never interleave.
func (l *CallsLog) appendLines(dir safefs.Loc, lines [][]byte) {
	rel := dir.Name(CallsLogName)
	var size int64
	if st, err := dir.Root.Lstat(rel); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	var buf bytes.Buffer
	n := 0
	flush := func() {
		if buf.Len() == 0 {
			return
		}
		// A link planted at calls.log is refused (path_denied), never
		// appended through.
		if err := dir.Root.AppendLine(rel, buf.Bytes(), 0o600); err != nil {
			l.failed.Add(int64(n))
			l.fail(err)
		} else {
			l.written.Add(int64(n))
		}
		buf.Reset()
		n = 0
	}
	for _, line := range lines {
		if size > 0 && size+int64(len(line)) > l.opt.MaxBytes {
			flush()
			if err := dir.Root.Rename(rel, rel+".1"); err != nil {
				l.fail(err)
			}
			size = 0
		}
		buf.Write(line)
		n++
		size += int64(len(line))
	}
	flush()
}

func (l *CallsLog) fail(err error) {
	if l.opt.OnError != nil {
		l.opt.OnError(err)
	}
}

// ArgsSHA256 is the hex SHA-256 of the canonical form of a call's JSON
// arguments: compact, object keys sorted, numbers as written, so that the
// same arguments hash the same whatever their spacing or key order.
// Missing arguments hash as {}; arguments that are not JSON hash as sent.
func ArgsSHA256(args []byte) string {
	canon := canonicalJSON(args)
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

func canonicalJSON(args []byte) []byte {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return args
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return args
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}
