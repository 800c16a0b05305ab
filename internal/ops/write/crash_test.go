package write_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/write"
	"github.com/loci-dev/loci/internal/vault"
)

// crashContent is the j-th version of the note the helper writes (4-45 KB).
func crashContent(j int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nseq: %d\n---\n# Crash test\n\n", j)
	for i := range 50 + (j*7919)%600 {
		fmt.Fprintf(&b, "line %d of version %d: the quick brown fox jumps over the lazy dog\n", i, j)
	}
	return b.String()
}

// seqOf reads the version number from the note's frontmatter.
func seqOf(b []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("---\nseq: "))
	if !ok {
		return 0, false
	}
	end := bytes.IndexByte(rest, '\n')
	if end < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(rest[:end]))
	return n, err == nil
}

// TestCrashSafety kills a process that writes a note in a loop (through
// the whole write pipeline: lock, journal, atomic replace, audit, re-index)
// with SIGKILL, 100 times at seeded random moments. After every kill the
// note must be exactly one complete version (the last one reported written,
// or one the helper finished after it) and the index must heal at the next
// start, with a database that passes integrity_check.
func TestCrashSafety(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL is POSIX")
	}
	kills := 100
	if testing.Short() {
		kills = 10
	}
	vroot := filepath.Join(t.TempDir(), "vault")
	env := opstest.OpenEnv(t, func() string {
		os.MkdirAll(vroot, 0o755)
		os.WriteFile(filepath.Join(vroot, "Crash.md"), []byte(crashContent(0)), 0o644)
		os.WriteFile(filepath.Join(vroot, "Other.md"), []byte("# Other\n"), 0o644)
		return vroot
	}())
	vh := env.Vaults[0]
	rng := rand.New(rand.NewPCG(2026, 11))
	journal := filepath.Join(vroot, ".loci", "journal")
	entries := func() int {
		des, _ := os.ReadDir(journal)
		n := 0
		for _, d := range des {
			if strings.HasSuffix(d.Name(), ".entry") {
				n++
			}
		}
		return n
	}
	noteSeq := func() int {
		b, _ := os.ReadFile(filepath.Join(vroot, "Crash.md"))
		n, _ := seqOf(b)
		return n
	}
	tmpExists := func() bool {
		m, _ := filepath.Glob(filepath.Join(vroot, ".Crash.md.loci-*.tmp"))
		return len(m) > 0
	}
	// The moment of each kill is drawn (seeded) among the stages of a write,
	// and found by watching the files, never by waiting a duration:
	// 0 right after a write was reported, 1 once the next journal entry is
	// durable, 2 while the next temporary file exists, 3 once the new
	// version replaced the note (re-indexing under way).
	phases := []string{"after a write", "journal written", "temporary file", "note replaced"}
	var hit [4]int
	next, midWrite, sameVersion, newerVersion := 1, 0, 0, 0
	start := time.Now()
	for k := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LOCI_CRASH_HELPER="+vroot, "LOCI_CRASH_START="+strconv.Itoa(next), "LOCI_CRASH_INDEX="+vh.Index.Dir,
			"LOCI_EMBED_PROVIDER=none") // the helper exercises the write pipeline, not embeddings
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wrote := make(chan int, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "wrote "); ok {
					n, _ := strconv.Atoi(v)
					wrote <- n
				}
			}
			close(wrote)
		}()
		last, ok := <-wrote
		if !ok {
			cmd.Wait()
			t.Fatalf("kill %d: the helper wrote nothing: %s", k, stderr.String())
		}
		phase := rng.IntN(len(phases))
		base, baseSeq := entries(), noteSeq()
		for deadline := 0; ; deadline++ {
			select {
			case n, ok := <-wrote:
				if ok {
					last, base, baseSeq = n, entries(), noteSeq() // a write went by: target the next one
				}
			default:
			}
			var now bool
			switch phase {
			case 0:
				now = true
			case 1:
				now = entries() > base
			case 2:
				now = tmpExists()
			case 3:
				now = noteSeq() > baseSeq
			}
			if now || deadline > 1_000_000 {
				break
			}
			runtime.Gosched()
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		for n := range wrote {
			last = max(last, n)
		}
		hit[phase]++

		b, err := os.ReadFile(filepath.Join(vroot, "Crash.md"))
		if err != nil {
			t.Fatalf("kill %d: the note is gone: %v", k, err)
		}
		seq, ok := seqOf(b)
		if !ok || string(b) != crashContent(seq) {
			t.Fatalf("kill %d: the note is not a complete version (%d bytes, seq %d ok %v)", k, len(b), seq, ok)
		}
		if seq < last {
			t.Fatalf("kill %d: the note is version %d, but version %d was reported written", k, seq, last)
		}
		if seq == last {
			sameVersion++
		} else {
			newerVersion++
		}
		if tmps, _ := filepath.Glob(filepath.Join(vroot, ".Crash.md.loci-*.tmp")); len(tmps) > 0 {
			midWrite++
		}
		next = seq + 1

		// The next start heals the index.
		if _, err := env.Sync(context.Background(), vh, index.SyncOptions{Wait: true}); err != nil {
			t.Fatalf("kill %d: sync after the crash: %v", k, err)
		}
		n, err := vh.Index.NoteByPath(context.Background(), "Crash.md")
		if err != nil || n.Etag != vault.Etag(b) {
			t.Fatalf("kill %d: index etag %v, note %s: %v", k, n, vault.Etag(b), err)
		}
	}
	var check string
	if err := vh.Index.DB.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("index integrity: %q %v", check, err)
	}
	// The journal holds only whole entries; a write after the crashes
	// leaves no temporary file behind and can be undone.
	w := opstest.MustWriter(t, env)
	all, err := w.Journal()
	if err != nil || len(all) < kills {
		t.Errorf("journal: %d entries, %v", len(all), err)
	}
	env.Writes = ops.WriteSettings{Enabled: true}
	out := opstest.Call[ops.WriteResult](t, env, "write_note", `{"path":"Crash.md","content":"final\n","overwrite":true,"apply":true}`)
	if tmps, _ := filepath.Glob(filepath.Join(vroot, ".Crash.md.loci-*.tmp")); len(tmps) != 0 {
		t.Errorf("temporary files left after a clean write: %v", tmps)
	}
	opstest.Call[write.UndoOut](t, env, "undo", `{"id":"`+out.UndoID+`","apply":true}`)
	if b, _ := os.ReadFile(filepath.Join(vroot, "Crash.md")); string(b) != crashContent(next-1) {
		t.Error("undo after the crashes did not restore the last version")
	}
	t.Logf("%d SIGKILLs in %s: the note was always one whole version (%d times the last reported, %d times a later one); "+
		"%d kills left a temporary file (killed mid-write); index healed every time; kills per stage: %s %d, %s %d, %s %d, %s %d",
		kills, time.Since(start).Round(time.Millisecond), sameVersion, newerVersion, midWrite,
		phases[0], hit[0], phases[1], hit[1], phases[2], hit[2], phases[3], hit[3])
}

// TestCrashHelperProcess is the writer TestCrashSafety kills.
func TestCrashHelperProcess(t *testing.T) {
	root := os.Getenv("LOCI_CRASH_HELPER")
	if root == "" {
		t.Skip("helper process of TestCrashSafety")
	}
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, root, os.Getenv("LOCI_CRASH_INDEX"), nil, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}, Writes: ops.WriteSettings{Enabled: true}}
	// Start like a server does: sync first (this heals what the last kill left).
	if _, err := env.Sync(ctx, vh, index.SyncOptions{Wait: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	j, _ := strconv.Atoi(os.Getenv("LOCI_CRASH_START"))
	for ; ; j++ {
		in, _ := json.Marshal(map[string]any{"path": "Crash.md", "content": crashContent(j), "overwrite": true, "apply": true})
		res := opstest.Reg.Call(ctx, env, ops.Caller{Surface: "cli"}, "write_note", in)
		if res.Err != nil {
			fmt.Fprintln(os.Stderr, res.Err)
			os.Exit(2)
		}
		fmt.Printf("wrote %d\n", j)
	}
}
