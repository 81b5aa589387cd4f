# The platform's everyday commands. `make test` is the everyday test command
# (unit and contract tests, SQLite always, PostgreSQL when TEST_DATABASE_URL
# is set, and the load harness's own tests); `make e2e` runs the real-binary
# suites; .ci/run runs both with -race, plus the linters and the module
# checks.
GO         ?= go
TESTFLAGS  ?=
BENCHTIME  ?= 1s
BENCHFLAGS ?=
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -X main.version=$(VERSION)

.PHONY: build test e2e bench bench-quick bench-go soak check vet lint openapi-lint tidy-check fmt dev docs clean

# build stamps the version (`platform version`) from git describe.
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/platform ./cmd/platform

test:
	@if [ -z "$$TEST_DATABASE_URL" ]; then echo "TEST_DATABASE_URL not set: PostgreSQL tests skipped (SQLite only)"; fi
	$(GO) test $(TESTFLAGS) ./...
	$(GO) -C bench test $(TESTFLAGS) ./...

# e2e runs the suites that start the real binary (build tag e2e):
# cmd/platform's *_e2e_test.go, internal/e2e/reliability, internal/box/e2e.
e2e:
	$(GO) test -tags e2e $(TESTFLAGS) ./cmd/platform ./internal/e2e/... ./internal/box/e2e

# bench is the load harness (bench/, a module of its own): every scenario
# against its baseline in three interleaved rounds, SQLite by default
# (BENCHFLAGS="--engine postgres" for PostgreSQL).
bench: bin/bench
	bin/bench $(BENCHFLAGS)

# bench-quick is every scenario at one level, short: a smoke run of the
# harness and a rough reading, in under two minutes.
bench-quick: bin/bench
	bin/bench --concurrency 32 --duration 1500ms --warmup 300ms --outbox-rows 20000 $(BENCHFLAGS)

bin/bench: FORCE
	$(GO) -C bench build -o ../bin/bench .

# bench-go runs the go test micro-benchmarks.
bench-go:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

# soak is ten minutes of mixed load: errors and RSS growth after warm-up.
soak: bin/bench
	bin/bench --scenario soak --soak 10m $(BENCHFLAGS)

check: vet
	$(GO) run ./cmd/platform events check

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...
	$(GO) -C bench vet ./...

# lint runs golangci-lint with .golangci.yml (.ci/run installs the pinned
# version).
lint:
	golangci-lint run ./...
	golangci-lint run --build-tags e2e ./...
	cd bench && golangci-lint run --config ../.golangci.yml ./...

# openapi-lint lints every served OpenAPI document (each service's and the
# gateway's merge) with Redocly's recommended rules; an error fails
# (Redocly pinned in scripts/docs; needs Node and npm).
openapi-lint:
	sh scripts/openapi-lint.sh

# tidy-check fails when go.mod or go.sum of either module is not tidy.
tidy-check:
	$(GO) mod tidy -diff
	$(GO) -C bench mod tidy -diff

fmt:
	gofmt -w $$(git ls-files '*.go')

dev:
	$(GO) run ./cmd/platform dev

# docs renders each service's OpenAPI document to docs/api/<service>.html
# (Redocly, pinned in scripts/docs; needs Node and npm).
docs:
	sh scripts/docs.sh

clean:
	rm -rf bin data

.PHONY: FORCE
FORCE:
