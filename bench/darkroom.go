package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gen2brain/webp"

	"github.com/platformco/platform/internal/darkroom"
	"github.com/platformco/platform/internal/darkroom/devs3"
)

// darkroomRig is a darkroom process over the development S3 server
// (gofakes3 in this process, on loopback, as `platform dev` runs it).
type darkroomRig struct {
	svc   *service
	s3    *http.Server
	drop  func()
	token string
}

func (r *darkroomRig) stop() {
	if r.svc != nil {
		r.svc.stop()
	}
	if r.s3 != nil {
		_ = r.s3.Close()
	}
	if r.drop != nil {
		r.drop()
	}
}

// startDarkroom migrates a fresh database and starts darkroom as a real
// process, its tokens verified against the bench's identity.
func (b *bench) startDarkroom(ctx context.Context) (*darkroomRig, error) {
	rig := &darkroomRig{token: b.p.users[0].Token}
	s3h, err := devs3.New(devs3.Development, filepath.Join(b.dir, "darkroom-s3"), "media")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rig.s3 = &http.Server{Handler: s3h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rig.s3.Serve(ln) }()
	dbURL, drop, port, err := b.migrated(ctx, "darkroom")
	if err != nil {
		rig.stop()
		return nil, err
	}
	rig.drop = drop
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{
		"PORT": strconv.Itoa(port), "DATABASE_URL": dbURL, "IDENTITY_ISSUER": b.p.identityEnv["IDENTITY_ISSUER"],
		"DARKROOM_ENV": "development", "DARKROOM_S3_ENDPOINT": "http://" + ln.Addr().String(), "DARKROOM_S3_BUCKET": "media",
		"DARKROOM_S3_ACCESS_KEY_ID": "dev", "DARKROOM_S3_SECRET_ACCESS_KEY": "development-only",
		"DARKROOM_URL_KEY": base64.StdEncoding.EncodeToString(key),
	}
	for k, v := range b.cfg.serviceEnv {
		env[k] = v
	}
	logPath := filepath.Join(b.dir, "darkroom.log")
	if rig.svc, err = startReady(ctx, "darkroom", port, logPath, b.p.bin, env, "darkroom", "serve"); err != nil {
		rig.stop()
		return nil, err
	}
	return rig, nil
}

// photo12MP is a 4000×3000 JPEG (quality 90) with a photograph's detail:
// smooth gradients under fine ripples, so the encoder has work to do and
// the file is a few MiB, as a phone's photograph is.
func photo12MP() ([]byte, error) {
	const w, h = 4000, 3000
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			r := 128 + 100*math.Sin(float64(x)/37+float64(y)/91)
			g := 128 + 90*math.Sin(float64(y)/23-float64(x)/113)
			bl := 128 + 80*math.Cos(float64(x*y)/50000)
			img.SetRGBA(x, y, color.RGBA{uint8(r), uint8(g), uint8(bl), 255})
		}
	}
	var buf bytes.Buffer
	err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	return buf.Bytes(), err
}

// upload stores data at darkroom as public media and returns its id.
func (r *darkroomRig) upload(ctx context.Context, c *http.Client, data []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", r.svc.URL+"/v1/media?visibility=public&filename=photo.jpg", bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "image/jpeg")
	req.Header.Set("Authorization", "Bearer "+r.token)
	res, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("POST /v1/media: %d %s", res.StatusCode, raw)
	}
	var out struct {
		Media struct{ ID string } `json:"media"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", err
	}
	return out.Media.ID, nil
}

// variant asks for preset of id as WebP and reads it to the end.
func (r *darkroomRig) variant(ctx context.Context, c *http.Client, id, preset string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", r.svc.URL+"/v1/media/"+id+"/"+preset, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "image/webp,image/*")
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	if err == nil && (res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/webp") {
		err = fmt.Errorf("GET /v1/media/{id}/%s: %d %s", preset, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return err
}

// bareCard is darkroom's render of the card preset (480×270, cover,
// darkroom.Scale: averaged down, then Catmull-Rom; WebP quality 80 method
// 4) in a bare loop: the same code on the same bytes, with no HTTP,
// store or database.
func bareCard(data []byte) error {
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return err
	}
	dst := darkroom.Scale(img, darkroom.Preset{Name: "card", Width: 480, Height: 270, Mode: darkroom.ModeCover})
	return webp.Encode(io.Discard, dst, webp.Options{Quality: 80, Method: 4})
}

// darkroomScenario measures darkroom.md §5: a 480-px WebP variant's first
// making against the bare loop (one client, each request a fresh 12-MP
// original, interleaved round by round with the loop), stored variants
// at 32 clients, and darkroom's peak RSS while 8 clients ask for first
// variants of 8 fresh 12-MP originals at once.
func (b *bench) darkroomScenario(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "darkroom", Title: "darkroom: GET /v1/media/{id}/card (stored WebP variant, public media)", Unit: "req/s"}
	photo, err := photo12MP()
	if err != nil {
		return nil, err
	}
	rig, err := b.startDarkroom(ctx)
	if err != nil {
		return nil, err
	}
	defer rig.stop()
	c := newClient(64)
	c.Timeout = 2 * time.Minute
	const perRound = 2
	// Every original is uploaded before anything is timed.
	ids := make([]string, b.cfg.rounds*perRound+8)
	for i := range ids {
		if ids[i], err = rig.upload(ctx, c, photo); err != nil {
			return nil, err
		}
	}
	s.Notes = append(s.Notes, fmt.Sprintf("original: 4000x3000 JPEG of %.1f MiB, uploaded directly as public media", mib(int64(len(photo)))))

	// First variants against the bare loop, interleaved.
	var first, bare, ratio rounds
	next := 0
	for range b.cfg.rounds {
		var fr, br []float64
		for range perRound {
			t0 := time.Now()
			if err := rig.variant(ctx, c, ids[next], "card"); err != nil {
				return nil, err
			}
			fr = append(fr, float64(time.Since(t0).Microseconds())/1000)
			next++
			t0 = time.Now()
			if err := bareCard(photo); err != nil {
				return nil, err
			}
			br = append(br, float64(time.Since(t0).Microseconds())/1000)
		}
		f, bb := rounds(fr).median(), rounds(br).median()
		first, bare, ratio = append(first, f), append(bare, bb), append(ratio, f/bb)
	}
	s.medianFigure("first card variant of a 12-MP JPEG, one client", first, ms)
	s.medianFigure("the same decode, scale and WebP encode in a bare loop", bare, ms)
	s.medianTarget("first variant ≤ 1.3× the bare loop", ratio, func(v float64) string { return fmt.Sprintf("%.2f×", v) },
		func(v float64) bool { return v <= 1.3 })

	// Peak RSS with 8 first variants at once.
	resetPeak(rig.svc.pid())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range 8 {
		id := ids[next+i]
		wg.Go(func() {
			if err := rig.variant(ctx, c, id, "card"); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	m, err := readMemory(rig.svc.pid())
	if err != nil {
		return nil, err
	}
	s.target("darkroom's RSS ≤ 256 MiB with 8 first variants of 12-MP originals at once",
		fmt.Sprintf("peak %.0f MiB", mib(m.Peak)), mib(m.Peak) <= 256)

	// Stored variants at 32 clients, as JPEG (the load's requests send no
	// Accept): each made once here, before the warm-up.
	stored := ids[:next]
	for _, id := range stored {
		if err := (request{client: c, method: "GET", url: rig.svc.URL + "/v1/media/" + id + "/card", path: "/v1/media/{id}/card", want: http.StatusOK}).do(ctx); err != nil {
			return nil, err
		}
	}
	op := func(i int) op {
		k := i
		return func(ctx context.Context) error {
			k++
			return request{client: b.client, method: "GET", url: rig.svc.URL + "/v1/media/" + stored[k%len(stored)] + "/card",
				path: "/v1/media/{id}/card", want: http.StatusOK}.do(ctx)
		}
	}
	total, byRound, err := b.interleaved(ctx, clients(32, op))
	if err != nil {
		return nil, err
	}
	s.Levels = append(s.Levels, total[0])
	var rps rounds
	for r := range byRound[0] {
		rps = append(rps, byRound[0][r].RPS)
	}
	perSec := func(v float64) string { return fmt.Sprintf("%.0f req/s", v) }
	if b.cfg.engine == "sqlite" {
		s.medianTarget("stored variants ≥ 3,000 req/s at 32 clients (SQLite)", rps, perSec, func(v float64) bool { return v >= 3000 })
	} else {
		s.medianFigure("stored variants at 32 clients (the target is SQLite's)", rps, perSec)
	}
	s.errorsTarget()
	return s, nil
}
