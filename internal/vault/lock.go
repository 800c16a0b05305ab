package vault

import (
	"context"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
)

// DefaultLockTimeout bounds how long a writer waits for a note's lock.
const DefaultLockTimeout = 30 * time.Second

// locker serializes writers per note. Inside the process each note maps to
// a slot guarded by a one-token channel; across processes the same slot is a
// one-byte POSIX record lock in <vault>/.loci/write.lock, so writes to
// different notes proceed in parallel everywhere and writes to one note
// never overlap. Slots are taken in ascending order (no deadlock between
// multi-note writers). Two notes whose keys collide merely share a slot.
//
// POSIX record locks belong to the process and are all dropped when any
// descriptor of the file is closed, so there is exactly one locker (and one
// descriptor, never closed) per lock file in a process.
type locker struct {
	root safefs.Root
	rel  string
	path string

	mu    sync.Mutex
	slots map[int64]chan struct{}
	f     *os.File
}

var lockers sync.Map // lock file path → *locker

func lockerFor(root safefs.Root, rel string) *locker {
	path := root.Join(rel)
	if l, ok := lockers.Load(path); ok {
		return l.(*locker)
	}
	l, _ := lockers.LoadOrStore(path, &locker{root: root, rel: rel, path: path, slots: map[int64]chan struct{}{}})
	return l.(*locker)
}

// firstSlot leaves room below for named locks (the journal's pruning).
const firstSlot = 16

// slotOf maps a lock key (a vault-relative path, compared case-insensitively
// because macOS and Windows file systems are) to a byte offset.
func slotOf(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(norm.NFC.String(key))))
	return firstSlot + int64(h.Sum64()%(1<<40))
}

func (l *locker) file() (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		return l.f, nil
	}
	f, err := l.root.OpenFile(l.rel, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l.f = f
	return f, nil
}

func (l *locker) slot(s int64) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := l.slots[s]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.slots[s] = ch
	}
	return ch
}

// lock takes the locks of keys (in-process, then across processes) and
// returns the function that releases them. It waits up to timeout, or until
// ctx ends, then fails with note_locked.
func (l *locker) lock(ctx context.Context, timeout time.Duration, keys ...string) (func(), error) {
	slots := make([]int64, 0, len(keys))
	for _, k := range keys {
		slots = append(slots, slotOf(k))
	}
	slices.Sort(slots)
	slots = slices.Compact(slots)
	f, err := l.file()
	if err != nil {
		if safefs.IsDenied(err) {
			return nil, err
		}
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot open the write lock file").With("lock", l.path)
	}
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var held []int64
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			unlockRange(f, held[i])
			<-l.slot(held[i])
		}
		held = nil
	}
	busy := func() error {
		release()
		return errs.New(errs.CodeNoteLocked, "another writer has held the lock of %s for over %s; try again", strings.Join(keys, ", "), timeout).
			With("paths", keys).With("lock", l.path)
	}
	for _, s := range slots {
		ch := l.slot(s)
		select {
		case ch <- struct{}{}:
		case <-ctx.Done():
			return nil, busy()
		}
		backoff := time.Millisecond
		for {
			ok, err := tryLockRange(f, s)
			if err != nil {
				<-ch
				release()
				return nil, errs.Wrap(err, errs.CodeInternal, "cannot lock the note").With("lock", l.path)
			}
			if ok {
				break
			}
			// Another process holds it: poll (record locks cannot wait with a deadline).
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				<-ch
				return nil, busy()
			}
			backoff = min(backoff*2, 50*time.Millisecond)
		}
		held = append(held, s)
	}
	var once sync.Once
	return func() { once.Do(release) }, nil
}
