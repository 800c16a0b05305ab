package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/safefs"
	"github.com/loci-dev/loci/internal/vault"
)

// Note resources.
//
// Every indexed note of every vault is a resource loci://<vault>/<path>, each
// path segment URL-escaped; the vault part is the vault's name made host-safe
// (see hostName). One resource template, loci://{vault}/{+path}, routes every
// read to the same handler, which reads the file through vault confinement.
//
// resources/list is answered from the index itself, a page at a time (keyset
// pagination on path), by a receiving middleware in front of the SDK's own
// list: nothing is loaded at startup (a 6,500-note vault would cost ~25 ms of
// cold start and a copy of every path in memory) and the list is never out
// of step with the index.
//
// Changes arrive on the env's change bus. When notes were added or removed,
// re-adding the template makes the SDK send notifications/resources/
// list_changed (debounced, to legacy sessions and to new-protocol listeners
// alike); every changed note with subscribers gets notifications/resources/
// updated through Server.ResourceUpdated.

const (
	uriScheme     = "loci://"
	uriTemplate   = "loci://{vault}/{+path}"
	markdownMIME  = "text/markdown"
	etagMetaKey   = "loci/etag"
	notifyTimeout = 10 * time.Second
)

type resources struct {
	s        *Server
	template *mcp.ResourceTemplate

	host   map[string]string // vault name → URI host
	byHost map[string]*ops.VaultHandle

	mu   sync.Mutex
	subs map[string]map[*mcp.ServerSession]struct{} // URI → subscribed sessions

	queue chan ops.Change
}

func newResources(s *Server) *resources {
	r := &resources{
		s: s, host: map[string]string{}, byHost: map[string]*ops.VaultHandle{},
		subs: map[string]map[*mcp.ServerSession]struct{}{}, queue: make(chan ops.Change, 64),
	}
	for _, vh := range s.env.Vaults {
		h := hostName(vh.Name)
		base := h
		for i := 2; r.byHost[h] != nil; i++ {
			h = base + "-" + strconv.Itoa(i)
		}
		r.host[vh.Name] = h
		r.byHost[h] = vh
	}
	first := "vault"
	if len(s.env.Vaults) > 0 {
		first = r.host[s.env.Vaults[0].Name]
	}
	r.template = &mcp.ResourceTemplate{
		URITemplate: uriTemplate,
		Name:        "note",
		Title:       "A note, by vault and vault-relative path",
		Description: "Any Markdown note of a served vault, e.g. loci://" + first + "/Projects/Alpha.md (path segments URL-escaped).",
		MIMEType:    markdownMIME,
	}
	return r
}

// register adds the template and the list middleware, and starts the worker
// that turns index changes into notifications.
func (r *resources) register() {
	r.s.mcp.AddResourceTemplate(r.template, r.read)
	r.s.mcp.AddReceivingMiddleware(r.listMiddleware)
	go r.worker()
}

// hostName turns a vault name into a valid URI host: ASCII letters, digits
// and -._~ are kept, other ASCII characters (spaces, punctuation) become
// '-', and non-ASCII characters are percent-encoded as UTF-8 (which Go's URL
// parser and RFC 3986 reg-names accept).
func hostName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_', r == '~':
			b.WriteRune(r)
		case r < utf8.RuneSelf:
			b.WriteByte('-')
		default:
			b.WriteString(url.PathEscape(string(r)))
		}
	}
	if strings.Trim(b.String(), ".") == "" {
		return "vault" + b.String()
	}
	return b.String()
}

// noteURI is the resource URI of a note.
func (r *resources) noteURI(vaultName, rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return uriScheme + r.host[vaultName] + "/" + strings.Join(segs, "/")
}

// parseURI maps a resource URI back to a vault and a cleaned vault-relative
// path, through the same confinement as every path argument, and refuses a
// path that is not a note.
func (r *resources) parseURI(uri string) (*ops.VaultHandle, string, error) {
	rest, ok := strings.CutPrefix(uri, uriScheme)
	if !ok {
		return nil, "", errs.New(errs.CodeNotFound, "not a loci note URI: %s", uri)
	}
	host, p, _ := strings.Cut(rest, "/")
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	vh := r.byHost[host]
	if vh == nil {
		for h, v := range r.byHost {
			if strings.EqualFold(h, host) {
				vh = v
				break
			}
		}
	}
	if vh == nil {
		return nil, "", errs.New(errs.CodeVaultNotFound, "no vault %q is served", host)
	}
	rel, err := url.PathUnescape(p)
	if err != nil {
		return nil, "", errs.New(errs.CodeInvalidInput, "bad escape in %s", uri)
	}
	clean, err := vault.CleanRel(rel)
	if err != nil {
		return nil, "", err
	}
	// The one rule of what a note is (vault.NoteRule), refused as
	// vault.Resolve refuses it, so a non-note gets the answer read_note gives.
	if why := vh.Vault.NoteRule(clean); why != "" {
		return nil, "", errs.New(errs.CodePathDenied, "%s is not a note loci reads: %s", clean, why).With("path", clean).With("reason", why)
	}
	return vh, clean, nil
}

// read serves resources/read for a note: the file's current text, read from
// disk through vault confinement, with its etag in _meta. The result is
// bounded by the same governor as every operation's (Env.MaxResultBytes,
// default ops.DefaultMaxResultBytes): a larger note is refused with
// payload_too_large, pointing at read_note, which reads it in parts.
func (r *resources) read(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	release, lerr := r.admit(req.Extra)
	if lerr != nil {
		return nil, resourceError(uri, lerr)
	}
	defer release()
	vh, rel, err := r.parseURI(uri)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	fence, err := r.access(req.Extra, vh)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	if !fence.Allows(rel) {
		return nil, resourceError(uri, ops.NotFound(rel))
	}
	limit := r.s.resultLimit()
	b, err := readNote(vh.Vault, fence, rel, limit)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: markdownMIME, Meta: mcp.Meta{etagMetaKey: vault.Etag(b)}}
	if utf8.Valid(b) {
		c.Text = string(b)
	} else {
		c.Blob = b
		if size := base64.StdEncoding.EncodedLen(len(b)); size > limit {
			return nil, resourceError(uri, noteTooLarge(rel, int64(size), limit))
		}
	}
	res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}
	res.CacheScope = "private" // personal notes, as resources/list
	return res, nil
}

// readNote reads a note as vault.ReadNote does (Resolve's rule, then the
// real path opened without following links), but bounded: a file over
// limit bytes is refused from its size, before any of it is read. (The
// file is already known to be a readable note, so its size tells nothing
// new.)
//
// A note the read fence hides (by its path or the real path a link leads
// to) is note_not_found, as if it were not there.
func readNote(v *vault.Vault, fence *ops.Fence, rel string, limit int) ([]byte, error) {
	clean, real, err := v.Resolve(rel)
	if err != nil {
		return nil, err
	}
	if !fence.AllowsReal(clean, real) {
		return nil, ops.NotFound(clean)
	}
	f, err := v.FS().OpenFile(real, os.O_RDONLY, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, errs.New(errs.CodeNotFound, "note not found: %s", clean).With("path", clean)
		case safefs.IsDenied(err):
			if st, serr := v.FS().Lstat(real); serr == nil && st.IsDir() {
				return nil, errs.New(errs.CodeNotFound, "%s is a folder, not a note", clean).With("path", clean).With("reason", "folder")
			}
			return nil, errs.New(errs.CodePathDenied, "%s is not a note loci reads: %s", clean, errs.As(err).Message).With("path", clean).With("reason", "not a regular file")
		}
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot read note").With("path", clean)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot read note").With("path", clean)
	}
	if st.Size() > int64(limit) {
		return nil, noteTooLarge(clean, st.Size(), limit)
	}
	var buf bytes.Buffer
	buf.Grow(int(st.Size()) + 1)
	if _, err := buf.ReadFrom(io.LimitReader(f, int64(limit)+1)); err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot read note").With("path", clean)
	}
	if buf.Len() > limit { // it grew since Stat
		size := int64(buf.Len())
		if st, err := f.Stat(); err == nil {
			size = max(size, st.Size())
		}
		return nil, noteTooLarge(clean, size, limit)
	}
	return buf.Bytes(), nil
}

// admit takes one token of the request principal's read bucket and a
// slot of its concurrency cap (ops.Limiter), as a read tool's call does:
// resources are not operations of the registry, but the limits of `loci
// serve` bind every read an HTTP principal makes.
func (r *resources) admit(extra *mcp.RequestExtra) (func(), *errs.Error) {
	return r.s.env.Limits.Admit(principalOf(extra), ops.ClassRead)
}

// access checks that the principal of a request may read vault vh through
// resources (read_note's scope and toolset, and the vault, as the tools'
// dispatch checks them) and returns its read fence there. A vault it may not use is
// vault_not_found, so resources do not tell which vaults exist.
func (r *resources) access(extra *mcp.RequestExtra, vh *ops.VaultHandle) (*ops.Fence, error) {
	p := principalOf(extra)
	// A resource is a note read: the principal needs what read_note
	// needs (the read scope and toolset, a server that offers it).
	if op, ok := r.s.reg.Get("read_note"); ok {
		if err := r.s.env.Permits(p, op); err != nil {
			return nil, err
		}
	}
	if p != nil && !p.IsOwner() {
		if !p.MayUse(vh.Name) {
			return nil, errs.New(errs.CodeVaultNotFound, "no vault %q is served", vh.Name)
		}
	}
	return ops.NewFence(vh.Vault, vh.Read, p), nil
}

// noteTooLarge refuses a note over the result governor's limit.
func noteTooLarge(rel string, size int64, limit int) error {
	return errs.New(errs.CodeTooLarge, "note %s is %d bytes, over the %d-byte limit of one result; read it in parts with the read_note tool (start_line and end_line, or heading)", rel, size, limit).
		With("path", rel).With("bytes", size).With("limit", limit).With("tool", "read_note")
}

// resourceError maps a loci error to the MCP error for resource requests.
// It builds every error itself, data with encoding/json: the SDK's
// mcp.ResourceNotFoundError formats its data with %q, which is not JSON for
// a URI with control characters or invalid UTF-8 (see guard).
func resourceError(uri string, err error) error {
	e := errs.As(err)
	data := func(m map[string]any) json.RawMessage {
		m["uri"] = clip(uri, 1024)
		b, _ := json.Marshal(m)
		return b
	}
	switch e.Code {
	case errs.CodeNotFound, errs.CodeVaultNotFound:
		return &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: "Resource not found: " + e.Message, Data: data(map[string]any{"code": e.Code})}
	case errs.CodePathDenied, errs.CodeInvalidInput, errs.CodeTooLarge, errs.CodeForbidden, errs.CodeRateLimited:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Code + ": " + e.Message, Data: data(map[string]any{"code": e.Code, "details": e.Details})}
	default:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: e.Code + ": " + e.Error()}
	}
}

// listMiddleware answers resources/list from the index; every other method
// goes on to the SDK.
func (r *resources) listMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if lr, ok := req.(*mcp.ListResourcesRequest); ok && method == "resources/list" {
			cursor := ""
			if lr.Params != nil {
				cursor = lr.Params.Cursor
			}
			return r.list(ctx, lr.Extra, cursor, ResourcePageSize)
		}
		return next(ctx, method, req)
	}
}

// listCursor is the position after the last listed note: a vault (by index)
// and a path in it.
type listCursor struct {
	Vault int    `json:"v"`
	After string `json:"a"`
}

// list answers resources/list with the notes the request's principal may
// read: vaults it may not use are left out, and its read fence is applied
// while the page is filled, so pages stay full and cursors right.
func (r *resources) list(ctx context.Context, extra *mcp.RequestExtra, cursor string, pageSize int) (*mcp.ListResourcesResult, error) {
	release, lerr := r.admit(extra)
	if lerr != nil {
		return nil, resourceError("", lerr)
	}
	defer release()
	vaults := r.s.env.Vaults
	var pos listCursor
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err == nil {
			err = json.Unmarshal(b, &pos)
		}
		if err != nil || pos.Vault < 0 || pos.Vault >= len(vaults) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
	}
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	res.CacheScope = "private" // personal notes: only this user's client may cache the list
	var at []listCursor        // where each listed note sits, for the next cursor
	for vi := pos.Vault; vi < len(vaults) && len(at) <= pageSize; vi++ {
		vh := vaults[vi]
		after := ""
		if vi == pos.Vault {
			after = pos.After
		}
		fence, err := r.access(extra, vh)
		if err != nil {
			if errs.Code(err) == errs.CodeForbidden {
				return nil, resourceError("", err)
			}
			continue // a vault the principal may not use
		}
		rows, err := listVisible(ctx, vh, fence, after, pageSize+1-len(at))
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot list notes: " + err.Error()}
		}
		for _, n := range rows {
			rs := &mcp.Resource{
				URI: r.noteURI(vh.Name, n.path), Name: n.path, Title: n.title, MIMEType: markdownMIME, Size: n.size,
				Annotations: &mcp.Annotations{LastModified: time.Unix(0, n.mtime).UTC().Format(time.RFC3339)},
			}
			if len(vaults) > 1 {
				rs.Meta = mcp.Meta{"loci/vault": vh.Name}
			}
			res.Resources = append(res.Resources, rs)
			at = append(at, listCursor{Vault: vi, After: n.path})
		}
	}
	if len(at) > pageSize { // one more than a page was found: there is a next page
		res.Resources = res.Resources[:pageSize]
		b, _ := json.Marshal(at[pageSize-1])
		res.NextCursor = base64.RawURLEncoding.EncodeToString(b)
	}
	return res, nil
}

// subscribe accepts a subscription to any valid note URI (the note need not
// exist yet: creating it will notify). A loci:// URI that escapes its vault
// is refused; a URI of another scheme is tracked but never fires, since the
// protocol lets clients subscribe before a resource exists. The URI is
// checked here as well as in guard: subscriptions/listen (protocol
// 2026-07-28) calls this handler without going through the middleware.
func (r *resources) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if err := checkURI(uri); err != nil {
		return err
	}
	if strings.HasPrefix(strings.ToLower(uri), "loci:") {
		vh, rel, err := r.parseURI(uri)
		if err != nil {
			return resourceError(uri, err)
		}
		// A note the principal may not read cannot be watched: its updates
		// would tell that it exists and changes. Refused the same whether
		// it exists or not.
		fence, err := r.access(req.Extra, vh)
		if err != nil {
			return resourceError(uri, err)
		}
		if !fence.Allows(rel) {
			return resourceError(uri, ops.NotFound(rel))
		}
	} else if uri == "" {
		return resourceError(uri, errs.New(errs.CodeInvalidInput, "uri is required"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.subs[uri] == nil {
		r.subs[uri] = map[*mcp.ServerSession]struct{}{}
	}
	r.subs[uri][req.Session] = struct{}{}
	return nil
}

func (r *resources) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.subs[req.Params.URI]; m != nil {
		delete(m, req.Session)
		if len(m) == 0 {
			delete(r.subs, req.Params.URI)
		}
	}
	return nil
}

// onChange is the change-bus callback. It only queues: the publisher (a
// sync) never waits on a slow client.
func (r *resources) onChange(c ops.Change) {
	select {
	case r.queue <- c:
	case <-r.s.closed:
	}
}

func (r *resources) worker() {
	for {
		select {
		case c := <-r.queue:
			r.apply(c)
		case <-r.s.closed:
			return
		}
	}
}

// apply turns one index change into notifications.
func (r *resources) apply(c ops.Change) {
	if r.host[c.Vault] == "" {
		return
	}
	if c.ListChanged {
		// Re-adding the (unchanged) template is how the SDK is told that the
		// resource list changed: it sends list_changed, debounced.
		r.s.mcp.AddResourceTemplate(r.template, r.read)
	}
	live := map[*mcp.ServerSession]bool{}
	for ss := range r.s.mcp.Sessions() {
		live[ss] = true
	}
	var notify []string
	r.mu.Lock()
	for uri, m := range r.subs { // forget sessions that are gone
		for ss := range m {
			if !live[ss] {
				delete(m, ss)
			}
		}
		if len(m) == 0 {
			delete(r.subs, uri)
		}
	}
	if len(r.subs) > 0 {
		for _, p := range c.Paths {
			if uri := r.noteURI(c.Vault, p); len(r.subs[uri]) > 0 {
				notify = append(notify, uri)
			}
		}
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	for _, uri := range notify {
		if err := r.s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			r.s.log.Debug("mcp: resource update not delivered", "error", err)
		}
	}
	data := map[string]any{"event": "index_updated", "vault": c.Vault, "changed": len(c.Paths), "list_changed": c.ListChanged}
	for ss := range live {
		ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "loci", Data: data})
	}
}

type noteRow struct {
	path, title string
	size, mtime int64
}

// listNotes reads up to limit notes of a vault in path order, starting after
// the given path.
//
// TODO: move to internal/index (a keyset-paged listing) when it has one; this
// and completePaths are the only SQL in this package.
func listNotes(ctx context.Context, vh *ops.VaultHandle, after string, limit int) ([]noteRow, error) {
	rows, err := vh.Index.DB.QueryContext(ctx, "SELECT path, title, size, mtime FROM notes WHERE path > ? ORDER BY path LIMIT ?", after, limit)
	if err != nil {
		return nil, fmt.Errorf("listing notes: %w", err)
	}
	defer rows.Close()
	var out []noteRow
	for rows.Next() {
		var n noteRow
		if err := rows.Scan(&n.path, &n.title, &n.size, &n.mtime); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// listVisible is listNotes without the notes fence hides: it reads on
// until limit visible notes are found or the vault ends.
func listVisible(ctx context.Context, vh *ops.VaultHandle, fence *ops.Fence, after string, limit int) ([]noteRow, error) {
	if fence == nil {
		return listNotes(ctx, vh, after, limit)
	}
	var out []noteRow
	for len(out) < limit {
		want := limit - len(out)
		rows, err := listNotes(ctx, vh, after, want)
		if err != nil {
			return nil, err
		}
		for _, n := range rows {
			after = n.path
			if fence.Allows(n.path) {
				out = append(out, n)
			}
		}
		if len(rows) < want {
			break
		}
	}
	return out, nil
}

// completePaths returns up to limit note paths matching a typed prefix
// (case-insensitive), then paths containing it; paths p's read fence
// hides are not suggested.
func completePaths(ctx context.Context, vh *ops.VaultHandle, p *auth.Principal, typed string, limit int) ([]string, bool, error) {
	if p != nil && !p.IsOwner() && (!p.Has(auth.ScopeRead) || !p.MayUse(vh.Name)) {
		return nil, false, nil
	}
	fence := ops.NewFence(vh.Vault, vh.Read, p)
	esc := index.EscapeLike(typed)
	var out []string
	for _, q := range []struct{ where, arg string }{
		{`path LIKE ? ESCAPE '\'`, esc + "%"},
		{`path LIKE ? ESCAPE '\' AND path NOT LIKE ? ESCAPE '\'`, "%" + esc + "%"},
	} {
		args := []any{q.arg}
		if strings.Contains(q.where, "NOT LIKE") {
			args = append(args, esc+"%")
		}
		after := ""
		for {
			want := limit + 1 - len(out)
			rows, err := vh.Index.DB.QueryContext(ctx, "SELECT path FROM notes WHERE "+q.where+" AND path > ? ORDER BY path LIMIT ?", append(args, after, want)...)
			if err != nil {
				return nil, false, err
			}
			n := 0
			for rows.Next() {
				var p string
				if err := rows.Scan(&p); err != nil {
					rows.Close()
					return nil, false, err
				}
				n++
				after = p
				if fence.Allows(p) {
					out = append(out, p)
				}
			}
			rows.Close()
			if len(out) > limit {
				return out[:limit], true, nil
			}
			if n < want {
				break
			}
		}
	}
	return out, false, nil
}
