# The two commands: `make dev` runs Vigil on this machine, `make test` runs every test.
GO       ?= go
TEMPORAL := bin/temporal
TEMPORAL_VERSION := v1.5.1
# Static checks run by `make test`, installed pinned like the Temporal CLI (a version bump needs the old
# binary removed: `rm bin/staticcheck`). staticcheck v0.8.2 is release 2026.2.2.
STATICCHECK := bin/staticcheck
STATICCHECK_VERSION := v0.8.2
WORKFLOWCHECK := bin/workflowcheck
WORKFLOWCHECK_VERSION := v0.6.0

.PHONY: dev test test-deps lint build bench bench-ingest bench-issue26 realworld temporal-cli tools clean

dev: $(TEMPORAL)
	$(GO) run ./cmd/vigil dev

test: test-deps lint $(TEMPORAL)
	$(GO) test -count=1 -timeout 20m ./...

# What the tests need besides Go, installed with apt-get when missing (as root; otherwise it says what to
# install and stops): PostgreSQL's initdb/pg_ctl (a throw-away cluster per test binary when DATABASE_URL is
# unset), Debian's chromium (the console and decide-page browser tests) and Node.js with npm (the official
# TypeScript MCP client and axe-core, installed by npm ci from the npm registry). Tests fail, never skip,
# without them.
test-deps:
	@missing=""; \
	command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "make test needs:$$missing (apt-get install -y$$missing as root)" >&2; exit 1; fi; \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# go vet, staticcheck (default checks) and workflowcheck (determinism of every function taking a
# workflow.Context, and of what it calls); each fails the build on any finding. workflowcheck runs as a
# vet tool so the go build cache keeps its per-package results: a few seconds once warm (the first run
# on a machine analyses every dependency and takes minutes); run standalone it re-analyses everything
# from source on every run. `go mod tidy -diff` fails (printing the diff) when go.mod or go.sum is not
# what `go mod tidy` would write. cmd/layercheck fails, printing the import chain, when a package breaks a
# dependency rule of docs/DEVELOPING.md (kit/ only kit/; store only kit/; domain/ no door and no Temporal
# package; no go.temporal.io package under kit/, store or domain/).
lint: $(STATICCHECK) $(WORKFLOWCHECK)
	$(GO) mod tidy -diff
	$(GO) run ./cmd/layercheck
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) vet -vettool=$(CURDIR)/$(WORKFLOWCHECK) ./...

build:
	$(GO) build -o bin/vigil ./cmd/vigil

bench: $(TEMPORAL)
	$(GO) test -run '^$$' -bench . -benchtime 2s ./api/...

# The ingest side-by-side table of docs/PERFORMANCE.md, on a stack started the way `make dev` does:
# RATES="50 200" DURATION=20 CPU_ALERTS=1000 make bench-ingest (needs pgbench and psql).
bench-ingest: $(TEMPORAL)
	cmd/vigil-load/bench-ingest.sh

# Every figure of issue 26's "What it must show" in one run, each beside its bound (cmd/vigil-load/issue26.sh).
bench-issue26: $(TEMPORAL)
	cmd/vigil-load/issue26.sh

# Extraction's recall and precision on the corpus of real payloads, per source and overall
# (kit/realworld; VIGIL_REALWORLD_DIR=dir to score another corpus, DETAILS=1 for each payload's misses).
realworld:
	$(GO) run ./cmd/vigil-load realworld $(if $(DETAILS),-details)

# The Temporal CLI (dev server) is installed pinned from source; the newest releases do not build from
# the module proxy. About 3.5 minutes cold, cached afterwards.
$(TEMPORAL):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_VERSION)

temporal-cli: $(TEMPORAL)

# Both build from the module proxy with Go 1.26 in well under a minute cold.
$(STATICCHECK):
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(WORKFLOWCHECK):
	GOBIN=$(CURDIR)/bin $(GO) install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

tools: $(TEMPORAL) $(STATICCHECK) $(WORKFLOWCHECK)

clean:
	rm -rf bin/vigil .vigil
