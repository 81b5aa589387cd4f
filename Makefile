# The platform's everyday commands. `make test` is the test command CI runs
# (with TESTFLAGS="-race" and TEST_DATABASE_URL set, so PostgreSQL is
# tested too).
GO        ?= go
TESTFLAGS ?=
BENCHTIME ?= 1s
BENCHFLAGS ?=

.PHONY: build test bench bench-go soak check vet fmt dev docs clean

build:
	$(GO) build -o bin/platform ./cmd/platform

test:
	$(GO) test $(TESTFLAGS) ./...

# bench is the load harness (bench/): every scenario against its baseline,
# SQLite by default (BENCHFLAGS="--engine postgres" for PostgreSQL).
bench:
	$(GO) run ./bench $(BENCHFLAGS)

# bench-go runs the go test micro-benchmarks.
bench-go:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

# soak is ten minutes of mixed load: errors and RSS growth after warm-up.
soak:
	$(GO) run ./bench --scenario soak --soak 10m $(BENCHFLAGS)

check: vet
	$(GO) run ./cmd/platform events check

vet:
	$(GO) vet ./...

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
