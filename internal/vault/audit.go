package vault

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/safefs"
)

// auditMaxBytes is where audit.log is rotated to audit.log.1.
const auditMaxBytes = 16 << 20

// WriteRecord is one line of <vault>/.loci/audit.log: an applied write. It
// never holds note contents, only who changed which files from which etag
// to which.
type WriteRecord struct {
	Time           time.Time     `json:"time"`
	Vault          string        `json:"vault"`
	Surface        string        `json:"surface,omitempty"`
	Session        string        `json:"session,omitempty"`
	Principal      string        `json:"principal,omitempty"`
	Operation      string        `json:"operation"`
	Paths          []string      `json:"paths"`
	Changes        []AuditChange `json:"changes"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
	UndoID         string        `json:"undo_id"`
	Undoes         []string      `json:"undoes,omitempty"`
}

// AuditChange is one file of an audit record.
type AuditChange struct {
	Path      string `json:"path"`
	Action    string `json:"action"`
	OldEtag   string `json:"old_etag,omitempty"`
	NewEtag   string `json:"new_etag,omitempty"`
	TrashPath string `json:"trash_path,omitempty"`
}

type auditLog struct {
	root safefs.Root
	rel  string
	mu   sync.Mutex
}

// append writes one NDJSON line with a single write on an O_APPEND file, so
// lines from several processes never interleave.
func (a *auditLog) append(r *WriteRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if st, err := a.root.Lstat(a.rel); err == nil && st.Mode().IsRegular() && st.Size()+int64(len(line)) > auditMaxBytes {
		a.root.Rename(a.rel, a.rel+".1")
	}
	// Not fsynced: the journal entry, fsynced before the change, is the
	// durable record; a crash of loci loses no audit line (the kernel has
	// it), only a crash of the machine can. A link planted at audit.log is
	// refused (path_denied), never appended through.
	return a.root.AppendLine(a.rel, line, 0o600)
}
