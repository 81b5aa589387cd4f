//go:build e2e

package scaleout

import (
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/platformco/platform/internal/testutil"
)

// stallProxy stands between one publisher and the broker. Stalled, it
// holds back what the broker sends (the publish acknowledgements among
// it) while still passing on what the publisher sends: the publisher's
// messages reach the stream, but it never learns so and cannot mark its
// rows. Killed then, it dies holding rows it has published and not
// marked, the case the claim's lease and the broker's duplicate window
// exist for.
type stallProxy struct {
	addr string
	gate sync.RWMutex // held for writing while stalled
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{addr: ln.Addr().String()}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			go func() {
				_, _ = io.Copy(server, client)
				server.Close()
			}()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 {
						p.gate.RLock()
						_, werr := client.Write(buf[:n])
						p.gate.RUnlock()
						if werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				client.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return p
}

func (p *stallProxy) stall()  { p.gate.Lock() }
func (p *stallProxy) resume() { p.gate.Unlock() }

// killHoldingRows stalls publisher victim's acknowledgements until it
// holds claimed rows (rows leased across two looks half a second apart:
// a healthy publisher marks a batch in milliseconds), then kills it with
// SIGKILL and returns those rows. It tries again, a few times, when the
// victim claimed nothing while stalled (the others are faster to claim).
// The stall stays well inside the publisher's five-second ack timeout,
// after which it would mark the rows failed itself rather than die
// holding them.
func killHoldingRows(t *testing.T, c *cluster, victim int) (held []string, killedAt time.Time) {
	t.Helper()
	p := c.publishers[victim]
	for attempt := 0; attempt < 8; attempt++ {
		c.stall.stall()
		prev := leasedRows(t, c)
		for look := 0; look < 6 && len(held) == 0; look++ {
			time.Sleep(500 * time.Millisecond)
			cur := leasedRows(t, c)
			held = intersect(prev, cur)
			prev = cur
		}
		if len(held) > 0 {
			p.Signal(syscall.SIGKILL)
			killedAt = time.Now()
			if !p.Wait(10 * time.Second) {
				t.Fatal("the publisher did not exit on SIGKILL")
			}
			c.stall.resume()
			// A row of another publisher's slow batch marked meanwhile
			// is not the dead one's; the dead one's stay leased.
			if held = intersect(held, leasedRows(t, c)); len(held) == 0 {
				t.Fatal("none of the rows publisher 2 held is leased after its death")
			}
			return held, killedAt
		}
		c.stall.resume()
		time.Sleep(time.Second)
	}
	t.Fatal("the publisher to be killed never held a claimed batch")
	return nil, time.Time{}
}

func intersect(a, b []string) []string {
	in := map[string]bool{}
	for _, s := range a {
		in[s] = true
	}
	var out []string
	for _, s := range b {
		if in[s] {
			out = append(out, s)
		}
	}
	return out
}

// waitPublished waits until every row in ids is marked published and
// reports how many were marked after at (by a publisher other than the
// one that died at at).
func waitPublished(t *testing.T, c *cluster, ids []string, at time.Time) int {
	t.Helper()
	after := 0
	testutil.Eventually(t, 60*time.Second, "the dead publisher's rows marked published", func() bool {
		after = 0
		for _, id := range ids {
			if count(t, c.identityDB, `SELECT count(*) FROM outbox WHERE id = $1 AND published_at IS NOT NULL`, id) == 0 {
				return false
			}
			after += count(t, c.identityDB, `SELECT count(*) FROM outbox WHERE id = $1 AND published_at > $2`, id, at)
		}
		return true
	})
	return after
}
