package vault

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// Journal defaults (config: writes.journal_max_bytes, writes.journal_max_age).
const (
	DefaultJournalMaxBytes = 100 << 20
	DefaultJournalMaxAge   = 30 * 24 * time.Hour
)

// JournalEntry is one applied change, kept so that it can be undone: who
// made it, and for every file its etag before and after, with the bytes it
// had before (gzipped, in the entry's folder).
type JournalEntry struct {
	ID             string        `json:"id"`
	Time           time.Time     `json:"time"`
	Operation      string        `json:"operation"`
	Surface        string        `json:"surface,omitempty"`
	Session        string        `json:"session,omitempty"`
	Principal      string        `json:"principal,omitempty"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
	Undoes         []string      `json:"undoes,omitempty"`
	Files          []JournalFile `json:"files"`
	// Bytes is the space the entry takes in the journal.
	Bytes int64 `json:"bytes"`
}

// JournalFile is one file of a journal entry.
type JournalFile struct {
	Path   string `json:"path"`
	Action string `json:"action"` // create, update, delete (to the trash) or remove
	// BeforeEtag is "" when the file did not exist; AfterEtag is "" when
	// the change removed it.
	BeforeEtag string `json:"before_etag,omitempty"`
	AfterEtag  string `json:"after_etag,omitempty"`
	Blob       string `json:"blob,omitempty"` // where the bytes before are in the entry file (offset+length)
	TrashPath  string `json:"trash_path,omitempty"`
}

type journal struct {
	root     safefs.Root
	dir      string // root-relative
	maxBytes int64
	maxAge   time.Duration

	mu        sync.Mutex
	approx    int64 // bytes written since the last prune, plus what that prune kept
	lastPrune time.Time
}

var (
	idMu   sync.Mutex
	lastID time.Time
)

// newID returns a time-ordered, unique entry id: ids made in one process
// strictly increase even when the clock does not move.
func newID(now time.Time) string {
	idMu.Lock()
	if !now.After(lastID) {
		now = lastID.Add(time.Nanosecond)
	}
	lastID = now
	idMu.Unlock()
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:])
}

// validID guards ids that come from callers before they become paths.
func validID(id string) bool {
	if len(id) < 20 || len(id) > 64 || strings.HasPrefix(id, ".") {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// An entry is one file, <journal>/<id>.entry: a first line of JSON (the
// entry, whose files point at their blobs by offset), then the gzipped
// bytes of every file as it was before the change. One file keeps the
// write-ahead cost at one fsync (plus the folder's).
const entryExt = ".entry"

// record writes an entry and its blobs durably before the change is
// applied (write-ahead): to a temporary file, fsynced, renamed into place,
// the folder fsynced; an entry is either whole or absent.
func (j *journal) record(e *JournalEntry, befores map[int][]byte) error {
	var blobs bytes.Buffer
	for i := range e.Files {
		b, has := befores[i]
		if !has {
			continue
		}
		off := blobs.Len()
		zw, _ := gzip.NewWriterLevel(&blobs, gzip.BestSpeed)
		zw.Write(b)
		zw.Close()
		e.Files[i].Blob = strconv.Itoa(off) + "+" + strconv.Itoa(blobs.Len()-off)
	}
	data := encodeEntry(e, blobs.Bytes())
	if err := writeFileAtomic(j.root, j.dir+"/"+e.ID+entryExt, data, true); err != nil {
		return err
	}
	j.mu.Lock()
	j.approx += e.Bytes
	j.mu.Unlock()
	return nil
}

// encodeEntry lays out an entry file and sets e.Bytes to about its size.
func encodeEntry(e *JournalEntry, blobs []byte) []byte {
	meta, _ := json.Marshal(e)
	e.Bytes = int64(len(meta) + 1 + len(blobs) + 16) // 16: room for the size's own digits
	meta, _ = json.Marshal(e)
	out := make([]byte, 0, len(meta)+1+len(blobs))
	out = append(append(append(out, meta...), '\n'), blobs...)
	return out
}

// rewrite replaces an entry's metadata, keeping its blobs (after the change
// learned where a deleted note landed in the trash).
func (j *journal) rewrite(e *JournalEntry) error {
	_, blobs, err := j.read(e.ID, true)
	if err != nil {
		return err
	}
	return writeFileAtomic(j.root, j.dir+"/"+e.ID+entryExt, encodeEntry(e, blobs), false)
}

// drop removes an entry whose change was rolled back.
func (j *journal) drop(id string) {
	removeFile(j.root, j.dir+"/"+id+entryExt)
}

// read reads an entry's metadata and, with blobs, its blob section.
func (j *journal) read(id string, blobs bool) (*JournalEntry, []byte, error) {
	if !validID(id) {
		return nil, nil, errs.New(errs.CodeUndoNotFound, "%q is not a journal entry id (see write_history)", id).With("id", id)
	}
	f, err := j.root.OpenFile(j.dir+"/"+id+entryExt, os.O_RDONLY, 0)
	if err != nil {
		if safefs.IsDenied(err) {
			return nil, nil, err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, errs.New(errs.CodeUndoNotFound, "no journal entry %s (it never existed or was pruned: the journal keeps %s and %d MiB)", id, j.maxAge, j.maxBytes>>20).With("id", id)
		}
		return nil, nil, errs.Wrap(err, errs.CodeInternal, "cannot read the journal")
	}
	defer f.Close()
	r := bufio.NewReader(f)
	line, err := r.ReadBytes('\n')
	var e JournalEntry
	if err != nil || json.Unmarshal(line, &e) != nil {
		return nil, nil, errs.New(errs.CodeInternal, "journal entry %s is damaged", id).With("id", id)
	}
	if !blobs {
		return &e, nil, nil
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, errs.Wrap(err, errs.CodeInternal, "cannot read the journal")
	}
	return &e, rest, nil
}

// load reads one entry's metadata.
func (j *journal) load(id string) (*JournalEntry, error) {
	e, _, err := j.read(id, false)
	return e, err
}

// list returns every entry, oldest first. Damaged entries are skipped.
func (j *journal) list() ([]*JournalEntry, error) {
	des, err := j.root.ReadDir(j.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if safefs.IsDenied(err) {
			return nil, err
		}
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot read the journal")
	}
	var out []*JournalEntry
	for _, d := range des {
		id, ok := strings.CutSuffix(d.Name(), entryExt)
		if !ok || strings.HasPrefix(id, ".") || !d.Type().IsRegular() {
			continue
		}
		if e, err := j.load(id); err == nil {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// blob returns the bytes a file had before an entry's change.
func (j *journal) blob(id, ref string) ([]byte, error) {
	offS, lenS, ok := strings.Cut(ref, "+")
	off, err1 := strconv.Atoi(offS)
	n, err2 := strconv.Atoi(lenS)
	if !ok || err1 != nil || err2 != nil || off < 0 || n < 0 {
		return nil, errs.New(errs.CodeInternal, "journal entry %s names a bad blob %q", id, ref)
	}
	_, blobs, err := j.read(id, true)
	if err != nil {
		return nil, err
	}
	if off+n > len(blobs) {
		return nil, errs.New(errs.CodeInternal, "journal entry %s is truncated", id)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blobs[off : off+n]))
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "journal blob of "+id+" is damaged")
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "journal blob of "+id+" is damaged")
	}
	return b, nil
}

// pruneDue reports whether the journal may have outgrown its bounds.
func (j *journal) pruneDue(now time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.approx > j.maxBytes || now.Sub(j.lastPrune) > 10*time.Minute
}

// prune drops entries older than maxAge, then the oldest ones until the
// journal fits in maxBytes. The newest entry is always kept, so the last
// write can be undone whatever its size. Temporary files of interrupted
// records go too.
func (j *journal) prune(now time.Time) {
	des, err := j.root.ReadDir(j.dir)
	if err != nil {
		return
	}
	type item struct {
		id    string
		t     time.Time
		bytes int64
	}
	var items []item
	for _, d := range des {
		name := d.Name()
		info, err := d.Info()
		if err != nil {
			continue
		}
		id, ok := strings.CutSuffix(name, entryExt)
		if !ok || strings.HasPrefix(name, ".") {
			if strings.HasPrefix(name, ".") && now.Sub(info.ModTime()) > time.Minute {
				j.root.Remove(j.dir + "/" + name)
			}
			continue
		}
		e, err := j.load(id)
		if err != nil {
			continue
		}
		items = append(items, item{e.ID, e.Time, info.Size()})
	}
	sort.Slice(items, func(a, b int) bool { return items[a].id < items[b].id })
	var total int64
	for _, it := range items {
		total += it.bytes
	}
	for i, it := range items {
		if i == len(items)-1 {
			break
		}
		if now.Sub(it.t) > j.maxAge || total > j.maxBytes {
			j.root.Remove(j.dir + "/" + it.id + entryExt)
			total -= it.bytes
		}
	}
	j.mu.Lock()
	j.approx = total
	j.lastPrune = now
	j.mu.Unlock()
}
