# Agent Adaptor. `make test` is the whole test suite (what CI runs).
GO ?= go
STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || echo $(shell $(GO) env GOPATH)/bin/staticcheck)

.PHONY: all deps lint test gotest fuzz mutate ui ui-test ui-check serve build

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
	$(GO) run ./internal/mutate $(ARGS)

# The web UI: rebuild the committed bundle (needs npm), run its unit tests,
# and check that the committed bundle matches its sources.
ui:
	$(MAKE) -C examples/streaming-chat-copilotkit build

ui-test:
	$(MAKE) -C examples/streaming-chat-copilotkit test

ui-check:
	$(MAKE) -C examples/streaming-chat-copilotkit check-dist

test: deps lint gotest ui-test ui-check fuzz
