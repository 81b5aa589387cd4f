package darkroom_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/darkroom/darkroomtest"
	"github.com/platformco/platform/internal/darkroom/devs3"
	"github.com/platformco/platform/internal/darkroom/s3store"
	"github.com/platformco/platform/internal/darkroom/sqlstore"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// watching is the object store, with every read of an original checked
// against the decode slots taken: originals open at once never outnumber
// the slots held. Reads of originals wait until as many are open as
// there are slots, so requests that would read without a slot (and the
// slots, all free then) are seen together.
type watching struct {
	darkroom.Objects
	svc     *darkroom.Service
	decodes int

	mu       sync.Mutex
	open     int
	max      int
	problems []string
	gate     chan struct{}
	opened   bool
}

func (w *watching) Open(ctx context.Context, key string) (darkroom.Object, darkroom.ObjectInfo, error) {
	if !strings.HasPrefix(key, "originals/") {
		return w.Objects.Open(ctx, key)
	}
	w.mu.Lock()
	w.open++
	w.max = max(w.max, w.open)
	if held := w.svc.DecodesHeld(); w.open > held {
		w.problems = append(w.problems, fmt.Sprintf("%d originals open with %d decode slots taken", w.open, held))
	}
	if w.open >= w.decodes && !w.opened {
		w.opened = true
		close(w.gate)
	}
	w.mu.Unlock()
	<-w.gate
	obj, info, err := w.Objects.Open(ctx, key)
	if err != nil {
		w.closed()
		return nil, info, err
	}
	return &watched{Object: obj, w: w}, info, nil
}

func (w *watching) closed() {
	w.mu.Lock()
	w.open--
	w.mu.Unlock()
}

type watched struct {
	darkroom.Object
	w    *watching
	once sync.Once
}

func (o *watched) Close() error {
	o.once.Do(o.w.closed)
	return o.Object.Close()
}

// TestOriginalsReadUnderTheDecodeSlot: eight first variants of eight
// originals at once, with two decode slots: an original is read only by
// a request holding a slot, so at most two are held at once.
func TestOriginalsReadUnderTheDecodeSlot(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		h, err := devs3.New(devs3.Development, t.TempDir(), "media")
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		st, err := s3store.New(s3store.Options{Endpoint: srv.URL, Region: s3store.RegionAuto, Bucket: "media", AccessKeyID: "dev", SecretAccessKey: "devdevdev"})
		if err != nil {
			t.Fatal(err)
		}
		const decodes = 2
		w := &watching{Objects: st, decodes: decodes, gate: make(chan struct{})}
		w.svc = darkroom.NewService(darkroom.Options{Store: sqlstore.New(sqltest.Open(t, engine, sqlstore.Migrations)), Objects: w, Decodes: decodes})
		owner := darkroom.Principal{UserID: ids.New()}
		media := make([]darkroom.Media, 8)
		for i := range media {
			media[i], err = w.svc.Direct(t.Context(), owner, darkroom.DirectInput{ContentType: darkroom.TypeJPEG,
				Visibility: darkroom.VisibilityPublic, Body: bytes.NewReader(darkroomtest.JPEG(t, 300+i, 200))})
			if err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errc := make(chan error, len(media))
		for _, m := range media {
			wg.Go(func() {
				_, _, obj, err := w.svc.OpenVariant(t.Context(), darkroom.Viewer{}, m.ID, "card", true)
				if err != nil {
					errc <- err
					return
				}
				_, err = io.Copy(io.Discard, obj)
				obj.Close()
				errc <- err
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				t.Fatal(err)
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.problems) > 0 || w.max > decodes {
			t.Fatalf("at most %d originals open at once, want <= %d: %v", w.max, decodes, w.problems)
		}
		if held := w.svc.DecodesHeld(); held != 0 {
			t.Fatalf("%d decode slots still taken", held)
		}
	})
}
