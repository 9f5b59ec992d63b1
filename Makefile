# agentrt: the targets a contributor and CI use. `make help` lists them.
GO ?= go
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: help demo test bench lint fuzz

help: ## List the targets.
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

demo: ## Run the main job on the embedded default: no network, no keys.
	$(GO) run ./cmd/agentrt demo -auto-approve

test: ## Run every test, with the race detector.
	$(GO) test -race -count=1 -timeout 20m ./...

bench: ## Run the benchmarks (full run; figures go in docs/performance.md).
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint: ## go vet, gofmt and staticcheck.
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(STATICCHECK) ./...

FUZZTIME ?= 30s

fuzz: ## Fuzz Sanitize and CheckJSON for FUZZTIME each (default 30s).
	$(GO) test -run '^$$' -fuzz '^FuzzSanitize$$' -fuzztime $(FUZZTIME) ./trace
	$(GO) test -run '^$$' -fuzz '^FuzzCheckJSON$$' -fuzztime $(FUZZTIME) ./internal/canon
