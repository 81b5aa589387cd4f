package observe

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/platformco/platform/internal/tokens"
)

var (
	keysetUsable = prometheus.NewDesc("platform_gateway_keyset_usable",
		"1 while the gateway holds an unexpired key set; 0 means every protected request answers 503.", nil, nil)
	keysetExpiresIn = prometheus.NewDesc("platform_gateway_keyset_expires_in_seconds",
		"Seconds until the held key set expires; negative once it has; absent before the first load.", nil, nil)
	keysetFetches = prometheus.NewDesc("platform_gateway_keyset_fetches_total",
		"Key-set fetches made, successful or not: a rate well above one per TTL means refreshes are failing and retrying.", nil, nil)
)

// KeySet registers the gateway's key-set cache: whether it is usable, how
// long until it expires, and how many fetches it made.
func (m *Metrics) KeySet(keys *tokens.Cache) {
	if m == nil {
		return
	}
	m.labelled.MustRegister(keysetCollector{keys})
}

type keysetCollector struct{ keys *tokens.Cache }

func (c keysetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- keysetUsable
	ch <- keysetExpiresIn
	ch <- keysetFetches
}

func (c keysetCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	st := c.keys.Status(now)
	usable := 0.0
	if st.Usable {
		usable = 1
	}
	ch <- prometheus.MustNewConstMetric(keysetUsable, prometheus.GaugeValue, usable)
	if st.Loaded {
		ch <- prometheus.MustNewConstMetric(keysetExpiresIn, prometheus.GaugeValue, st.ExpiresAt.Sub(now).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(keysetFetches, prometheus.CounterValue, float64(c.keys.Fetches()))
}
