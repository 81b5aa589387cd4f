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

// NoDatabase answers readiness for a service run without DATABASE_URL.
func NoDatabase(context.Context) Readiness {
	return Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": "none"}}
}

// Gate is what readiness reads of a service's database gate
// (*sqldb.Gate): "ok", "migrations_pending" or anything else for down.
// httpx takes it as an interface so the HTTP floor does not import the
// database floor.
type Gate interface {
	Status(ctx context.Context) string
}

// DatabaseReadiness answers readiness from a service's database gate:
// {"status":"ok","deps":ENGINE} once the gate is open and the database
// answers within two seconds; otherwise 503 {"status":"unavailable",
// "deps":ENGINE}, with "migrations":"pending" while the schema is behind.
// engine is the engine's name (sqldb.Engine).
func DatabaseReadiness[E ~string](g Gate, engine E) func(context.Context) Readiness {
	deps := string(engine)
	return func(ctx context.Context) Readiness {
		switch g.Status(ctx) {
		case "ok":
			return Readiness{Ready: true, Body: map[string]string{"status": "ok", "deps": deps}}
		case "migrations_pending":
			return Readiness{Body: map[string]string{"status": "unavailable", "deps": deps, "migrations": "pending"}}
		default:
			return Readiness{Body: map[string]string{"status": "unavailable", "deps": deps}}
		}
	}
}
