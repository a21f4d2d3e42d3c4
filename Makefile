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
	./internal/catalog:FuzzNormalizeHostname \
	./internal/catalog:FuzzParseBazaar

.PHONY: help
help:
	@echo "make run      install what is missing, start PostgreSQL, migrate, load the demo, serve on :$(PORT)"
	@echo "make test     the whole suite against the real local database"
	@echo "make bench    Go benchmarks on the real catalog"
	@echo "make db | migrate | import CATALOG=file.jsonl | fuzz | build | generate | lint | clean"

.PHONY: go
go:
	@command -v $(GO) >/dev/null || { echo "Go 1.26 is needed: https://go.dev/dl/" >&2; exit 1; }

.PHONY: db
db:
	@.ci/db.sh >/dev/null

.PHONY: build
build: go
	@mkdir -p $(BIN)
	$(GO) build -o $(SERVER) ./cmd/server

.PHONY: migrate
migrate: db build
	DATABASE_URL='$(DB_URL)' $(SERVER) migrate

.PHONY: demo
demo: migrate
	DATABASE_URL='$(DB_URL)' $(SERVER) demo

.PHONY: import
import: migrate
	DATABASE_URL='$(DB_URL)' $(SERVER) import '$(CATALOG)'

.PHONY: run
run: demo
	DATABASE_URL='$(DB_URL)' PORT=$(PORT) $(SERVER) serve

.PHONY: generate
generate: go
	$(GO) generate ./...

.PHONY: lint
lint: go
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting" >&2; exit 1; }
	$(GO) vet ./...

.PHONY: test
test: go db lint
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' $(GO) test -race -count=1 ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

.PHONY: fuzz
fuzz: go
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		log=$$(mktemp); \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) >$$log 2>&1 || { cat $$log; rm -f $$log; exit 1; }; \
		rm -f $$log; \
	done

.PHONY: bench
bench: go db
	WAYSTATION_TEST_DATABASE_URL='$(TEST_DB_URL)' $(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: clean
clean:
	-.ci/db.sh stop
	rm -rf var
