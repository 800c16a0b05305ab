// Package pgtest starts throwaway PostgreSQL clusters for tests, from the
// PostgreSQL binaries installed on the machine (no container, no network).
//
// A cluster is initdb'd into a temporary directory, served by a postgres
// process that is a child of the test binary, reachable only through a unix
// socket in a short private directory (no TCP port, so parallel test
// binaries never collide), and removed at the end. It runs with fsync off:
// it is for tests, never for data.
//
// Two ways to get one:
//
//   - Start(t): a cluster for one test, stopped and removed in t.Cleanup.
//   - Shared(t): one cluster per test binary, started by the first test that
//     asks for it; the package's TestMain calls Main(m) so it is stopped after
//     the last test. Tests isolate themselves with NewDatabase(t), a fresh
//     database dropped in t.Cleanup.
//
// When no PostgreSQL binaries exist, both skip the test with a message
// saying how to install them; any other failure (initdb or postgres failing)
// fails the test, it does not skip it.
//
// Root: initdb and postgres refuse to run as root, and tests here (and in CI
// containers) run as root. When the process is root, the cluster's files are
// owned by, and initdb and postgres run as, an unprivileged account: the
// "postgres" account the distribution's package creates with the binaries,
// else "nobody" (LOCI_PG_USER names another). The processes get that uid
// and gid through SysProcAttr.Credential (no su, sudo or runuser needed);
// the data and socket directories are chown'ed to it, and the directories
// above them made traversable (0711), not readable.
//
// The postgres process is started directly (not through pg_ctl, which
// detaches it): it gets Pdeathsig, so if the test binary dies (a timeout
// panic, kill -9) postgres is told to quit at once instead of lingering;
// readiness is its own "ready to accept connections" log line, not a poll.
// (Pdeathsig is sent when the OS thread that started postgres exits; the Go
// runtime keeps its threads unless a goroutine exits locked to one, which
// this package never does. Checked by hand: kill -9 of a test binary takes
// its postgres down.) Directories of a killed binary stay in the temp dir.
//
// initdb is most of a start; its result is kept in a template cache
// (template.go) and later clusters copy it. LOCI_PG_CACHE=off disables it.
package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// User is the PostgreSQL superuser of a test cluster (trust auth on the
// socket, which only the test's account and root can reach).
const User = "loci"

// startTimeout bounds initdb plus postgres start; generous for a loaded
// two-core machine, and a failure, not a skip, when exceeded.
const startTimeout = 2 * time.Minute

// Cluster is a running throwaway PostgreSQL cluster.
type Cluster struct {
	// BinDir is the directory holding initdb and postgres.
	BinDir string
	// Version is the major version reported by postgres --version ("15").
	Version string
	// DataDir is the cluster's data directory.
	DataDir string
	// SocketDir is the directory holding the unix socket .s.PGSQL.5432.
	SocketDir string
	// StartTime is how long initdb (or the template copy) plus the start
	// of postgres took.
	StartTime time.Duration
	// FromTemplate reports that the data directory was copied from the
	// template cache instead of being made by initdb.
	FromTemplate bool

	cmd     *exec.Cmd
	exited  chan struct{}
	logMu   sync.Mutex
	logTail []string
	dbSeq   atomic.Int64
	removes []string
	stopped sync.Once
}

// DSN returns a libpq key/value connection string for database db (the
// default database is "postgres"), as pgx.Connect and psql accept it.
func (c *Cluster) DSN(db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("host=%s port=5432 user=%s dbname=%s sslmode=disable", c.SocketDir, User, db)
}

// ErrNoBinaries reports that no PostgreSQL server binaries were found.
var ErrNoBinaries = errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres) found; " +
	"install them (apt-get install -y postgresql; .ci/run does it in CI) or set LOCI_PG_BINDIR")

// FindBinDir returns the directory holding initdb and postgres: LOCI_PG_BINDIR
// if set, else `pg_config --bindir`, else the newest /usr/lib/postgresql/N/bin,
// else the directory of initdb on PATH (symlinks resolved). It returns
// ErrNoBinaries when none holds both programs.
func FindBinDir() (string, error) {
	var cands []string
	if d := os.Getenv("LOCI_PG_BINDIR"); d != "" {
		if hasServer(d) {
			return d, nil
		}
		return "", fmt.Errorf("pgtest: LOCI_PG_BINDIR=%s holds no initdb and postgres: %w", d, ErrNoBinaries)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		cands = append(cands, strings.TrimSpace(string(out)))
	}
	if ds, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); len(ds) > 0 {
		sort.Slice(ds, func(i, j int) bool { return versionOf(ds[i]) > versionOf(ds[j]) })
		cands = append(cands, ds...)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			cands = append(cands, filepath.Dir(r))
		}
		cands = append(cands, filepath.Dir(p))
	}
	for _, d := range cands {
		if hasServer(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func hasServer(dir string) bool {
	for _, p := range []string{"initdb", "postgres"} {
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// account is the uid/gid the cluster runs as; nil means the current user.
type account struct {
	name     string
	uid, gid uint32
}

func runAs() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	names := []string{"postgres", "nobody"}
	if n := os.Getenv("LOCI_PG_USER"); n != "" {
		names = []string{n}
	}
	for _, n := range names {
		u, err := user.Lookup(n)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &account{name: n, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("pgtest: running as root and no unprivileged account (%s) to run PostgreSQL as; set LOCI_PG_USER", strings.Join(names, ", "))
}

func (a *account) apply(cmd *exec.Cmd) { applyProcAttr(cmd, a) }

// own makes dir belong to the account (mode 0700, as postgres demands for
// its data directory) and the directories from dir's parent up to (not
// including) stop traversable by it.
func (a *account) own(dir, stop string) error {
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	if a == nil {
		return nil
	}
	if err := os.Chown(dir, int(a.uid), int(a.gid)); err != nil {
		return err
	}
	stop = filepath.Clean(stop)
	for p := filepath.Dir(dir); p != stop && p != filepath.Dir(p); p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o011 != 0o011 {
			if err := os.Chmod(p, st.Mode().Perm()|0o011); err != nil {
				return err
			}
		}
	}
	return nil
}

// Start starts a cluster for one test (in t.TempDir()) and stops and
// removes it in t.Cleanup. It skips the test when no PostgreSQL binaries
// exist and fails it on any other error.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := start(t.TempDir())
	if errors.Is(err, ErrNoBinaries) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgtest: stop: %v", err)
		}
	})
	return c
}

var shared struct {
	mu      sync.Mutex
	started bool
	c       *Cluster
	err     error
}

// Shared returns the test binary's shared cluster, starting it on first
// use. The package's TestMain must call Main so it is stopped at the end.
// It skips the test when no PostgreSQL binaries exist.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.mu.Lock()
	if !shared.started {
		shared.started = true
		shared.c, shared.err = start("")
	}
	c, err := shared.c, shared.err
	shared.mu.Unlock()
	if errors.Is(err, ErrNoBinaries) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Main runs the tests and then stops the shared cluster if one was started;
// use it as `func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }`.
func Main(m *testing.M) int {
	code := m.Run()
	shared.mu.Lock()
	c := shared.c
	shared.mu.Unlock()
	if c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop shared cluster:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// NewDatabase creates a fresh, empty database in c for one test and returns
// its DSN; the database is dropped in t.Cleanup (WITH (FORCE): connections a
// test left open do not block it).
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database: %v", err)
		}
	})
	return c.DSN(name)
}

func (c *Cluster) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.DSN(""))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// start initdb's a cluster under parent (a new private temp dir when "")
// and starts postgres on it.
func start(parent string) (_ *Cluster, err error) {
	t0 := time.Now()
	bin, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	acct, err := runAs()
	if err != nil {
		return nil, err
	}
	c := &Cluster{BinDir: bin, exited: make(chan struct{})}
	defer func() {
		if err != nil {
			c.removeAll()
		}
	}()
	if parent == "" {
		parent, err = os.MkdirTemp("", "loci-pgtest-")
		if err != nil {
			return nil, err
		}
		c.removes = append(c.removes, parent)
	}
	// The socket path must fit in sun_path (107 bytes); t.TempDir() paths
	// carry the test name and can be longer, so the socket gets its own
	// short directory.
	c.SocketDir, err = os.MkdirTemp("", "pgs")
	if err != nil {
		return nil, err
	}
	c.removes = append(c.removes, c.SocketDir)
	c.DataDir = filepath.Join(parent, "pgdata")
	if err := os.Mkdir(c.DataDir, 0o700); err != nil {
		return nil, err
	}
	if err := acct.own(c.DataDir, os.TempDir()); err != nil {
		return nil, fmt.Errorf("pgtest: prepare data dir for %v: %w", acct, err)
	}
	if err := acct.own(c.SocketDir, os.TempDir()); err != nil {
		return nil, fmt.Errorf("pgtest: prepare socket dir: %w", err)
	}
	// A cluster dir under t.TempDir() is removed by the testing package,
	// which runs as root here and can remove files owned by the account.

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()

	ver, err := exec.CommandContext(ctx, filepath.Join(bin, "postgres"), "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres --version: %w", err)
	}
	c.Version = majorVersion(string(ver))

	initdbArgs := []string{"-D", c.DataDir, "-U", User, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"}
	cache := templateDir(bin, string(ver), initdbArgs[2:])
	if cache != "" && copyTree(cache, c.DataDir, acct) == nil {
		c.FromTemplate = true
	} else {
		if cache != "" {
			// A half-copied data dir is not reused: start it afresh.
			if err := os.RemoveAll(c.DataDir); err != nil {
				return nil, err
			}
			if err := os.Mkdir(c.DataDir, 0o700); err != nil {
				return nil, err
			}
			if err := acct.own(c.DataDir, os.TempDir()); err != nil {
				return nil, err
			}
		}
		initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), initdbArgs...)
		initdb.Env = pgEnv()
		initdb.Dir = c.DataDir
		acct.apply(initdb)
		if out, err := initdb.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, tail(string(out), 20))
		}
		saveTemplate(c.DataDir, bin, string(ver), initdbArgs[2:])
	}

	pg := exec.Command(filepath.Join(bin, "postgres"),
		"-D", c.DataDir,
		"-k", c.SocketDir,
		"-c", "listen_addresses=",
		"-c", "port=5432",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "shared_buffers=32MB",
		"-c", "logging_collector=off",
		"-c", "log_destination=stderr",
		"-c", "log_min_messages=log",
	)
	pg.Env = pgEnv()
	pg.Dir = c.DataDir
	acct.apply(pg)
	stderr, err := pg.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := pg.Start(); err != nil {
		return nil, fmt.Errorf("pgtest: start postgres: %w", err)
	}
	c.cmd = pg
	ready := make(chan struct{})
	go c.readLog(stderr, ready)
	go func() { _ = pg.Wait(); close(c.exited) }()
	select {
	case <-ready:
	case <-c.exited:
		return nil, fmt.Errorf("pgtest: postgres exited before it was ready: %s\n%s", pg.ProcessState, c.log())
	case <-ctx.Done():
		return nil, fmt.Errorf("pgtest: postgres not ready after %s:\n%s", startTimeout, c.log())
	}
	c.StartTime = time.Since(t0)
	return c, nil
}

func (a *account) String() string {
	if a == nil {
		return "current user"
	}
	return fmt.Sprintf("%s (uid %d)", a.name, a.uid)
}

// pgEnv is a minimal, deterministic environment: no PG* variables of the
// developer's leak into the test cluster.
func pgEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC"}
}

func majorVersion(s string) string {
	// "postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)"
	f := strings.Fields(s)
	for i, w := range f {
		if w == "(PostgreSQL)" && i+1 < len(f) {
			v, _, _ := strings.Cut(f[i+1], ".")
			return v
		}
	}
	return ""
}

// readLog keeps the last lines of postgres's log (for error messages) and
// closes ready when it reports it accepts connections.
func (c *Cluster) readLog(r io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	once := sync.Once{}
	for sc.Scan() {
		line := sc.Text()
		c.logMu.Lock()
		c.logTail = append(c.logTail, line)
		if len(c.logTail) > 50 {
			c.logTail = c.logTail[len(c.logTail)-50:]
		}
		c.logMu.Unlock()
		if strings.Contains(line, "database system is ready to accept connections") {
			once.Do(func() { close(ready) })
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

func (c *Cluster) log() string {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return strings.Join(c.logTail, "\n")
}

// Stop shuts postgres down (fast shutdown: open sessions are ended) and
// removes the directories this package created. Safe to call twice.
func (c *Cluster) Stop() error {
	var err error
	c.stopped.Do(func() {
		if c.cmd != nil && c.cmd.Process != nil {
			_ = c.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-c.exited:
			case <-time.After(time.Minute):
				_ = c.cmd.Process.Kill()
				<-c.exited
				err = fmt.Errorf("pgtest: postgres did not stop within a minute; killed:\n%s", c.log())
			}
		}
		c.removeAll()
	})
	return err
}

func (c *Cluster) removeAll() {
	for _, d := range c.removes {
		_ = os.RemoveAll(d)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
