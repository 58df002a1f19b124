# The two commands: `make dev` runs Vigil on this machine, `make test` runs every test.
GO       ?= go
TEMPORAL := bin/temporal
TEMPORAL_VERSION := v1.5.1

.PHONY: dev test vet build bench bench-ingest temporal-cli clean

dev: $(TEMPORAL)
	$(GO) run ./cmd/vigil dev

test: $(TEMPORAL)
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

build:
	$(GO) build -o bin/vigil ./cmd/vigil

bench: $(TEMPORAL)
	$(GO) test -run '^$$' -bench . -benchtime 2s ./api/...

# The ingest side-by-side table of docs/PERFORMANCE.md, on a stack started the way `make dev` does:
# RATES="50 200" DURATION=20 CPU_ALERTS=1000 make bench-ingest (needs pgbench and psql).
bench-ingest: $(TEMPORAL)
	cmd/vigil-load/bench-ingest.sh

# The Temporal CLI (dev server) is installed pinned from source; the newest releases do not build from
# the module proxy. About 3.5 minutes cold, cached afterwards.
$(TEMPORAL):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_VERSION)

temporal-cli: $(TEMPORAL)

clean:
	rm -rf bin/vigil .vigil
