package openapitest

import (
	"os"
	"testing"
	"time"
)

func TestTryLoad(t *testing.T) {
	raw, err := os.ReadFile("/tmp/oa/identity.json")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = load(raw)
	t.Logf("load took %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
}
