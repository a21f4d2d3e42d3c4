#!/usr/bin/env bash
# The walk, run as a newcomer pastes it: every ```sh block headed by a line
# "**Walk, step N of T.**", in order, in one bash, from the repository's root, against
# `make run`, `make seller` and `make llm`, which this script starts on loopback on a
# throwaway database of the local cluster (and stops, by their process ids, when it
# ends). The steps are read from the files of WALK_FILES, in that order (the README
# names them too); a step out of order, missing, without its block, or in a Markdown
# file not listed fails the walk before anything starts. Its port is not the usual
# one, so that a server of your own may keep running, and so that the walk is seen to
# follow it: PORT moves it, and the stand-ins with it (PORT+1, +2, +3, as make run's).
#
# It fails when any curl of the walk gets an answer of 400 or more (but the one the
# docs say it gets) or none at all, or when the walk does not print what the docs say
# it prints. Its output and the servers' logs are in var/walk/.
set -euo pipefail
cd "$(dirname "$0")/.."

export PORT=${PORT:-18080}
[[ $PORT =~ ^[0-9]+$ ]] || { echo "walk: PORT must be a port number" >&2; exit 2; }
export HOST=127.0.0.1 SITE_DIR=var/walk/site
# The stand-ins' addresses, as make run derives them from PORT, and what make run
# derives from them, not from this shell.
SELLER_ADDR=localhost:$((PORT + 1)) RECEIVER_ADDR=localhost:$((PORT + 2)) LLM_ADDR=localhost:$((PORT + 3))
unset PAYMENT_ALLOW_HOSTS WEBHOOK_ALLOW_HOSTS LLM_UPSTREAM_URL LLM_ANTHROPIC_URL CAPTCHA_SOLVER_URL METRICS_TOKEN

OUT=var/walk
DB=waystation_walk
rm -rf "$OUT" && mkdir -p "$OUT"
note() { printf 'walk: %s\n' "$*" >&2; }
die() { note "$*"; exit 1; }
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"

# The files the walk's steps live in, in the order they are walked.
WALK_FILES=(README.md docs/api.md docs/operations.md docs/deployment.md)
MARK='^\*\*Walk, step [0-9]+ of [0-9]+\.\*\*'
for f in $(grep -rlE --include='*.md' --exclude-dir=var --exclude-dir=.git "$MARK" . | sed 's|^\./||' | sort); do
	[[ " ${WALK_FILES[*]} " == *" $f "* ]] || die "$f holds a step of the walk, but is not in WALK_FILES (.ci/walk.sh)"
done
# The walk, step by step, after a prelude that notes the status of every curl.
{
	echo 'curl() { command curl -w "%{stderr}walk-http %{http_code} %{url_effective}\n" "$@"; }'
	awk '
		function fail(msg) { printf "walk: %s line %d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; bad = 1 }
		/^\*\*Walk, step [0-9]+ of [0-9]+\.\*\*/ {
			if (want) fail("a step without its sh block before it")
			match($0, /[0-9]+ of [0-9]+/)
			split(substr($0, RSTART, RLENGTH), a, " of ")
			if (a[1] + 0 != n + 1) fail("step " a[1] " where step " (n + 1) " was due")
			if (total && a[2] != total) fail("of " a[2] " where the steps before said of " total)
			total = a[2]; want = 1; next
		}
		want && /^```sh$/ { inside = 1; want = 0; n++; printf "# step %d (%s line %d)\n", n, FILENAME, FNR; next }
		want && !/^$/ { fail("the step is not followed by a sh block"); want = 0 }
		inside && /^```$/ { inside = 0; next }
		inside { print }
		END {
			if (want) fail("the last step has no sh block")
			if (n != total) { printf "walk: %d steps, of %d\n", n, total > "/dev/stderr"; bad = 1 }
			exit bad
		}' "${WALK_FILES[@]}"
} >"$OUT/walk.sh" || die "the walk's steps are not as the docs say; see above"
blocks=$(grep -c '^# step ' "$OUT/walk.sh")

# The throwaway database.
make -s db
ADMIN=$(.ci/db.sh url postgres)
PGOPTIONS="-c client_min_messages=warning" psql -q "$ADMIN" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
export DATABASE_URL=$(.ci/db.sh url "$DB")

# make run records its port in var/port, and make seller its address in
# var/seller-addr, where the stand-ins and the walk read them: keep the ones there were.
saved_port="" saved_seller=""
[[ -f var/port ]] && saved_port=$(cat var/port)
[[ -f var/seller-addr ]] && saved_seller=$(cat var/seller-addr)

pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	if [[ -n $saved_port ]]; then echo "$saved_port" >var/port; else rm -f var/port; fi
	if [[ -n $saved_seller ]]; then echo "$saved_seller" >var/seller-addr; else rm -f var/seller-addr; fi
	psql -q "$ADMIN" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# start NAME MAKE-TARGET: the target in a process group of its own, so that it stops
# with everything it started.
start() {
	setsid make -s "$2" </dev/null >"$OUT/$1.log" 2>&1 &
	pids+=($!)
}

# until SECONDS WHAT COMMAND...: wait for COMMAND to succeed, while everything started
# still runs.
until_ok() {
	local limit=$1 what=$2 pid
	shift 2
	for ((i = 0; i < limit * 2; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null || { tail -n 20 "$OUT"/*.log >&2; die "$what: a server it needs stopped; see $OUT/"; }
		done
		sleep 0.5
	done
	die "$what did not come up in ${limit}s; see $OUT/"
}

BASE=http://localhost:$PORT
# The walk must reach the servers it starts, not others on the same ports.
for addr in "localhost:$PORT" "$SELLER_ADDR" "$LLM_ADDR" "$RECEIVER_ADDR"; do
	if curl -s -o /dev/null --max-time 2 "http://$addr/"; then
		die "something already answers on $addr: stop it, or move the walk (PORT, SELLER_ADDR, LLM_ADDR, RECEIVER_ADDR)"
	fi
done
start server run
until_ok 600 "make run" curl -sf "$BASE/functions/v1/api/health"
start llm llm
start seller seller
until_ok 120 "make llm" curl -sf "http://$LLM_ADDR/v1/models"
until_ok 300 "make seller" curl -sf "http://$SELLER_ADDR/ledger"
# The seller is in the directory once a snapshot after its import is served.
until_ok 60 "the seller's listing" bash -c "curl -sf '$BASE/functions/v1/api/api/public/v1/services?hostname=localhost' | jq -e '.total > 0'"

note "running $blocks steps of the walk ($OUT/walk.sh)"
bash "$OUT/walk.sh" >"$OUT/walk.out" 2>"$OUT/walk.err" || true
grep -v '^walk-http ' "$OUT/walk.err" >&2 || true

fail=0
# Every answer below 400, but the one 422 the docs show: a widget CAPTCHA without a solver.
expected='walk-http 422 .*/captcha/tasks$'
grep '^walk-http ' "$OUT/walk.err" >"$OUT/calls" || true
calls=$(wc -l <"$OUT/calls")
bad=$(grep -Ev '^walk-http [1-3][0-9][0-9] ' "$OUT/calls" || true)
if [[ $(grep -Ec "$expected" <<<"$bad") != 1 ]]; then
	note "the widget CAPTCHA was not answered 422"
	fail=1
fi
bad=$(grep -Ev "$expected" <<<"$bad" || true)
if [[ -n $bad ]]; then
	note "answers the walk does not expect:"
	printf '%s\n' "$bad" >&2
	fail=1
fi
# What the docs say the walk prints.
for want in \
	'"hostname":"api.tidewatch.example"' \
	'"handle":"wh_' \
	'"status":"released","value":"ada@example.com"' \
	'X-Redactions: 1' \
	'user: Email the receipt to [redacted]' \
	'"delta":{"content":"[redacted]"}' \
	'data: [DONE]' \
	'"id":"echo"' \
	'instructions: Mail [redacted]' \
	'user: Mail [redacted]' \
	'fulfilled' \
	'settled' \
	'"today": "0.01"' \
	'"settledAmount":"3000"' \
	'"owner_verified":true' \
	'"warnings": []' \
	'signature verified' \
	'"status":"delivered"' \
	"Every delivery to 127.0.0.1:9 will fail" \
	'"solution": "W4Y5T"' \
	'validation_failed' \
	'waystation_http_requests_total' \
	'snapshot'; do
	if ! grep -qF -- "$want" "$OUT/walk.out"; then
		note "the walk did not print $want"
		fail=1
	fi
done
((fail == 0)) || die "FAILED: $blocks steps, $calls calls; the walk's output is $OUT/walk.out, its errors $OUT/walk.err"
note "ok: $blocks steps, $calls calls, every answer as the docs say"
