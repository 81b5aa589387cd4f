package devcmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/darkroom/darkroomcmd"
	"github.com/platformco/platform/internal/darkroom/devs3"
)

// darkroom in `platform dev` (operations.md §9): on :8088, over the
// embedded S3 server on loopback only (it keeps no credentials).
const (
	darkroomPort   = 8088
	devS3Addr      = "127.0.0.1:8091"
	devS3Bucket    = "media"
	darkroomKeyURL = "darkroom-url.key"
)

// startDevS3 serves gofakes3 over DIR/s3 on devS3Addr until stop.
func startDevS3(dir string) (url string, stop func(), err error) {
	h, err := devs3.New(devs3.Development, filepath.Join(dir, "s3"), devS3Bucket)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", devS3Addr)
	if err != nil {
		return "", nil, fmt.Errorf("%s is in use (is another `platform dev` running?): %w", devS3Addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ln.Close()
		}
	}()
	return "http://" + devS3Addr, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// darkroomConfig migrates darkroom's database and returns its
// configuration over the embedded store, with a link key kept in the data
// directory; metricsAddr is its METRICS_ADDR ("" serves none).
func darkroomConfig(ctx context.Context, env cli.Env, dir, issuer, s3URL, metricsAddr string) (darkroomcmd.Config, error) {
	var cfg darkroomcmd.Config
	db := "sqlite:" + filepath.Join(dir, "darkroom.db")
	if _, err := darkroomcmd.Command.Migrate(ctx, db); err != nil {
		return cfg, fmt.Errorf("darkroom migrations: %w", err)
	}
	key, err := loadOrCreateMasterKey(filepath.Join(dir, darkroomKeyURL))
	if err != nil {
		return cfg, err
	}
	err = darkroomcmd.Command.Load(ctx, only(env, map[string]string{
		"PORT":                          fmt.Sprint(darkroomPort),
		"DATABASE_URL":                  db,
		"IDENTITY_ISSUER":               issuer,
		"DARKROOM_ENV":                  darkroomcmd.Development,
		"DARKROOM_S3_ENDPOINT":          s3URL,
		"DARKROOM_S3_BUCKET":            devS3Bucket,
		"DARKROOM_S3_ACCESS_KEY_ID":     "dev",
		"DARKROOM_S3_SECRET_ACCESS_KEY": "development-only",
		"DARKROOM_URL_KEY":              key,
		"METRICS_ADDR":                  metricsAddr,
	}), &cfg)
	return cfg, err
}
