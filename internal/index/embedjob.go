package index

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"
)

// The background embedder. A long-running server (loci serve, loci mcp)
// calls BackgroundEmbed once: from then on a sync commits the lexical
// index and returns, and the embedding runs in one goroutine per index,
// which every sync wakes. The job works in pages of bgPageSize texts and
// holds the writer lock only while it writes a page, so syncs and writes
// go on while a slow embedder (an ONNX model on the CPU, a remote server)
// works; each page it writes is kept, so a job stopped half-way (the
// server shut down, killed) is continued by the next process from there.
// A failure (server down, 401) is recorded in EmbedJob and retried after a
// backoff, by the next sync or by the job's own timer. Until every section
// and title has its vector (VectorsComplete), the default search mode is
// lexical.

// bgPageSize is the number of texts the job embeds and writes at a time:
// ~17 s of a CPU model at 3.7 texts/s, so progress moves and a stop loses
// little. An OpenAI-compatible server gets at least batch_size ×
// concurrency (every request slot busy); an inline embedder (builtin,
// model2vec) embedGroupSize.
var bgPageSize = 64

// pageSize is the job's page for the configured embedder.
func (j *embedJob) pageSize() int {
	if j.inline() {
		return embedGroupSize // fast: few, large pages, as in the foreground
	}
	size := bgPageSize
	if s := j.ix.emb.settings; s.Provider == "openai" {
		size = max(size, s.BatchSize*s.Concurrency)
	}
	return min(size, embedGroupSize)
}

// EmbedJob is the state of the background embedder (index_status).
type EmbedJob struct {
	Running     bool      `json:"running" jsonschema:"the job is embedding now"`
	Done        int       `json:"done" jsonschema:"texts (sections and titles) the current or last run has written, embedded or found in the cache"`
	Todo        int       `json:"todo" jsonschema:"texts the current or last run found without a vector when it started"`
	Rate        float64   `json:"rate,omitempty" jsonschema:"texts per second of the current or last run"`
	StartedAt   time.Time `json:"started_at,omitzero" jsonschema:"when the current or last run started (UTC)"`
	FinishedAt  time.Time `json:"finished_at,omitzero" jsonschema:"when the last run ended (UTC)"`
	LastError   string    `json:"last_error,omitempty" jsonschema:"why the last run failed (absent once a run succeeds); search stays lexical by default meanwhile"`
	LastErrorAt time.Time `json:"last_error_at,omitzero" jsonschema:"when the last run failed (UTC)"`
	Failures    int       `json:"failures,omitempty" jsonschema:"runs failed in a row"`
	NextRetryAt time.Time `json:"next_retry_at,omitzero" jsonschema:"after a failure: when the job retries (on its own, or at the next sync from then on)"`
}

type embedJob struct {
	ix     *Index
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // buffered: a pending request to run
	exited chan struct{} // closed when the goroutine ends

	mu      sync.Mutex
	st      EmbedJob
	started bool
	asked   uint64        // requests (kicks) so far
	handled uint64        // requests the job has answered (run, or skipped while backing off)
	changed chan struct{} // closed and replaced whenever handled or st changes
	dirty   bool          // a sync changed notes since the last run: drop orphan vectors first
	gc      bool          // a whole-vault sync changed notes: drop unreferenced cached vectors after
	down    error         // the embedder cannot run at all (settings): never retried

	now     func() time.Time
	backoff func(failures int) time.Duration
	onRun   func(st EmbedJob, complete bool) // OnEmbedRun
	onProg  func(done, total int)            // OnEmbedProgress
}

// OnEmbedRun registers fn, called by the background job after each run
// that embedded something or failed (not after runs that found nothing to
// do), with the job's state and whether every vector is now there. It
// runs on the job's goroutine: it must not block. Call it after
// BackgroundEmbed, before the first sync.
func (ix *Index) OnEmbedRun(fn func(st EmbedJob, complete bool)) {
	if ix.bg != nil {
		ix.bg.onRun = fn
	}
}

// OnEmbedProgress registers fn, called by the background job as pages of
// vectors are written (done and total texts of the current run). It runs
// on the job's goroutine: it must not block. Call it after BackgroundEmbed,
// before the first sync.
func (ix *Index) OnEmbedProgress(fn func(done, total int)) {
	if ix.bg != nil {
		ix.bg.onProg = fn
	}
}

// BackgroundEmbed makes the index embed in a background job (see above)
// instead of in each Sync. Close stops the job. It does nothing when
// embeddings are off for this index.
func (ix *Index) BackgroundEmbed() {
	if ix.bg != nil || (ix.emb.provider == nil && ix.emb.err == nil) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ix.bg = &embedJob{ix: ix, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), exited: make(chan struct{}),
		changed: make(chan struct{}), now: time.Now, backoff: defaultBackoff}
}

// defaultBackoff waits 10 s after a first failure, doubling up to 10 min.
func defaultBackoff(failures int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < failures && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}

// WaitEmbeddings waits until the background job has answered every sync
// so far (embedded what they changed, or failed, or skipped the run while
// it backs off from a failure). It returns at once without a job.
func (ix *Index) WaitEmbeddings(ctx context.Context) error {
	if ix.bg == nil {
		return nil
	}
	return ix.bg.waitIdle(ctx)
}

// EmbedJobState returns the background job's state (nil without one).
func (ix *Index) EmbedJobState() *EmbedJob {
	j := ix.bg
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	return &st
}

// inline reports whether the embedder runs in this process and is fast
// (the built-in embedder, Model2Vec): a sync then waits for the job.
func (j *embedJob) inline() bool {
	p := j.ix.emb.provider
	if p == nil {
		return false
	}
	switch p.Identity().Provider {
	case "builtin", "model2vec":
		return true
	}
	return false
}

// notify wakes the waiters; j.mu is held.
func (j *embedJob) notify() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// kick asks for a run: changed when the sync wrote notes, full when it
// was a whole-vault sync that did.
func (j *embedJob) kick(changed, full bool) {
	j.mu.Lock()
	j.dirty = j.dirty || changed
	j.gc = j.gc || full
	j.asked++
	if !j.started {
		j.started = true
		go j.loop()
	}
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// unavailable records that the embedder cannot run (its settings are
// incomplete): syncs go on, lexical only, and status says why.
func (j *embedJob) unavailable(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.down == nil {
		j.down = err
		j.st.LastError, j.st.LastErrorAt = err.Error(), j.now().UTC()
		j.notify()
	}
}

func (j *embedJob) waitIdle(ctx context.Context) error {
	j.mu.Lock()
	gen := j.asked
	for j.handled < gen {
		ch := j.changed
		j.mu.Unlock()
		select {
		case <-ch:
		case <-j.exited:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		j.mu.Lock()
	}
	j.mu.Unlock()
	return nil
}

// stopWait bounds how long Close waits for the job after cancelling it: a
// provider that does not heed cancellation mid-batch (a CPU model) must not
// hold a server's shutdown. Past it, the job's next write fails on the
// cancelled context (or the closed database) and writes nothing.
const stopWait = 5 * time.Second

// stop cancels the job and waits for it to end (Close).
func (j *embedJob) stop() {
	j.cancel()
	j.mu.Lock()
	started := j.started
	j.started = true // no run starts after this
	j.mu.Unlock()
	if !started {
		close(j.exited)
		return
	}
	select {
	case <-j.exited:
	case <-time.After(stopWait):
	}
}

func (j *embedJob) loop() {
	defer close(j.exited)
	var retry <-chan time.Time
	for {
		timer := false
		select {
		case <-j.ctx.Done():
			return
		case <-j.wake:
		case <-retry:
			timer, retry = true, nil
		}
		j.mu.Lock()
		gen := j.asked
		if j.st.Failures > 0 && !timer && j.now().Before(j.st.NextRetryAt) {
			// Backing off: this request is answered by the retry.
			j.handled = gen
			j.notify()
			j.mu.Unlock()
			continue
		}
		dirty, gc := j.dirty, j.gc
		j.dirty, j.gc = false, false
		j.st.Running, j.st.StartedAt, j.st.Done, j.st.Todo, j.st.Rate = true, j.now().UTC(), 0, 0, 0
		j.notify()
		j.mu.Unlock()

		err := j.run(dirty, gc)

		j.mu.Lock()
		j.st.Running = false
		j.st.FinishedAt = j.now().UTC()
		if j.ctx.Err() != nil {
			j.mu.Unlock()
			return // shut down: the pages written stay, the next process goes on
		}
		if err != nil {
			j.st.Failures++
			j.st.LastError, j.st.LastErrorAt = err.Error(), j.st.FinishedAt
			wait := j.backoff(j.st.Failures)
			j.st.NextRetryAt = j.st.FinishedAt.Add(wait)
			j.dirty, j.gc = j.dirty || dirty, j.gc || gc
			retry = time.After(wait)
		} else {
			j.st.Failures, j.st.LastError, j.st.LastErrorAt, j.st.NextRetryAt = 0, "", time.Time{}, time.Time{}
			retry = nil
		}
		st, did := j.st, j.st.Todo > 0 || err != nil
		j.mu.Unlock()
		if did && j.onRun != nil {
			j.onRun(st, err == nil && j.ix.VectorsComplete(j.ctx))
		}
		j.mu.Lock()
		j.handled = gen
		j.notify()
		j.mu.Unlock()
	}
}

// lock takes the index's writer lock (this process's, then the file's)
// for one page's write. Another process writing the index fails the run
// (index_busy), which is retried after the backoff.
func (j *embedJob) lock() (func(), error) {
	j.ix.writeMu.Lock()
	l, err := acquireWriter(j.ix.Loc, false)
	if err != nil {
		j.ix.writeMu.Unlock()
		return nil, err
	}
	return func() { l.release(); j.ix.writeMu.Unlock() }, nil
}

func (j *embedJob) progress(done, total int) {
	j.mu.Lock()
	j.st.Done, j.st.Todo = done, total
	if el := j.now().Sub(j.st.StartedAt).Seconds(); el > 0 {
		j.st.Rate = float64(int(float64(done)/el*10+0.5)) / 10
	}
	j.notify()
	j.mu.Unlock()
	if j.onProg != nil {
		j.onProg(done, total)
	}
}

// run embeds what has no vector yet, then marks the vectors complete if
// nothing is left (a sync during the run may have added more: it has
// asked for another run).
func (j *embedJob) run(dirty, gc bool) error {
	ix := j.ix
	ctx := j.ctx
	if !dirty && ix.Meta(ctx, "embed_complete") == "1" {
		return nil
	}
	conn, err := ix.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if stored, ok := storedIdentity(ctx, conn); ok && !sameSpace(stored, ix.emb.provider.Identity()) {
		return mismatchError(stored, ix.emb.provider.Identity())
	}
	if _, err := ix.embedPass(ctx, conn, dirty, gc, passOptions{size: j.pageSize(), lock: j.lock, progress: j.progress}); err != nil {
		return err
	}
	return withLock(j.lock, func() error {
		var pending bool
		if err := conn.QueryRowContext(ctx, pendingSQL).Scan(&pending); err != nil {
			return err
		}
		if pending {
			return nil
		}
		_, err := conn.ExecContext(ctx, "INSERT INTO meta(key,value) VALUES('embed_complete','1') ON CONFLICT(key) DO UPDATE SET value='1'")
		return err
	})
}

// pendingSQL is true when a section or a note's title has no vector.
const pendingSQL = `SELECT EXISTS (SELECT 1 FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id))
	OR EXISTS (SELECT 1 FROM notes n WHERE NOT EXISTS (SELECT 1 FROM note_vectors v WHERE v.note_id = n.id))`

// VectorsComplete reports whether every section and title has its vector
// (meta embed_complete, set when an embedding pass leaves nothing behind
// and cleared by every sync that writes notes). While it is false the
// default search mode is lexical and a semantic or hybrid search says its
// vectors are partial.
func (ix *Index) VectorsComplete(ctx context.Context) bool {
	switch ix.Meta(ctx, "embed_complete") {
	case "1":
		return true
	case "0":
		return false
	}
	// No record (an index from before it, or vectors just cleared): count.
	var pending bool
	if err := ix.DB.QueryRowContext(ctx, pendingSQL).Scan(&pending); err != nil {
		return false
	}
	return !pending
}

// vectorCounts fills the progress part of VectorStatus: texts (sections
// and titles) with a vector, in all, and waiting; over the notes not in
// hidden (a read fence's).
func (ix *Index) vectorCounts(ctx context.Context, vs *VectorStatus, hidden []int64) {
	var args []any
	if len(hidden) > 0 {
		h := idsJSON(hidden)
		args = []any{h, h, h, h}
	}
	var chunks, notes, cv, nv int
	err := ix.DB.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM chunks WHERE `+hiddenCond("note_id", hidden)+`), (SELECT COUNT(*) FROM notes WHERE `+hiddenCond("id", hidden)+`),
		(SELECT COUNT(*) FROM chunk_vectors cv WHERE `+hiddenCond("note_id", hidden)+` AND EXISTS (SELECT 1 FROM chunks c WHERE c.id = cv.chunk_id)),
		(SELECT COUNT(*) FROM note_vectors nv WHERE `+hiddenCond("note_id", hidden)+` AND EXISTS (SELECT 1 FROM notes n WHERE n.id = nv.note_id))`, args...).Scan(&chunks, &notes, &cv, &nv)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return
	}
	vs.Total, vs.Embedded = chunks+notes, cv+nv
	vs.Pending = vs.Total - vs.Embedded
	vs.Complete = ix.VectorsComplete(ctx)
	vs.Job = ix.EmbedJobState()
}
