# agentrt: the targets a contributor and CI use. `make help` lists them.
GO ?= go
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
# Every module go.work ties (the core and the nested modules).
MODULES = $(shell $(GO) list -m -f '{{.Dir}}')
# The pinned npm MCP servers the mcp tests and examples/mcp run.
MCP_SERVERS = mcp/testdata/servers

.PHONY: help demo test bench lint fuzz mcp-servers chromium

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

demo: ## Run the main job on the embedded default: no network, no keys.
	$(GO) run ./cmd/agentrt demo -auto-approve

test: mcp-servers chromium ## Run every test of every module in go.work, with the race detector.
	@set -e; for d in $(MODULES); do echo "== $$d"; (cd $$d && $(GO) test -race -count=1 -timeout 20m ./...); done

bench: ## Run the benchmarks (full run; figures go in docs/performance.md).
	@set -e; for d in $(MODULES); do (cd $$d && $(GO) test -run '^$$' -bench . -benchmem ./...); done

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

chromium: ## Install Debian's chromium for the console's browser tests, when missing (apt-get, as root).
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "== apt-get install chromium (the console's browser tests)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi
