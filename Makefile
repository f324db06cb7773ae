# agentloop — common tasks. `make test` is what CI runs.

GO ?= go

.PHONY: test test-stress build install vet fmt-check bench demo bench-compare bench-compare-quick bench-loop

build:
	$(GO) build -o agentloop ./cmd/agentloop

# Into $(go env GOPATH)/bin, or $GOBIN.
install:
	$(GO) install ./cmd/agentloop

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test: fmt-check vet
	$(GO) test -race ./...
	@# Frame sizes are only true without the race detector's instrumentation.
	$(GO) test -count=1 -run '^TestSessionStackStaysSmall' ./loop

# The suite three times over while three busy loops hold the CPUs, as on a
# loaded CI machine: a test that leans on scheduling luck fails here. The
# loops end with the recipe, whether the tests pass, fail or are
# interrupted, and stop by themselves if its shell is killed. STRESS_PKGS
# narrows it (e.g. STRESS_PKGS='./service ./server').
# The timeout is per test binary over all three runs: the CLI's suite,
# starved by the busy loops, needs far longer than alone.
STRESS_PKGS ?= ./...
test-stress:
	@pids=; trap 'kill -9 $$pids 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	for i in 1 2 3; do (while kill -0 $$$$ 2>/dev/null; do :; done) & pids="$$pids $$!"; done; \
	echo "busy loops:$$pids"; \
	$(GO) test -race -count=3 -timeout 90m $(STRESS_PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./bench/...
	AGENTLOOP_BENCH=1 $(GO) test -count=1 -run TestCommandCost -v ./bench/sandboxbench

# The demo: a scripted model fixes a failing Go test in a temporary workspace.
demo:
	./examples/demo.sh

# Side-by-side with the Go agent frameworks (bench/peers is its own module).
bench-compare:
	$(GO) run ./bench/compare/cmd/compare

bench-compare-quick:
	$(GO) run ./bench/compare/cmd/compare -quick

# Loop overhead and 10,000 concurrent sessions.
bench-loop:
	$(GO) run ./bench/cmd/loopbench
