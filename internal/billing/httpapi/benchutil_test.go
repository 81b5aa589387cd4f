package httpapi_test

import (
	"io"
	"net/http"
	"runtime"
	"slices"
	"time"
)

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

func drain(resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
