package outbox

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestBrokerUnreachableSaysSo: with nothing listening at EVENTS_URL the
// publisher says that the broker is unreachable and the rows wait in the
// outbox, not the NATS client's "outbound buffer limit exceeded".
func TestBrokerUnreachableSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "nats://" + ln.Addr().String()
	ln.Close()
	db := sqltest.Open(t, sqldb.SQLite, sqlstore.Migrations)
	logger, logs := logtest.New()
	stop, err := Start(context.Background(), db, closed, Options{Service: "identity"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "the broker is unreachable; rows wait in the outbox") {
		if time.Now().After(deadline) {
			t.Fatalf("no line saying the broker is unreachable:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(logs.String(), "outbound buffer") {
		t.Errorf("the log speaks of the client's buffer:\n%s", logs)
	}
}
