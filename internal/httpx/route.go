package httpx

import (
	"context"
	"net/http"
)

type routeKey struct{}

// WithRoute returns ctx carrying a slot that Finish fills with the pattern
// its mux matched (r.Pattern), for middleware outside Finish (metrics,
// spans) that must label a request by its route, never by its raw path:
// the mux sets the pattern on the request it is given, which is a copy of
// the one such middleware holds.
// A context that has a slot already keeps it, so several such
// middlewares share one.
func WithRoute(ctx context.Context) (context.Context, *string) {
	if slot, ok := ctx.Value(routeKey{}).(*string); ok {
		return ctx, slot
	}
	slot := new(string)
	return context.WithValue(ctx, routeKey{}, slot), slot
}

// RecordRoute copies the pattern h's mux matched into the context's slot
// (WithRoute), also when h panics. Finish applies it; a service that
// chains its own mux wraps the handler that calls mux.ServeHTTP with the
// request it was given.
func RecordRoute(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slot, ok := r.Context().Value(routeKey{}).(*string); ok {
			defer func() { *slot = r.Pattern }()
		}
		h.ServeHTTP(w, r)
	})
}
