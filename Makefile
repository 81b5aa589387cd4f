# The platform's everyday commands. `make test` is the test command CI runs
# (with TESTFLAGS="-race" and TEST_DATABASE_URL set, so PostgreSQL is
# tested too).
GO        ?= go
TESTFLAGS ?=
BENCHTIME ?= 1s

.PHONY: build test bench check vet fmt dev docs clean

build:
	$(GO) build -o bin/platform ./cmd/platform

test:
	$(GO) test $(TESTFLAGS) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

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
