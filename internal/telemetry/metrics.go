package telemetry

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OutcomeOK is the outcome label of a call that succeeded (the calls log
// records "" as its code).
const OutcomeOK = "ok"

// Metrics is one server's Prometheus registry: its own, never the global
// one, so that several servers (tests) run side by side in one process.
type Metrics struct {
	reg         *prometheus.Registry
	calls       *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
}

// NewMetrics builds a registry with the call metrics and the Go runtime
// and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "loci_calls_total",
		Help: "Calls dispatched, by operation, principal and outcome (ok or the error code).",
	}, []string{"op", "principal", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "loci_call_duration_seconds",
		Help:    "Time from dispatch to result, by operation.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"op"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "loci_rate_limited_total",
		Help: "Calls refused by a rate limit or the concurrency cap (outcome rate_limited), by principal and class (read, write, ai).",
	}, []string{"principal", "class"})
	m.reg.MustRegister(m.calls, m.latency, m.rateLimited,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveCall counts one call. code is "" on success; class is the call's
// rate-limit class.
func (m *Metrics) ObserveCall(op, principal, code, class string, d time.Duration) {
	if m == nil {
		return
	}
	outcome := code
	if outcome == "" {
		outcome = OutcomeOK
	}
	m.calls.WithLabelValues(op, principal, outcome).Inc()
	m.latency.WithLabelValues(op).Observe(d.Seconds())
	if code == "rate_limited" {
		m.rateLimited.WithLabelValues(principal, class).Inc()
	}
}

// GaugeFunc registers a gauge read from f at every scrape.
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// CounterFunc registers a counter read from f at every scrape.
func (m *Metrics) CounterFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
}

// Vaults registers the per-vault index and watcher figures, read from f
// at every scrape.
func (m *Metrics) Vaults(f func() []VaultFigures) {
	m.reg.MustRegister(&vaultCollector{figures: f})
}

// Registry is the registry itself (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format. It does not
// authenticate: the server's /metrics route does.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// VaultFigures is what /metrics shows of one vault's index and watcher,
// from the same state index_status reports.
type VaultFigures struct {
	Vault string
	// Notes is the number of indexed notes (-1: could not be read).
	Notes int
	// Syncing is true while a sync runs; SyncFailed when the last one
	// failed.
	Syncing, SyncFailed bool
	// LastSync is the last sync's duration (0: none yet).
	LastSync time.Duration
	// Watcher is nil when no watcher runs.
	Watcher *WatcherFigures
	// Embed is nil when no background embedder runs.
	Embed *EmbedFigures
}

// EmbedFigures are a background embedder's figures.
type EmbedFigures struct {
	// Running is true while the job embeds; Failed when its last run failed.
	Running, Failed bool
	// Pending is the texts the current run has still to do (0 when idle).
	Pending int
	// Rate is the texts per second of the current or last run.
	Rate float64
}

// WatcherFigures are a file watcher's figures.
type WatcherFigures struct {
	// Up is 1 while watching (also when degraded), else 0.
	Up bool
	// Queue is the number of changed paths waiting for the next batch.
	Queue int
	// Lag is how long the oldest change still waiting has waited (0 when
	// none waits).
	Lag time.Duration
	// HeartbeatAge is the time since the watcher loop last reported.
	HeartbeatAge time.Duration
	// Events, Batches and Overflows count since the watcher started.
	Events, Batches, Overflows int64
}

var (
	descNotes      = prometheus.NewDesc("loci_index_notes", "Notes in the vault's index.", []string{"vault"}, nil)
	descSyncing    = prometheus.NewDesc("loci_index_sync_running", "1 while the vault's index syncs.", []string{"vault"}, nil)
	descSyncFailed = prometheus.NewDesc("loci_index_sync_failed", "1 when the vault's last sync failed.", []string{"vault"}, nil)
	descLastSync   = prometheus.NewDesc("loci_index_last_sync_duration_seconds", "Duration of the vault's last sync in this process.", []string{"vault"}, nil)
	descWatchUp    = prometheus.NewDesc("loci_watcher_up", "1 while the vault's file watcher is watching.", []string{"vault"}, nil)
	descWatchQueue = prometheus.NewDesc("loci_watcher_queue", "Changed paths waiting for the watcher's next batch.", []string{"vault"}, nil)
	descWatchLag   = prometheus.NewDesc("loci_watcher_lag_seconds", "How long the oldest change still waiting to be indexed has waited.", []string{"vault"}, nil)
	descWatchBeat  = prometheus.NewDesc("loci_watcher_heartbeat_age_seconds", "Time since the watcher loop last reported alive.", []string{"vault"}, nil)
	descWatchEvts  = prometheus.NewDesc("loci_watcher_events_total", "File events the watcher acted on.", []string{"vault"}, nil)
	descWatchBatch = prometheus.NewDesc("loci_watcher_batches_total", "Batches of changes the watcher synced.", []string{"vault"}, nil)
	descWatchOver  = prometheus.NewDesc("loci_watcher_overflows_total", "Times the OS dropped file events (a full sync followed).", []string{"vault"}, nil)
	descEmbedRun   = prometheus.NewDesc("loci_embed_running", "1 while the vault's background embedder runs.", []string{"vault"}, nil)
	descEmbedFail  = prometheus.NewDesc("loci_embed_failed", "1 when the background embedder's last run failed (it retries after a backoff).", []string{"vault"}, nil)
	descEmbedLeft  = prometheus.NewDesc("loci_embed_pending", "Sections and titles the background embedder's current run has still to embed.", []string{"vault"}, nil)
	descEmbedRate  = prometheus.NewDesc("loci_embed_rate", "Texts per second of the background embedder's current or last run.", []string{"vault"}, nil)
)

type vaultCollector struct{ figures func() []VaultFigures }

func (c *vaultCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNotes, descSyncing, descSyncFailed, descLastSync,
		descWatchUp, descWatchQueue, descWatchLag, descWatchBeat, descWatchEvts, descWatchBatch, descWatchOver,
		descEmbedRun, descEmbedFail, descEmbedLeft, descEmbedRate} {
		ch <- d
	}
}

func (c *vaultCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, vault string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, vault)
	}
	counter := func(d *prometheus.Desc, v int64, vault string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), vault)
	}
	for _, f := range c.figures() {
		if f.Notes >= 0 {
			gauge(descNotes, float64(f.Notes), f.Vault)
		}
		gauge(descSyncing, b2f(f.Syncing), f.Vault)
		gauge(descSyncFailed, b2f(f.SyncFailed), f.Vault)
		gauge(descLastSync, f.LastSync.Seconds(), f.Vault)
		if e := f.Embed; e != nil {
			gauge(descEmbedRun, b2f(e.Running), f.Vault)
			gauge(descEmbedFail, b2f(e.Failed), f.Vault)
			gauge(descEmbedLeft, float64(e.Pending), f.Vault)
			gauge(descEmbedRate, e.Rate, f.Vault)
		}
		w := f.Watcher
		if w == nil {
			continue
		}
		gauge(descWatchUp, b2f(w.Up), f.Vault)
		gauge(descWatchQueue, float64(w.Queue), f.Vault)
		gauge(descWatchLag, w.Lag.Seconds(), f.Vault)
		gauge(descWatchBeat, w.HeartbeatAge.Seconds(), f.Vault)
		counter(descWatchEvts, w.Events, f.Vault)
		counter(descWatchBatch, w.Batches, f.Vault)
		counter(descWatchOver, w.Overflows, f.Vault)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Value reads one series from g: a counter's or gauge's value, a
// histogram's sample count. labels are name, value pairs that must all
// match. For tests and diagnostics.
func Value(g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	fams, err := g.Gather()
	if err != nil {
		return 0, false
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
						break
					}
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			case m.Untyped != nil:
				return m.Untyped.GetValue(), true
			}
		}
	}
	return 0, false
}
