//go:build e2e

package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

var loadClient = &http.Client{Timeout: 15 * time.Second}

// send is a request that reports transport errors instead of failing the
// test, as load generators running during a fault need.
func send(method, url, token string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := loadClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, nil
}

// loadResult is what a load run saw.
type loadResult struct {
	mu       sync.Mutex
	statuses map[int]int
	errors   int
	ids      []string // the id of every 2xx answer
}

func (r *loadResult) record(status int, id string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statuses == nil {
		r.statuses = map[int]int{}
	}
	if err != nil {
		r.errors++
		return
	}
	r.statuses[status]++
	if status >= 200 && status < 300 && id != "" {
		r.ids = append(r.ids, id)
	}
}

// loadRun is a load running in the background.
type loadRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	res    *loadResult
}

func startLoad(workers int, op func(worker, i int) (int, string, error)) *loadRun {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loadRun{cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	l.res = &loadResult{}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				status, id, err := op(w, i)
				l.res.record(status, id, err)
				if err != nil || status >= 500 {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

// stop ends the load and waits for the calls in flight.
func (l *loadRun) stop() *loadResult {
	l.cancel()
	<-l.done
	return l.res
}
