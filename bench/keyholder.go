package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/platformco/platform/internal/keyholder/embedregistry"
	"github.com/platformco/platform/internal/sqldb"
)

// The keyholder scenarios measure the registry front against the
// Distribution registry it fronts, in the same run: keyholder (`platform
// keyholder serve`, its own database on the run's engine) in front of a
// registry that is this harness re-executed (serve-registry, the same
// embedded Distribution `platform dev` runs), credentials exchanged at
// keyholder for capabilities box issued to the bench's customers, and the
// image published with `platform keyholder publish`. Each scenario starts
// its own registry and keyholder and removes them when it ends, so one
// scenario's gigabyte does not stay on disk for the next.

const (
	khRepository = "platform"
	// khManifestAccept is what a pulling client sends (containerd's list).
	khManifestAccept = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, " +
		"application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json"
	blobLayerBytes = 256 << 20
	pullLayerBytes = 1 << 30
	pullClients    = 8
	// maxBlobClients caps the blob scenario's concurrency: past a few
	// streams the two cores are the limit, and each stream is 256 MiB.
	maxBlobClients = 8
	// pullRSSTarget is the ceiling on keyholder's peak RSS during the 8
	// concurrent 1 GiB pulls.
	pullRSSTarget = 64
)

// khImage is a published single-layer image.
type khImage struct {
	Tag       string
	Manifest  string
	Config    string
	Layer     string
	LayerSize int64
}

// khCredential is a pull credential keyholder issued.
type khCredential struct{ Username, Password string }

// keyholderRig is one scenario's registry and keyholder.
type keyholderRig struct {
	registry  *service
	keyholder *service
	dbURL     string
	dropDB    func()
	image     khImage
	creds     []khCredential
	// setupPulls are the manifests by tag fetched through keyholder while
	// setting up (each is a recorded pull).
	setupPulls int64
}

func (r *keyholderRig) stop() {
	r.keyholder.stop()
	r.registry.stop()
	if r.dropDB != nil {
		r.dropDB()
	}
}

func (r *keyholderRig) cred(i int) khCredential { return r.creds[i%len(r.creds)] }

// serveRegistry is the upstream registry's process: Distribution with
// filesystem storage under $BENCH_REGISTRY_DIR on 127.0.0.1:$PORT.
func serveRegistry() error {
	dir := os.Getenv("BENCH_REGISTRY_DIR")
	if dir == "" {
		return errors.New("BENCH_REGISTRY_DIR: required")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	reg, err := embedregistry.Start(ctx, ln, dir, logger)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return reg.Stop()
}

// startKeyholder starts a registry and keyholder for one scenario,
// publishes tag (a layer of layerSize seeded random bytes) and exchanges a
// credential for each bench customer.
func (b *bench) startKeyholder(ctx context.Context, name, tag string, layerSize int64) (_ *keyholderRig, err error) {
	dir := filepath.Join(b.dir, "keyholder-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rig := &keyholderRig{}
	defer func() {
		if err != nil {
			rig.stop()
		}
	}()
	if rig.registry, err = startSelf(ctx, dir, "registry", map[string]string{"BENCH_REGISTRY_DIR": filepath.Join(dir, "storage")}); err != nil {
		return nil, err
	}
	if rig.dbURL, rig.dropDB, err = freshDatabase(ctx, b.cfg, filepath.Join(dir, "keyholder.db"), "keyholder_"+name); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	env := map[string]string{
		"PORT":                   strconv.Itoa(port),
		"DATABASE_URL":           rig.dbURL,
		"KEYHOLDER_BOX_URL":      b.p.box.URL,
		"KEYHOLDER_IDENTITY_URL": b.p.identity.URL,
		"KEYHOLDER_REGISTRY_URL": rig.registry.URL,
	}
	for k, v := range b.cfg.serviceEnv {
		env[k] = v
	}
	if b.cfg.pprofBase > 0 {
		env["DEBUG_ADDR"] = "127.0.0.1:" + strconv.Itoa(b.cfg.pprofBase+3)
		fmt.Fprintf(os.Stderr, "bench: keyholder's profiling endpoint: 127.0.0.1:%d\n", b.cfg.pprofBase+3)
	}
	if err := runOnce(ctx, b.p.bin, env, "keyholder", "migrate"); err != nil {
		return nil, err
	}
	if rig.keyholder, err = startService(ctx, "keyholder", port, filepath.Join(dir, "keyholder.log"), b.p.bin, env, "keyholder", "serve"); err != nil {
		return nil, err
	}

	layout := filepath.Join(dir, "layout")
	if rig.image, err = writeLayout(layout, tag, layerSize); err != nil {
		return nil, fmt.Errorf("image layout: %w", err)
	}
	publishEnv := map[string]string{"KEYHOLDER_REGISTRY_URL": rig.registry.URL, "BOX_URL": b.p.box.URL, "PLATFORM_TOKEN": b.p.staffToken}
	if err := runOnce(ctx, b.p.bin, publishEnv, "keyholder", "publish", "--repository", khRepository, "--version", tag, layout); err != nil {
		return nil, err
	}
	// The registry holds its own copy now.
	if err := os.RemoveAll(layout); err != nil {
		return nil, err
	}
	for _, u := range b.p.users {
		c, err := b.exchange(ctx, rig.keyholder.URL, u)
		if err != nil {
			return nil, err
		}
		rig.creds = append(rig.creds, c)
	}
	// Both ways answer the published manifest, before anything is timed.
	for _, via := range []struct {
		base string
		cred *khCredential
	}{{rig.registry.URL, nil}, {rig.keyholder.URL, &rig.creds[0]}} {
		g := registryGet{client: b.client, url: via.base + "/v2/" + khRepository + "/manifests/" + tag, cred: via.cred, accept: khManifestAccept, digest: rig.image.Manifest}
		if err := g.do(ctx); err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	rig.setupPulls = 1
	return rig, nil
}

// exchange asks box for a capability of the platform for u's account and
// trades it for a credential at keyholder.
func (b *bench) exchange(ctx context.Context, keyholderURL string, u user) (khCredential, error) {
	status, body, raw, err := callJSON(ctx, b.client, "POST", b.p.box.URL+"/v1/accounts/"+u.AccountID+"/artifact_fetches", u.Token,
		map[string]any{"artifact": khRepository, "version_range": "^1.0.0"})
	capability, _ := body["capability"].(map[string]any)
	token, _ := capability["token"].(string)
	if err != nil || status != http.StatusCreated || token == "" {
		return khCredential{}, fmt.Errorf("artifact fetch: %d %s %v", status, raw, err)
	}
	// The answer holds the password: it is never printed.
	status, body, _, err = callJSON(ctx, b.client, "POST", keyholderURL+"/v1/exchange", "", map[string]any{"capability": token})
	cred, _ := body["credential"].(map[string]any)
	c := khCredential{}
	c.Username, _ = cred["username"].(string)
	c.Password, _ = cred["password"].(string)
	if err != nil || status != http.StatusCreated || c.Username == "" || c.Password == "" {
		return khCredential{}, fmt.Errorf("exchange: %d %v", status, err)
	}
	return c, nil
}

// writeLayout writes an OCI image layout holding one image tagged tag:
// a config and one uncompressed layer of size bytes from a random stream
// seeded by the tag, so every run pushes the same bytes and nothing large
// is kept in the repository.
func writeLayout(dir, tag string, size int64) (khImage, error) {
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return khImage{}, err
	}
	img := khImage{Tag: tag, LayerSize: size}
	seed := sha256.Sum256([]byte("platform bench layer " + tag))
	var err error
	if img.Layer, err = writeBlob(blobs, io.LimitReader(rand.NewChaCha8(seed), size)); err != nil {
		return khImage{}, err
	}
	// An uncompressed layer's diff id is its digest.
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{img.Layer}},
	})
	if img.Config, err = writeBlob(blobs, bytes.NewReader(config)); err != nil {
		return khImage{}, err
	}
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": img.Config, "size": len(config)},
		"layers":        []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": img.Layer, "size": size}},
	})
	if img.Manifest, err = writeBlob(blobs, bytes.NewReader(manifest)); err != nil {
		return khImage{}, err
	}
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []any{map[string]any{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": img.Manifest, "size": len(manifest),
			"annotations": map[string]string{"org.opencontainers.image.ref.name": tag},
		}},
	})
	if err := os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644); err != nil {
		return khImage{}, err
	}
	return img, os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}

// writeBlob copies r into the layout's blob directory under its digest.
func writeBlob(dir string, r io.Reader) (string, error) {
	f, err := os.CreateTemp(dir, "incoming-")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.CopyBuffer(io.MultiWriter(f, h), r, make([]byte, 1<<20))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return "sha256:" + sum, os.Rename(f.Name(), filepath.Join(dir, sum))
}

// registryGet is one registry read: Basic auth when cred is set, the
// answer checked for 200 (and digest, when set) and read to the end, its
// bytes added to received as they arrive.
type registryGet struct {
	client   *http.Client
	url      string
	cred     *khCredential
	accept   string
	digest   string
	ok       *atomic.Int64
	received *atomic.Int64
	// verify hashes the body and compares it with digest.
	verify bool
}

type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

func (g registryGet) do(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url, nil)
	if err != nil {
		return err
	}
	if g.cred != nil {
		req.SetBasicAuth(g.cred.Username, g.cred.Password)
	}
	if g.accept != "" {
		req.Header.Set("Accept", g.accept)
	}
	res, err := g.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		return fmt.Errorf("GET %s: status %d", g.url, res.StatusCode)
	}
	if g.digest != "" && res.Header.Get("Docker-Content-Digest") != g.digest {
		return fmt.Errorf("GET %s: Docker-Content-Digest %q, want %q", g.url, res.Header.Get("Docker-Content-Digest"), g.digest)
	}
	var w io.Writer = io.Discard
	if g.received != nil {
		w = counter{g.received}
	}
	h := sha256.New()
	if g.verify {
		w = io.MultiWriter(w, h)
	}
	if _, err := io.Copy(w, res.Body); err != nil {
		return err
	}
	if g.verify && "sha256:"+hex.EncodeToString(h.Sum(nil)) != g.digest {
		return fmt.Errorf("GET %s: the body does not hash to %s", g.url, g.digest)
	}
	if g.ok != nil {
		g.ok.Add(1)
	}
	return nil
}

// streamClient is the blob scenarios' client: big read buffers, so the
// load generator's own copying weighs little, the same for both ways.
func streamClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ReadBufferSize:      256 << 10,
	}}
}

// registryManifest: GET /v2/platform/manifests/1.0.0 through keyholder
// (credential check, range check, pull record, upstream fetch) against the
// same request straight to the registry, interleaved round by round.
func (b *bench) registryManifest(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "manifest", Title: "registry: manifest by tag through keyholder", Unit: "req/s",
		BaselineName: "the same GET straight to the Distribution registry"}
	rig, err := b.startKeyholder(ctx, "manifest", "1.0.0", 4<<10)
	if err != nil {
		return nil, err
	}
	defer rig.stop()
	var served atomic.Int64
	path := "/v2/" + khRepository + "/manifests/" + rig.image.Tag
	direct := func(int) op {
		return registryGet{client: b.client, url: rig.registry.URL + path, accept: khManifestAccept, digest: rig.image.Manifest}.do
	}
	through := func(i int) op {
		c := rig.cred(i)
		return registryGet{client: b.client, url: rig.keyholder.URL + path, cred: &c, accept: khManifestAccept, digest: rig.image.Manifest, ok: &served}.do
	}
	var upstream, front perRound
	for _, c := range b.cfg.levels {
		total, byRound, err := b.interleaved(ctx, clients(c, direct), clients(c, through))
		if err != nil {
			return nil, err
		}
		s.Baseline = append(s.Baseline, total[0])
		s.Levels = append(s.Levels, total[1])
		upstream, front = append(upstream, byRound[0]), append(front, byRound[1])
	}
	ratio := peakRatio(front, upstream)
	s.Ratio = ratio.median()
	s.medianTarget("≥ 50% of the registry's own throughput (peak over levels)", ratio, pct, func(r float64) bool { return r >= 0.5 })
	over := b.atLevel(1, front, upstream, func(x, y Level) float64 { return x.P50 - y.P50 })
	if over != nil {
		s.info("p50 keyholder adds at 1 client", over.figure(ms))
	}
	s.errorsTarget()
	// Every manifest served by tag is a recorded pull: the record is
	// written before the manifest is, so the rows match the answers.
	rows, err := countPulls(ctx, rig.dbURL)
	if err != nil {
		return nil, err
	}
	want := served.Load() + rig.setupPulls
	s.target("every pull recorded (rows = manifests served by tag)", fmt.Sprintf("%d rows for %d manifests", rows, want), rows == want)
	s.Notes = append(s.Notes, fmt.Sprintf("%d credentials (one per customer), each client uses one; keyholder on %s", len(rig.creds), b.cfg.engine))
	return s, nil
}

func countPulls(ctx context.Context, dbURL string) (int64, error) {
	db, err := sqldb.Open(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRow(ctx, `SELECT count(*) FROM pulls`).Scan(&n)
	return n, err
}

// registryBlob: a 256 MiB layer streamed through keyholder against the
// same GET straight to the registry, in MB/s, the two interleaved round
// by round.
func (b *bench) registryBlob(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "blob", Title: "registry: a 256 MiB layer through keyholder", Unit: "MB/s",
		BaselineName: "the same GET straight to the Distribution registry"}
	rig, err := b.startKeyholder(ctx, "blob", "1.1.0", blobLayerBytes)
	if err != nil {
		return nil, err
	}
	defer rig.stop()
	var levels []int
	for _, c := range b.cfg.levels {
		if c = min(c, maxBlobClients); !slices.Contains(levels, c) {
			levels = append(levels, c)
		}
	}
	client := streamClient(maxBlobClients)
	path := "/v2/" + khRepository + "/blobs/" + rig.image.Layer
	mk := func(base string, auth bool) func(i int, got *atomic.Int64) registryGet {
		return func(i int, got *atomic.Int64) registryGet {
			g := registryGet{client: client, url: base + path, received: got}
			if auth {
				c := rig.cred(i)
				g.cred = &c
			}
			return g
		}
	}
	sets := []func(int, *atomic.Int64) registryGet{mk(rig.registry.URL, false), mk(rig.keyholder.URL, true)}
	// One whole layer each way first: both come from the page cache then,
	// and the integrity of what keyholder streams is checked once.
	for i, set := range sets {
		g := set(0, nil)
		g.digest, g.verify = rig.image.Layer, true
		if err := g.do(ctx); err != nil {
			return nil, fmt.Errorf("warm-up fetch %d: %w", i, err)
		}
	}
	d := b.cfg.duration / time.Duration(b.cfg.rounds)
	var upstream, front perRound
	for _, c := range levels {
		if b.cfg.warmup > 0 {
			for _, set := range sets {
				streamFor(ctx, c, b.cfg.warmup, set)
			}
		}
		runs := make([][]Level, len(sets))
		for r := range b.cfg.rounds {
			for k := range sets {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				i := (r + k) % len(sets)
				runs[i] = append(runs[i], streamFor(ctx, c, d, sets[i]))
			}
		}
		s.Baseline = append(s.Baseline, mergeStreams(runs[0]))
		s.Levels = append(s.Levels, mergeStreams(runs[1]))
		upstream, front = append(upstream, runs[0]), append(front, runs[1])
	}
	ratio := peakRatio(front, upstream)
	s.Ratio = ratio.median()
	s.medianFigure("MB/s over the registry's own (peak over levels)", ratio, pct)
	// Judged at one client: more clients measure two shared cores
	// saturated by both processes and the harness, not keyholder.
	var single rounds
	if i := slices.Index(levels, 1); i >= 0 {
		for r := range front[i] {
			if up := upstream[i][r].RPS; up > 0 {
				single = append(single, front[i][r].RPS/up)
			}
		}
	}
	s.medianTarget("≥ 80% of the registry's own MB/s at one client", single, pct, func(r float64) bool { return r >= 0.8 })
	s.errorsTarget()
	s.info("the layer streamed whole through keyholder hashes to its digest", rig.image.Layer)
	s.Notes = append(s.Notes, fmt.Sprintf("MB/s counts bytes as they arrive (a fetch cut by the round's end counts what came); clients capped at %d; latency columns do not apply", maxBlobClients))
	return s, nil
}

// streamFor runs c clients fetching again and again for d and returns the
// MB/s of body bytes received; RPS holds the MB/s, Requests the whole
// fetches.
func streamFor(ctx context.Context, c int, d time.Duration, mk func(int, *atomic.Int64) registryGet) Level {
	var got, done, failed atomic.Int64
	var mu sync.Mutex
	samples := map[string]bool{}
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range c {
		g := mk(i, &got)
		g.ok = &done
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rctx.Err() == nil {
				if err := g.do(rctx); err != nil && rctx.Err() == nil {
					failed.Add(1)
					mu.Lock()
					if len(samples) < 5 {
						samples[err.Error()] = true
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	lv := Level{Concurrency: c, Duration: secs, Requests: done.Load(), Errors: failed.Load(), RPS: float64(got.Load()) / 1e6 / secs}
	for m := range samples {
		lv.ErrorSamples = append(lv.ErrorSamples, m)
	}
	return lv
}

// mergeStreams lays the rounds of one level end to end.
func mergeStreams(rs []Level) Level {
	var out Level
	mb := 0.0
	for _, r := range rs {
		out.Concurrency = r.Concurrency
		out.Duration += r.Duration
		out.Requests += r.Requests
		out.Errors += r.Errors
		out.ErrorSamples = append(out.ErrorSamples, r.ErrorSamples...)
		mb += r.RPS * r.Duration
	}
	if out.Duration > 0 {
		out.RPS = mb / out.Duration
	}
	return out
}

// registryPullRSS: keyholder's peak RSS while 8 clients pull an image
// with a 1 GiB layer through it at once (manifest by tag, config, layer),
// each round from a peak reset to the RSS of the moment.
func (b *bench) registryPullRSS(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "pullrss", Title: fmt.Sprintf("registry: keyholder's memory while %d clients pull a 1 GiB layer at once", pullClients), Unit: "MB/s"}
	rig, err := b.startKeyholder(ctx, "pullrss", "1.2.0", pullLayerBytes)
	if err != nil {
		return nil, err
	}
	defer rig.stop()
	client := streamClient(pullClients)
	pid := rig.keyholder.pid()
	var served atomic.Int64
	base := rig.keyholder.URL + "/v2/" + khRepository
	pull := func(ctx context.Context, i int, got *atomic.Int64, verify bool) error {
		c := rig.cred(i)
		steps := []registryGet{
			{client: client, url: base + "/manifests/" + rig.image.Tag, cred: &c, accept: khManifestAccept, digest: rig.image.Manifest, ok: &served},
			{client: client, url: base + "/blobs/" + rig.image.Config, cred: &c, digest: rig.image.Config, verify: true},
			{client: client, url: base + "/blobs/" + rig.image.Layer, cred: &c, digest: rig.image.Layer, received: got, verify: verify},
		}
		for _, g := range steps {
			if err := g.do(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	// The first pull, alone and verified: what keyholder streams is the
	// layer, and the pages of the registry's file are cached.
	if err := pull(ctx, 0, nil, true); err != nil {
		return nil, fmt.Errorf("first pull: %w", err)
	}
	before, _ := readMemory(pid)
	var peaks rounds
	var lv Level
	lv.Concurrency = pullClients
	var series Series
	series.Name, series.Unit = "keyholder RSS, round 1", "MiB"
	for r := range b.cfg.rounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		resetPeak(pid)
		var got, failed atomic.Int64
		errCh := make(chan error, pullClients)
		start := time.Now()
		stopSampling := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stopSampling:
					return
				case <-t.C:
					if m, err := readMemory(pid); err == nil && r == 0 {
						series.X = append(series.X, time.Since(start).Seconds())
						series.Y = append(series.Y, mib(m.RSS))
					}
				}
			}
		}()
		var wg sync.WaitGroup
		for i := range pullClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := pull(ctx, i, &got, false); err != nil {
					failed.Add(1)
					errCh <- err
				}
			}()
		}
		wg.Wait()
		close(stopSampling)
		<-sampled
		secs := time.Since(start).Seconds()
		m, err := readMemory(pid)
		if err != nil {
			return nil, err
		}
		peaks = append(peaks, mib(m.Peak))
		lv.Duration += secs
		lv.Requests += pullClients - failed.Load()
		lv.Errors += failed.Load()
		lv.RPS += float64(got.Load()) / 1e6
		close(errCh)
		for err := range errCh {
			if len(lv.ErrorSamples) < 5 {
				lv.ErrorSamples = append(lv.ErrorSamples, err.Error())
			}
		}
		if want := int64(pullClients) * rig.image.LayerSize; got.Load() != want && failed.Load() == 0 {
			return nil, fmt.Errorf("round %d: %d layer bytes arrived, want %d", r+1, got.Load(), want)
		}
	}
	if lv.Duration > 0 {
		lv.RPS /= lv.Duration
	}
	s.Levels = []Level{lv}
	s.Series = []Series{series}
	s.medianTarget(fmt.Sprintf("keyholder's peak RSS ≤ %d MiB", pullRSSTarget), peaks, func(v float64) string { return fmt.Sprintf("%.1f MiB", v) },
		func(v float64) bool { return v <= pullRSSTarget })
	s.info("keyholder's RSS before the pulls", fmt.Sprintf("%.1f MiB", mib(before.RSS)))
	s.info("the highest peak of any round", fmt.Sprintf("%.1f MiB", slices.Max(peaks)))
	s.errorsTarget()
	s.Notes = append(s.Notes, fmt.Sprintf("each round: %d clients at once, each a manifest by tag, the config and the whole 1 GiB layer, with its own credential; MB/s is all clients' layer bytes over the rounds' time", pullClients),
		"the peak is VmHWM after a reset (clear_refs 5) at each round's start")
	return s, nil
}
