package logtest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/logtest"
)

func TestBufferConcurrentWrites(t *testing.T) {
	var b logtest.Buffer
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				fmt.Fprintf(&b, "line %d\n", i)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := len(b.Lines()); got != writers*each {
		t.Errorf("%d lines, want %d", got, writers*each)
	}
}

func TestNewLogsJSONIntoTheBuffer(t *testing.T) {
	logger, logs := logtest.New()
	logger.Info("hello", "user", "u1")
	lines := logs.Lines()
	if len(lines) != 1 {
		t.Fatalf("lines %q, want one", lines)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q", lines[0])
	}
	if rec["msg"] != "hello" || rec["user"] != "u1" || rec["level"] != "INFO" {
		t.Errorf("record %v", rec)
	}
	if !strings.HasSuffix(logs.String(), "\n") {
		t.Errorf("log line not terminated: %q", logs.String())
	}
}
