package telemetry

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newRegistry returns a private registry (never the global one: two
// servers can run in one process) with the Go runtime and process
// collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// metricsHandler serves reg in the Prometheus text (or OpenMetrics)
// format.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// label bounds a label value that may be empty.
func label(v, empty string) string {
	if v == "" {
		return empty
	}
	return v
}

// Buckets of the latency histograms, in seconds.
var (
	// relayBuckets: 100µs to 2.5s (a relayed frame).
	relayBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	// taskBuckets: 50ms to 30 minutes (a delegation, a turn).
	taskBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}
	// requestBuckets: 1ms to 10s (time to a response's first byte).
	requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
)
