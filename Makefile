# agentrt: the targets a contributor and CI use. `make help` lists them.
GO ?= go
# go.work and every go.mod name the toolchain (go1.27.3); auto lets the go
# command fetch it through the module proxy when the local go is older.
# A go.env that says GOTOOLCHAIN=local would otherwise ignore those lines.
GOTOOLCHAIN ?= auto
export GOTOOLCHAIN
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
# Every module go.work ties (the core and the nested modules).
MODULES = $(shell $(GO) list -m -f '{{.Dir}}')
# The pinned npm MCP servers the mcp tests and examples/mcp run.
MCP_SERVERS = mcp/testdata/servers
# The pinned npm tools that drive agentrt-proxy as non-Go hosts do: Node 22,
# the MCP conformance suite, the Inspector's CLI and mcpc.
PROXY_HOSTS = proxy/testdata/hosts

.PHONY: help build install demo test test-modules dups callpath bench bench-modules lint fuzz fault vuln tidy release reproduce mcp-servers host-tools chromium proxy-hosts

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# Where make build puts the binaries, and where make install copies them.
BIN ?= bin
INSTALL_DIR ?= $(shell $(GO) env GOBIN)
ifeq ($(INSTALL_DIR),)
INSTALL_DIR := $(shell $(GO) env GOPATH)/bin
endif

build: ## Build the five binaries (agentrt, agentrt-proxy, agentrt-console, agentrt-policy, agentrt-otel) from this checkout into $(BIN)/, through go.work.
	@mkdir -p $(BIN)
	@pkgs=$$($(GO) run ./internal/release/releasetool binaries | awk '{print $$2}'); \
	echo "== go build -o $(BIN)/ $$(echo $$pkgs | tr ' ' '\n' | sed 's|.*/||' | tr '\n' ' ')"; \
	$(GO) build -o $(BIN)/ $$pkgs

install: build ## Copy what make build built into INSTALL_DIR (default $$(go env GOBIN), else $$(go env GOPATH)/bin), side by side.
	@mkdir -p $(INSTALL_DIR)
	@for b in $(BIN)/agentrt*; do install -m 0755 $$b $(INSTALL_DIR)/; echo "installed $(INSTALL_DIR)/$${b##*/}"; done

demo: ## Run the main job on the embedded default: no network, no keys.
	@echo "== building agentrt (the first time, go fetches the go1.27.3 toolchain and the modules and compiles: about a minute, silently)"
	$(GO) run ./cmd/agentrt demo -auto-approve

test: mcp-servers host-tools chromium proxy-hosts ## Run every test of every module in go.work, with the race detector, on a throwaway PostgreSQL cluster.
	@scripts/pg-test.sh run -- $(MAKE) --no-print-directory test-modules

test-modules: ## The loop `make test` runs (set TEST_PG_DSN to use a cluster of your own).
	@set -e; for d in $(MODULES); do echo "== $$d"; (cd $$d && $(GO) test -race -count=1 -timeout 20m ./...); done

dups: ## Print the duplicate-pair count with Go import blocks blanked, and the raw count (internal/house/dups).
	$(GO) run ./internal/house/dups

callpath: ## Print a proxied call's path (files walked, returns to a file already left) for three calls, traced with Delve (scripts/callpath.sh).
	bash scripts/callpath.sh

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

vuln: ## govulncheck every module against a local database built from the pinned golang.org/x/vulndb (offline).
	bash .ci/vuln

tidy: ## go mod tidy in every module outside the workspace, our modules from a local module proxy built from the checkout.
	$(GO) run ./internal/release/releasetool tidy

release: ## Build every binary (agentrt, agentrt-proxy, agentrt-console, agentrt-policy, agentrt-otel) for linux and darwin, amd64 and arm64, version-stamped, into dist/ with SHA256SUMS.
	bash .ci/release dist

reproduce: ## Build every release binary twice, in two directories, and fail unless the SHA256SUMS match (CI does linux/amd64).
	bash .ci/reproduce

mcp-servers: ## Install the pinned MCP servers from their lock file (npm ci --ignore-scripts), when missing or stale.
	@if [ ! -f $(MCP_SERVERS)/node_modules/.package-lock.json ] || \
	    [ $(MCP_SERVERS)/package-lock.json -nt $(MCP_SERVERS)/node_modules/.package-lock.json ]; then \
		echo "== npm ci --ignore-scripts in $(MCP_SERVERS)"; \
		cd $(MCP_SERVERS) && npm ci --ignore-scripts --no-audit --no-fund; \
	fi

host-tools: ## Install the system tools the tests run (openssl, for the documented notification check; curl, for docs/postgres.md's walkthrough) when missing.
	@command -v openssl >/dev/null 2>&1 || { echo "== apt-get install -y openssl"; apt-get update -qq && apt-get install -y -qq openssl; }
	@command -v curl >/dev/null 2>&1 || { echo "== apt-get install -y curl"; apt-get update -qq && apt-get install -y -qq curl; }

chromium: ## Install Debian's chromium for the console's browser tests, when missing (apt-get, as root).
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "== apt-get install chromium (the console's browser tests)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi

proxy-hosts: ## Install Node 22, the MCP conformance suite, the Inspector and mcpc from their lock files (--ignore-scripts), when missing or stale.
	@set -e; for d in node conformance conformance-next mcpc; do \
		dir=$(PROXY_HOSTS)/$$d; \
		if [ ! -f $$dir/node_modules/.package-lock.json ] || [ $$dir/package-lock.json -nt $$dir/node_modules/.package-lock.json ]; then \
			echo "== npm ci --ignore-scripts in $$dir"; \
			(cd $$dir && npm ci --ignore-scripts --no-audit --no-fund); \
		fi; \
	done
	@# The Inspector's lock names a Windows-only optional package the registry
	@# here does not serve, which npm ci refuses; an install from the lock
	@# (--ignore-scripts --no-save) gives the same tree, and the lock must come out unchanged.
	@dir=$(PROXY_HOSTS)/inspector; \
	if [ ! -f $$dir/node_modules/.package-lock.json ] || [ $$dir/package-lock.json -nt $$dir/node_modules/.package-lock.json ]; then \
		echo "== install from the lock, --ignore-scripts --no-save, in $$dir (the lock must not change)"; \
		cp $$dir/package-lock.json $$dir/.package-lock.before; \
		(cd $$dir && npm install --ignore-scripts --no-audit --no-fund --no-save) || { rm -f $$dir/.package-lock.before; exit 1; }; \
		if ! cmp -s $$dir/package-lock.json $$dir/.package-lock.before; then \
			diff -u $$dir/.package-lock.before $$dir/package-lock.json | head -40; \
			mv $$dir/.package-lock.before $$dir/package-lock.json; \
			echo "the install changed $$dir/package-lock.json; the committed lock is restored and the install refused"; exit 1; \
		fi; \
		rm -f $$dir/.package-lock.before; \
	fi
