# agentrt: the targets a contributor and CI use. `make help` lists them.
GO ?= go
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
# Every module go.work ties (the core and the nested modules).
MODULES = $(shell $(GO) list -m -f '{{.Dir}}')
# The pinned npm MCP servers the mcp tests and examples/mcp run.
MCP_SERVERS = mcp/testdata/servers

.PHONY: help demo test test-modules bench bench-modules lint fuzz mcp-servers fault

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

demo: ## Run the main job on the embedded default: no network, no keys.
	$(GO) run ./cmd/agentrt demo -auto-approve

test: mcp-servers ## Run every test of every module in go.work, with the race detector, on a throwaway PostgreSQL cluster.
	@scripts/pg-test.sh run -- $(MAKE) --no-print-directory test-modules

test-modules: ## The loop `make test` runs (set TEST_PG_DSN to use a cluster of your own).
	@set -e; for d in $(MODULES); do echo "== $$d"; (cd $$d && $(GO) test -race -count=1 -timeout 20m ./...); done

bench: ## Run the benchmarks, SQLite and PostgreSQL in one run (full run; figures go in docs/performance.md).
	@scripts/pg-test.sh run -- $(MAKE) --no-print-directory bench-modules

bench-modules: ## The loop `make bench` runs.
	@set -e; for d in $(MODULES); do (cd $$d && $(GO) test -run '^$$' -bench . -benchmem ./...); done

FAULT_RUNS ?= 10000

fault: ## The killed-worker fault test at FAULT_RUNS runs (default 10,000) on a throwaway PostgreSQL cluster.
	@scripts/pg-test.sh run -- sh -c 'cd postgres && AGENTRT_FAULT_RUNS=$(FAULT_RUNS) $(GO) test -count=1 -timeout 60m -run "^TestFault_KilledWorkers$$" -v ./faulttest'

lint: ## go vet, gofmt and staticcheck, in every module.
	@set -e; for d in $(MODULES); do echo "== vet $$d"; (cd $$d && $(GO) vet ./...); done
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@set -e; for d in $(MODULES); do echo "== staticcheck $$d"; (cd $$d && $(STATICCHECK) ./...); done

FUZZTIME ?= 30s

fuzz: ## Fuzz Sanitize and CheckJSON for FUZZTIME each (default 30s).
	$(GO) test -run '^$$' -fuzz '^FuzzSanitize$$' -fuzztime $(FUZZTIME) ./trace
	$(GO) test -run '^$$' -fuzz '^FuzzCheckJSON$$' -fuzztime $(FUZZTIME) ./internal/canon

mcp-servers: ## Install the pinned MCP servers from their lock file (npm ci --ignore-scripts), when missing or stale.
	@if [ ! -f $(MCP_SERVERS)/node_modules/.package-lock.json ] || \
	    [ $(MCP_SERVERS)/package-lock.json -nt $(MCP_SERVERS)/node_modules/.package-lock.json ]; then \
		echo "== npm ci --ignore-scripts in $(MCP_SERVERS)"; \
		cd $(MCP_SERVERS) && npm ci --ignore-scripts --no-audit --no-fund; \
	fi
