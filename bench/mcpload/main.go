// Command mcpload measures loci's MCP service the way agents use it:
//
//   - load: a real `loci serve` process (built from this tree) on 127.0.0.1,
//     N concurrent Streamable HTTP MCP sessions (the official Go SDK client)
//     making M search_notes calls in total; zero errors expected; p50/p99
//     latency and calls/s, next to the same queries run in-process (the
//     engine's own cost) and through the CLI (a process per query);
//   - cold start: from spawning `loci mcp` to the first search_notes result
//     over stdio, on an already-indexed vault (median and p90 of K runs).
//
// Usage: go run ./bench/mcpload [-vault DIR] [-sessions 32] [-calls 5000] [-queries 200] [-cold 20]
//
//	[-mode lexical|hybrid] [-bin PATH] [-index DIR] [-serveprof FILE]
//
// -bin measures a prebuilt loci (say, main's, built to /tmp) instead of
// building this tree, so a before and an after binary can be run in turn;
// -index keeps the index between runs (the sync at start is then a no-op);
// -serveprof writes a CPU profile of the serve process over the load phase
// (the binary is built with -tags startprof, or -bin must be such a build).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/bench/internal/benchstat"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/textseg"
	"github.com/loci-dev/loci/internal/vault"
)

func main() {
	vaultDir := flag.String("vault", filepath.Join("..", "shared", "corpora", "obsidian-hub"), "vault to serve")
	sessions := flag.Int("sessions", 32, "concurrent MCP sessions")
	calls := flag.Int("calls", 5000, "search_notes calls in total")
	nQueries := flag.Int("queries", 200, "distinct queries, drawn from note titles and cycled through; at least -calls makes every call new to the server's result cache (512 entries)")
	cold := flag.Int("cold", 20, "cold-start runs over stdio")
	cliRuns := flag.Int("cli", 20, "CLI invocations for the CLI baseline")
	mode := flag.String("mode", "", "search_notes mode (lexical, semantic, hybrid); empty: the operation's default (hybrid when vectors exist)")
	binFlag := flag.String("bin", "", "a prebuilt loci binary to measure (default: build this tree)")
	idxFlag := flag.String("index", "", "index folder to use and keep (default: a new temp folder)")
	serveLog := flag.String("servelog", "", "append the serve process's stderr (its log) to this file")
	serveProf := flag.String("serveprof", "", "write a CPU profile of `loci serve` during the load phase to this file")
	flag.Parse()
	if _, err := os.Stat(*vaultDir); err != nil {
		fmt.Printf("skip: vault %s not found (needs ../shared beside the repo)\n", *vaultDir)
		return
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "loci-mcpload-")
	benchstat.Check(err)
	defer os.RemoveAll(tmp)

	bin := *binFlag
	if bin == "" {
		bin = filepath.Join(tmp, "loci")
		args := []string{"build", "-o", bin}
		if *serveProf != "" {
			args = append(args, "-tags", "startprof")
		}
		build := exec.Command("go", append(args, "./cmd/loci")...)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stderr = os.Stderr
		benchstat.Check(build.Run())
	}
	idx := filepath.Join(tmp, "idx")
	if *idxFlag != "" {
		idx = *idxFlag
	}
	args := func(q string) map[string]any {
		a := map[string]any{"query": q, "limit": 10}
		if *mode != "" {
			a["mode"] = *mode
		}
		return a
	}
	ix := openIndex(ctx, *vaultDir, idx)
	_, err = ix.Sync(ctx, index.SyncOptions{})
	benchstat.Check(err)
	queries := makeQueries(ctx, ix, max(1, *nQueries))

	ix.Close()
	// In-process baseline: the same operation through the registry's
	// dispatch (default mode: hybrid when vectors exist), no transport.
	vh, err := ops.OpenVault(ctx, *vaultDir, idx, nil, true)
	benchstat.Check(err)
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	reg := catalog.All()
	var inproc []time.Duration
	for round := 0; round < 2; round++ {
		inproc = inproc[:0]
		for _, q := range queries[:min(200, len(queries))] {
			raw, _ := json.Marshal(args(q))
			t := time.Now()
			res := reg.Call(ctx, env, ops.Caller{Surface: "bench"}, "search_notes", raw)
			if res.Err != nil {
				benchstat.Check(res.Err)
			}
			inproc = append(inproc, time.Since(t))
		}
	}
	env.Close()

	fmt.Printf("vault %s, %d distinct queries drawn from note titles (in-process: the first %d, second round, so result-cache hits)\n", *vaultDir, len(queries), min(200, len(queries)))
	fmt.Printf("  in-process search_notes   p50 %6.2f ms  p99 %6.2f ms\n", benchstat.MS(benchstat.Pct(inproc, 50)), benchstat.MS(benchstat.Pct(inproc, 99)))

	// CLI baseline: a process per query, index already built.
	var cli []time.Duration
	for i := 0; i < *cliRuns; i++ {
		q := queries[i%len(queries)]
		t := time.Now()
		cargs := []string{"search", q, "--vault", *vaultDir, "--index-dir", idx, "--format", "json"}
		if *mode != "" {
			cargs = append(cargs, "--mode", *mode)
		}
		out, err := exec.Command(bin, cargs...).Output()
		benchstat.Check(err)
		cli = append(cli, time.Since(t))
		if !json.Valid(out) {
			benchstat.Check(fmt.Errorf("cli output is not JSON"))
		}
	}
	fmt.Printf("  CLI (process per query)   p50 %6.2f ms  p99 %6.2f ms\n", benchstat.MS(benchstat.Pct(cli, 50)), benchstat.MS(benchstat.Pct(cli, 99)))

	// Load over Streamable HTTP against a real `loci serve`.
	port := freePort()
	token := "bench-token-0123456789abcdef"
	srv := exec.Command(bin, "serve", *vaultDir, "--index-dir", idx, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--max-sessions", fmt.Sprint(*sessions*2))
	srv.Env = append(os.Environ(), "LOCI_TOKEN="+token)
	if *serveProf != "" {
		srv.Env = append(srv.Env, "LOCI_STARTPROF="+*serveProf)
	}
	srv.Stdout, srv.Stderr = nil, nil
	if *serveLog != "" {
		f, err := os.OpenFile(*serveLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		benchstat.Check(err)
		defer f.Close()
		srv.Stderr = f
	}
	benchstat.Check(srv.Start())
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(base)

	hc := &http.Client{Transport: bearer{token: token, rt: &http.Transport{MaxIdleConnsPerHost: *sessions * 2}}}
	var lat []time.Duration
	var mu sync.Mutex
	var errCount, next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	srvCPU0, selfCPU0 := procCPU(srv.Process.Pid), selfCPU()
	for i := 0; i < *sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil)
			if err != nil {
				errCount.Add(1)
				fmt.Fprintln(os.Stderr, "connect:", err)
				return
			}
			defer cs.Close()
			var local []time.Duration
			for {
				n := next.Add(1)
				if n > int64(*calls) {
					break
				}
				q := queries[int(n)%len(queries)]
				t := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: args(q)})
				d := time.Since(t)
				if err != nil || res.IsError {
					if errCount.Add(1) <= 3 {
						msg := fmt.Sprint(err)
						if res != nil && len(res.Content) > 0 {
							if tc, ok := res.Content[0].(*mcp.TextContent); ok {
								msg = tc.Text
							}
						}
						fmt.Fprintf(os.Stderr, "mcpload: call failed: %.300s\n", msg)
					}
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	srvCPU, selfCPUd := procCPU(srv.Process.Pid)-srvCPU0, selfCPU()-selfCPU0
	fmt.Printf("  MCP HTTP, %d sessions, mode %q      p50 %6.2f ms  p99 %6.2f ms  %.0f calls/s  %d calls, %d errors  (p50 %.1fx in-process)\n",
		*sessions, *mode, benchstat.MS(benchstat.Pct(lat, 50)), benchstat.MS(benchstat.Pct(lat, 99)), float64(len(lat))/elapsed.Seconds(), len(lat), errCount.Load(),
		float64(benchstat.Pct(lat, 50))/float64(max(benchstat.Pct(inproc, 50), 1)))
	fmt.Printf("  CPU over the load phase: loci serve %.2f s (%.2f ms a call), load generator %.2f s, wall %.2f s\n",
		srvCPU.Seconds(), benchstat.MS(srvCPU)/float64(max(len(lat), 1)), selfCPUd.Seconds(), elapsed.Seconds())

	// Cold start over stdio.
	var colds []time.Duration
	for i := 0; i < *cold; i++ {
		t := time.Now()
		client := mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "1"}, nil)
		cmd := exec.Command(bin, "mcp", *vaultDir, "--index-dir", idx)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		benchstat.Check(err)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": queries[i%len(queries)]}})
		d := time.Since(t)
		benchstat.Check(err)
		if res.IsError {
			benchstat.Check(fmt.Errorf("cold start call failed"))
		}
		cs.Close()
		colds = append(colds, d)
	}
	fmt.Printf("  cold start (stdio)        median %6.1f ms  p90 %6.1f ms over %d runs (process start → first search_notes result)\n",
		benchstat.MS(benchstat.Pct(colds, 50)), benchstat.MS(benchstat.Pct(colds, 90)), len(colds))
}

// procCPU is a process's user+system CPU time from /proc (0 where there is none).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+2:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

func selfCPU() time.Duration { return procCPU(os.Getpid()) }

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func waitHealthy(base string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // polling a process we spawned; not a test
	}
	benchstat.Check(fmt.Errorf("server did not become healthy"))
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	benchstat.Check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func openIndex(ctx context.Context, root, dir string) *index.Index {
	v, err := vault.Open(root, nil)
	benchstat.Check(err)
	ix, err := index.Open(ctx, v, index.Options{Dir: dir})
	benchstat.Check(err)
	return ix
}

func makeQueries(ctx context.Context, ix *index.Index, n int) []string {
	rows, err := ix.DB.QueryContext(ctx, "SELECT title FROM notes ORDER BY path")
	benchstat.Check(err)
	var words []string
	for rows.Next() {
		var t string
		rows.Scan(&t)
		for _, w := range textseg.Words(t) {
			if len(w.Text) >= 4 && !w.Segmented {
				words = append(words, strings.ToLower(w.Text))
			}
		}
	}
	rows.Close()
	rng := rand.New(rand.NewSource(2))
	out := make([]string, 0, n)
	seen := map[string]bool{}
	for i := 0; len(out) < n && i < 100*n; i++ {
		q := words[rng.Intn(len(words))]
		if len(out)%2 == 1 {
			q += " " + words[rng.Intn(len(words))]
		}
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	if len(out) < n {
		benchstat.Check(fmt.Errorf("only %d distinct queries in the titles, %d asked", len(out), n))
	}
	return out
}
