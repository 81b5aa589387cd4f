package httpx

import (
	"context"
	"net/http"
)

// Healthz answers liveness: 200 whenever the process can dispatch.
func Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// Readiness is a probe result: the body to answer and whether it is ready.
type Readiness struct {
	Ready bool
	Body  any
}

// Readyz answers readiness with 200 or 503 from check. Failure detail is for
// the log, which check writes; the body says only what is unavailable.
func Readyz(check func(ctx context.Context) Readiness) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := check(r.Context())
		status := http.StatusOK
		if !res.Ready {
			status = http.StatusServiceUnavailable
		}
		w.Header().Set("Cache-Control", "no-store")
		WriteJSON(w, status, res.Body)
	})
}
