package ops

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// Human confirmation of destructive calls. A principal whose policy is
// confirm (auth.PolicyConfirm) that applies a destructive call gets
// confirmation_required with a one-time id, a summary and the diff of a
// preview; a human confirms or denies it (REST /v1/confirmations, the web
// UI's Pending page, `loci confirm`), never an operation of the registry,
// so no agent reaches it over MCP; the agent repeats the same call with
// confirmation_id and it runs once.

// ConfirmTTL is how long a confirmation lives after it was created.
const ConfirmTTL = 5 * time.Minute

// Bounds of the pending store: how many entries it keeps (pending,
// decided and recently expired ones), how many may wait for a human per
// principal, and how large a stored preview may be (past it the diffs are
// dropped and the summary says so).
const (
	maxConfirmations       = 256
	maxPendingPerPrincipal = 16
	maxPreviewBytes        = 128 << 10
)

// Confirmation states.
const (
	ConfirmPending   = "pending"   // waiting for a human
	ConfirmConfirmed = "confirmed" // a human confirmed; the agent may retry once
	ConfirmDenied    = "denied"    // a human denied
	ConfirmUsed      = "used"      // the confirmed call ran
)

// Reasons of confirmation_invalid (details.reason).
const (
	ReasonUnknown  = "unknown"
	ReasonExpired  = "expired"
	ReasonUsed     = "used"
	ReasonDenied   = "denied"
	ReasonMismatch = "mismatch"
)

// Event kinds of the confirmations, on the env's bus. They carry the id,
// the principal, the operation and the state, never paths or diffs (any
// authenticated client may read the bus): a UI that sees one re-reads the
// list.
const (
	EventConfirmationPending = "confirmation.pending"
	EventConfirmationDecided = "confirmation.decided"
)

// Confirmation is one destructive call waiting for (or given) a human's
// decision.
type Confirmation struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Principal string `json:"principal"`
	Operation string `json:"operation"`
	Vault     string `json:"vault,omitempty"`
	// ArgsSHA256 is the hash of the call's arguments (its decoded input,
	// without confirmation_id) that a retry must match.
	ArgsSHA256 string `json:"args_sha256"`
	// Summary says what will happen, to which notes.
	Summary string `json:"summary"`
	// Changes are the preview's files with their diffs.
	Changes  []FileChange `json:"changes,omitempty"`
	Warnings []string     `json:"warnings,omitempty"`
	// Preview is the operation's preview result (apply=false).
	Preview   any       `json:"preview,omitempty"`
	Surface   string    `json:"surface,omitempty"`
	Session   string    `json:"session,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	DecidedBy string    `json:"decided_by,omitempty"`
	UsedAt    time.Time `json:"used_at,omitzero"`

	via string // how the requesting principal authenticated
}

// Confirmations is the in-memory store of confirmations: bounded, on an
// injectable clock. Ids are 128 random bits; each is bound to a
// principal, an operation and the hash of the arguments, and is used at
// most once.
type Confirmations struct {
	now func() time.Time

	mu    sync.Mutex
	items map[string]*Confirmation
}

// NewConfirmations returns an empty store; now is its clock (nil:
// time.Now).
func NewConfirmations(now func() time.Time) *Confirmations {
	if now == nil {
		now = time.Now
	}
	return &Confirmations{now: now, items: map[string]*Confirmation{}}
}

var confirmInit sync.Mutex

// Pending returns the env's confirmations store, making one on the system
// clock when none was set.
func (e *Env) Pending() *Confirmations {
	confirmInit.Lock()
	defer confirmInit.Unlock()
	if e.Confirmations == nil {
		e.Confirmations = NewConfirmations(nil)
	}
	return e.Confirmations
}

// applies is promoted to every input that embeds WriteOpts: a preview
// (apply=false) never needs a confirmation.
func (o *WriteOpts) applies() bool { return o.Apply }

func (o *WriteOpts) vaultName() string { return o.Vault }

// ArgsHash is the hex SHA-256 of an operation's decoded input (its JSON
// encoding: fields in a fixed order, empty ones left out, no
// confirmation_id) and its name.
func ArgsHash(op string, in any) string {
	b, _ := json.Marshal(in)
	h := sha256.New()
	h.Write([]byte(op))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func sameRequester(cf *Confirmation, p *auth.Principal) bool {
	return p != nil && cf.Principal == p.Name && cf.via == p.Via
}

// purge drops entries past their expiry by another TTL (until then an
// expired id is still reported as expired, not unknown). Called with mu.
func (s *Confirmations) purge(now time.Time) {
	for id, c := range s.items {
		if now.After(c.ExpiresAt.Add(ConfirmTTL)) {
			delete(s.items, id)
		}
	}
}

// live reports whether c waits for a human at now.
func (c *Confirmation) live(now time.Time) bool {
	return c.State == ConfirmPending && now.Before(c.ExpiresAt)
}

// find returns the live pending confirmation of the same call, if any:
// an agent that repeats a call before a human decided gets the same id.
func (s *Confirmations) find(p *auth.Principal, op, hash string, now time.Time) *Confirmation {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.items {
		if c.live(now) && sameRequester(c, p) && c.Operation == op && c.ArgsSHA256 == hash {
			cp := *c
			return &cp
		}
	}
	return nil
}

// add stores c (its id, times and state are set here). A principal with
// too many calls waiting, or a full store, is rate_limited.
func (s *Confirmations) add(c *Confirmation) (*Confirmation, *errs.Error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(now)
	waiting, oldest := 0, time.Time{}
	for _, x := range s.items {
		if x.live(now) && x.Principal == c.Principal && x.via == c.via {
			waiting++
			if oldest.IsZero() || x.ExpiresAt.Before(oldest) {
				oldest = x.ExpiresAt
			}
		}
	}
	if waiting >= maxPendingPerPrincipal {
		secs := max(1, int(oldest.Sub(now).Seconds()+0.999))
		return nil, errs.New(errs.CodeRateLimited, "principal %q has %d calls waiting for a human already; wait for a decision or for one to expire", c.Principal, waiting).
			With("principal", c.Principal).With("reason", "confirmations").With("pending", waiting).With("retry_after_seconds", secs)
	}
	if len(s.items) >= maxConfirmations {
		// Make room: the oldest entry no human needs to see any more.
		var drop string
		for id, x := range s.items {
			if !x.live(now) && (drop == "" || x.CreatedAt.Before(s.items[drop].CreatedAt)) {
				drop = id
			}
		}
		if drop == "" {
			return nil, errs.New(errs.CodeRateLimited, "%d calls are waiting for a human already; decide some first", len(s.items)).
				With("reason", "confirmations").With("pending", len(s.items)).With("retry_after_seconds", int(ConfirmTTL.Seconds()))
		}
		delete(s.items, drop)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "no randomness for a confirmation id")
	}
	c.ID = "cf_" + hex.EncodeToString(b[:])
	c.State = ConfirmPending
	c.CreatedAt = now.UTC()
	c.ExpiresAt = c.CreatedAt.Add(ConfirmTTL)
	s.items[c.ID] = c
	cp := *c
	return &cp, nil
}

// use checks a retried call's id: a confirmed one bound to the same
// principal, operation and arguments, unexpired and unused, is marked
// used and returned with reason "". Otherwise the reason says why not
// ("pending" when no human decided yet).
func (s *Confirmations) use(id string, p *auth.Principal, op, hash string) (*Confirmation, string, string) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(now)
	c, ok := s.items[id]
	if !ok {
		return nil, ReasonUnknown, ""
	}
	switch {
	case !sameRequester(c, p):
		// Tell another principal nothing about the call.
		return nil, ReasonMismatch, "principal"
	case c.Operation != op:
		return nil, ReasonMismatch, "operation"
	case c.ArgsSHA256 != hash:
		return nil, ReasonMismatch, "arguments"
	case c.State == ConfirmUsed:
		return nil, ReasonUsed, ""
	case c.State == ConfirmDenied:
		return nil, ReasonDenied, ""
	case !now.Before(c.ExpiresAt):
		return nil, ReasonExpired, ""
	case c.State == ConfirmPending:
		cp := *c
		return &cp, ConfirmPending, ""
	}
	c.State, c.UsedAt = ConfirmUsed, now.UTC()
	cp := *c
	return &cp, "", ""
}

// List returns the confirmations waiting for a human, oldest first; all
// also returns the decided and recently expired ones.
func (s *Confirmations) List(all bool) []Confirmation {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(now)
	out := []Confirmation{}
	for _, c := range s.items {
		if all || c.live(now) {
			out = append(out, *c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Decisions a human gives.
const (
	DecisionConfirm = "confirm"
	DecisionDeny    = "deny"
)

// decide records a human's decision on a pending confirmation.
func (s *Confirmations) decide(id, decision string, by *auth.Principal) (*Confirmation, *errs.Error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(now)
	c, ok := s.items[id]
	if !ok {
		return nil, invalid(id, ReasonUnknown, "", "no confirmation has the id %s (it may have expired long ago, or the server restarted)", id)
	}
	if sameRequester(c, by) {
		return nil, errs.New(errs.CodeForbidden, "principal %q asked for this call and cannot confirm it itself: a human (or another principal with the admin scope) decides", by.Name).
			With("principal", by.Name).With("confirmation_id", id)
	}
	switch {
	case c.State == ConfirmUsed:
		return nil, invalid(id, ReasonUsed, "", "confirmation %s was confirmed and used already", id)
	case c.State != ConfirmPending:
		return nil, invalid(id, c.State, "", "confirmation %s was %s already", id, c.State).With("state", c.State)
	case !now.Before(c.ExpiresAt):
		return nil, invalid(id, ReasonExpired, "", "confirmation %s expired at %s", id, c.ExpiresAt.Format(time.RFC3339))
	}
	c.State = ConfirmConfirmed
	if decision == DecisionDeny {
		c.State = ConfirmDenied
	}
	c.DecidedAt, c.DecidedBy = now.UTC(), by.Label()
	cp := *c
	return &cp, nil
}

func invalid(id, reason, mismatch, format string, args ...any) *errs.Error {
	e := errs.New(errs.CodeConfirmationInvalid, format, args...).With("confirmation_id", id).With("reason", reason)
	if mismatch != "" {
		e = e.With("mismatch", mismatch)
	}
	return e
}

// ListConfirmations is GET /v1/confirmations and the Pending page: the
// calls waiting for a human (all: with the decided and recently expired
// ones). It needs the admin scope (by nil is the owner).
func (e *Env) ListConfirmations(by *auth.Principal, all bool) ([]Confirmation, *errs.Error) {
	if err := needAdmin(by, "list confirmations"); err != nil {
		return nil, err
	}
	return e.Pending().List(all), nil
}

// DecideConfirmation is POST /v1/confirmations/{id}, the Pending page's
// buttons and `loci confirm`: a human confirms or denies a pending call.
// It needs the admin scope, and the principal that asked for the call
// cannot decide it.
func (e *Env) DecideConfirmation(by *auth.Principal, id, decision string) (*Confirmation, *errs.Error) {
	if err := needAdmin(by, "decide confirmations"); err != nil {
		return nil, err
	}
	if decision != DecisionConfirm && decision != DecisionDeny {
		return nil, errs.New(errs.CodeInvalidInput, "decision must be %q or %q, not %q", DecisionConfirm, DecisionDeny, decision).With("decision", decision)
	}
	c, err := e.Pending().decide(id, decision, by)
	if err != nil {
		return nil, err
	}
	e.emitConfirmation(EventConfirmationDecided, c)
	return c, nil
}

func needAdmin(by *auth.Principal, what string) *errs.Error {
	if by.Has(auth.ScopeAdmin) {
		return nil
	}
	return errs.New(errs.CodeForbidden, "principal %q may not %s: that needs the admin scope", by.Name, what).
		With("principal", by.Name).With("missing_scopes", []string{string(auth.ScopeAdmin)})
}

func (e *Env) emitConfirmation(kind string, c *Confirmation) {
	e.Emit(Event{Kind: kind, Vault: c.Vault, Data: map[string]any{
		"id": c.ID, "principal": c.Principal, "operation": c.Operation, "state": c.State,
	}})
}

// confirmGate holds a destructive call of a principal whose policy is
// confirm until a human confirmed it. A preview (apply=false) passes; an
// applying call without a valid confirmation_id is previewed, stored and
// answered with confirmation_required; the retry with a confirmed id
// passes once.
func (e *Env) confirmGate(ctx context.Context, r *Registry, c Caller, op *Op, raw json.RawMessage, in any, id string) *errs.Error {
	p := c.Principal
	if !p.MustConfirm() {
		return nil
	}
	if a, ok := in.(interface{ applies() bool }); ok && !a.applies() {
		return nil
	}
	store := e.Pending()
	hash := ArgsHash(op.Name, in)
	if id != "" {
		cf, reason, mismatch := store.use(id, p, op.Name, hash)
		switch reason {
		case "":
			return nil
		case ConfirmPending:
			return required(cf, "a human has not decided yet")
		}
		return invalid(id, reason, mismatch, "%s", invalidMessage(id, reason, mismatch))
	}
	if cf := store.find(p, op.Name, hash, store.now()); cf != nil {
		return required(cf, "a human has not decided yet")
	}
	cf, err := e.previewForConfirmation(ctx, op, raw, c)
	if err != nil {
		return err
	}
	cf.ArgsSHA256 = hash
	if v, ok := in.(interface{ vaultName() string }); ok {
		cf.Vault = v.vaultName()
	}
	if cf.Vault == "" && len(e.Vaults) > 0 {
		cf.Vault = e.Vaults[0].Name
	}
	cf, err = store.add(cf)
	if err != nil {
		return err
	}
	e.emitConfirmation(EventConfirmationPending, cf)
	return required(cf, "")
}

func invalidMessage(id, reason, mismatch string) string {
	switch reason {
	case ReasonUnknown:
		return fmt.Sprintf("no confirmation has the id %s; call again without confirmation_id to ask a human anew", id)
	case ReasonExpired:
		return fmt.Sprintf("confirmation %s expired (%s after it was asked for); call again without confirmation_id to ask anew", id, ConfirmTTL)
	case ReasonUsed:
		return fmt.Sprintf("confirmation %s was used already: each confirms one call", id)
	case ReasonDenied:
		return fmt.Sprintf("a human denied confirmation %s; do not repeat the call", id)
	}
	if mismatch == "principal" {
		return fmt.Sprintf("confirmation %s was not given to you", id)
	}
	return fmt.Sprintf("confirmation %s was given for another call (its %s differ); repeat exactly the call that was confirmed", id, mismatch)
}

func required(cf *Confirmation, why string) *errs.Error {
	msg := fmt.Sprintf("%s needs a human's confirmation: %s. Ask a person to confirm %s (web UI: Pending; or `loci confirm %s`) within %s, then repeat the same call with confirmation_id=%q",
		cf.Operation, cf.Summary, cf.ID, cf.ID, ConfirmTTL, cf.ID)
	if why != "" {
		msg = fmt.Sprintf("%s: %s. When a person confirmed %s (web UI: Pending; or `loci confirm %s`), repeat the same call with confirmation_id=%q before %s",
			why, cf.Summary, cf.ID, cf.ID, cf.ID, cf.ExpiresAt.Format(time.RFC3339))
	}
	return errs.New(errs.CodeConfirmationRequired, "%s", msg).
		With("confirmation_id", cf.ID).With("expires_at", cf.ExpiresAt.Format(time.RFC3339)).
		With("summary", cf.Summary).With("preview", cf.Preview).With("state", cf.State)
}

// previewForConfirmation runs the call as a preview (apply=false, no
// idempotency key) and describes it for a human.
func (e *Env) previewForConfirmation(ctx context.Context, op *Op, raw json.RawMessage, c Caller) (*Confirmation, *errs.Error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	m["apply"] = json.RawMessage("false")
	delete(m, "idempotency_key")
	b, _ := json.Marshal(m)
	in, err := op.Decode(b)
	if err != nil {
		return nil, errs.As(err)
	}
	out, err := op.handler(ctx, e, in)
	if err != nil {
		return nil, errs.As(err)
	}
	cf := &Confirmation{Principal: c.Principal.Name, via: c.Principal.Via, Operation: op.Name, Surface: c.Surface, Session: c.Session}
	var res struct {
		Action   string       `json:"action"`
		Path     string       `json:"path"`
		Changes  []FileChange `json:"changes"`
		Warnings []string     `json:"warnings"`
	}
	ob, _ := json.Marshal(out)
	_ = json.Unmarshal(ob, &res)
	cf.Changes, cf.Warnings, cf.Preview = res.Changes, res.Warnings, out
	if len(ob) > maxPreviewBytes {
		// Keep what happens to which notes; drop the diffs.
		for i := range cf.Changes {
			cf.Changes[i].Diff = ""
		}
		cf.Preview = map[string]any{"action": res.Action, "path": res.Path, "changes": cf.Changes, "warnings": res.Warnings,
			"note": fmt.Sprintf("the diff is %d bytes, too large to keep; preview the call yourself to see it", len(ob))}
	}
	cf.Summary = summarize(c.Principal.Name, op.Name, res.Changes, res.Warnings)
	return cf, nil
}

// summarize says in one line what a call will do, to which notes.
func summarize(principal, op string, changes []FileChange, warnings []string) string {
	var parts []string
	for i, ch := range changes {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more files", len(changes)-10))
			break
		}
		switch ch.Action {
		case "delete":
			s := "move " + ch.Path + " to the trash"
			if ch.TrashPath != "" {
				s += " (" + ch.TrashPath + ")"
			}
			parts = append(parts, s)
		case "move":
			parts = append(parts, "move "+ch.Path+" to "+ch.To)
		case "update":
			parts = append(parts, "replace the text of "+ch.Path)
		case "create":
			parts = append(parts, "create "+ch.Path)
		case "remove":
			parts = append(parts, "remove "+ch.Path)
		default:
			parts = append(parts, ch.Action+" "+ch.Path)
		}
	}
	what := "change nothing"
	if len(parts) > 0 {
		what = strings.Join(parts, "; ")
	}
	s := fmt.Sprintf("%s asks to run %s, which will %s", principal, op, what)
	if len(warnings) > 0 {
		s += " (warning: " + strings.Join(warnings, "; ") + ")"
	}
	return s
}
