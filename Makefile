# Agent Adaptor. `make test` is the whole test suite (what CI runs).
GO ?= go
STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || echo $(shell $(GO) env GOPATH)/bin/staticcheck)

.PHONY: all deps lint test gotest fuzz mutate ui ui-test ui-check serve build bench-e2e bench-e2e-quick

all: test

deps:
	./scripts/deps.sh

build:
	$(GO) build -o bin/agentadaptor ./cmd/agentadaptor

serve:
	$(GO) run ./cmd/agentadaptor serve

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

gotest:
	$(GO) test -race -timeout 20m ./...

fuzz:
	./scripts/fuzz.sh

# The mutation check, on demand only (not part of `make test`): every mutation
# listed in a mutations.yaml next to the code it breaks is applied alone to a
# scratch copy, the listed packages' tests must fail. Ends with "killed K/N".
# ARGS passes flags, e.g. `make mutate ARGS="-only bus-"` or ARGS=-check.
mutate:
	$(GO) run ./internal/tools/mutate $(ARGS)

# The web UI: rebuild the committed bundle (needs npm), run its unit tests,
# and check that the committed bundle matches its sources.
ui:
	$(MAKE) -C examples/streaming-chat-copilotkit build

ui-test:
	$(MAKE) -C examples/streaming-chat-copilotkit test

ui-check:
	$(MAKE) -C examples/streaming-chat-copilotkit check-dist

test: deps lint gotest ui-test ui-check fuzz

# The end-to-end relay benchmark (bench/e2e/README.md): the project (also with
# parent.nice: project-nice), a bare Go relay and the @ag-ui/a2a peer against
# one @a2a-js/sdk remote, at 1, 10, 100 and 1,000 concurrent delegations (one
# per run), in the fan-out shapes 10 runs x 10 and 10 runs x 100 concurrent
# delegations, the fixed cost per run and per delegation, plus one
# 20,000-chunk delegation; takes several minutes. It rewrites the generated
# section of docs/benchmarks.md and leaves results, logs and a CPU profile of
# serve in bench/e2e/out.
# BENCH_E2E_FLAGS adds flags, e.g. BENCH_E2E_FLAGS="-levels 1,10,100".
BENCH_E2E_FLAGS ?=
bench-e2e:
	./scripts/deps.sh
	$(GO) build -o bench/e2e/out/bin/bench-e2e ./bench/e2e
	bench/e2e/out/bin/bench-e2e -doc docs/benchmarks.md -cpuprofile bench/e2e/out/serve-cpu.pprof \
		-command "make bench-e2e$(if $(BENCH_E2E_FLAGS), BENCH_E2E_FLAGS='$(BENCH_E2E_FLAGS)')" $(BENCH_E2E_FLAGS)

# A short run of the same harness (a minute or so): 1 and 10 concurrent, a
# 2 x 10 fan-out of 100-chunk delegations, a small fixed-cost pass; no doc.
bench-e2e-quick:
	$(GO) build -o bench/e2e/out/bin/bench-e2e ./bench/e2e
	bench/e2e/out/bin/bench-e2e -levels 1,10 -min-runs 5 -long 2000 -fanout 2x10 -fanout-chunks 100 -fixed-runs 20 -fixed-rounds 1 $(BENCH_E2E_FLAGS)
