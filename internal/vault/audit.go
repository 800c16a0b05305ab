package vault

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
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
	Subject        string        `json:"subject,omitempty"`
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
	path string
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
	if err := os.MkdirAll(filepath.Dir(a.path), 0o755); err != nil {
		return err
	}
	if st, err := os.Stat(a.path); err == nil && st.Size()+int64(len(line)) > auditMaxBytes {
		os.Rename(a.path, a.path+".1")
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	// Not fsynced: the journal entry, fsynced before the change, is the
	// durable record; a crash of loci loses no audit line (the kernel has
	// it), only a crash of the machine can.
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
