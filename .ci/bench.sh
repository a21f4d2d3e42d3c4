#!/usr/bin/env bash
# The load run of `make bench`: the live service against nginx serving the files the
# service itself published for the same snapshot, over loopback, with wrk.
#
#   .ci/bench.sh            (make bench runs it after the Go benchmarks)
#
# For each catalog (the real one, then the real one grown to 100,000 methods) it loads
# a database of its own on the test server (waystation_bench, waystation_bench_100k;
# kept between runs and reused while the catalog is unchanged), starts the server
# binary on a free loopback port with its site in var/bench, its access log on as in
# production (LOG_LEVEL=INFO, a line a request, appended to a file), and nginx twice
# with generator/nginx.conf.example on that site: its access log off, and on, buffered
# as production runs it (buffer=64k flush=1s). Then, route by route and back to back
# so that the noise of a shared machine falls on all alike: the unfiltered list
# (identity and gzip), a method and a merchant from nginx (log off, then on) and from
# the service, each figure printed with the wrk command that measured it; then
# the service alone on a filtered list and on search: exact (q is a method's slug),
# cached (one query repeated) and novel (a new query each request). It prints
# requests/s, p99 latency and the service/nginx ratio, the service's resident memory,
# and writes them to var/bench/results.md with the raw wrk outputs beside it, and with
# tables of the Go benchmarks make bench ran first (var/bench/go-bench.txt): the
# routes' allocations, and search at the x402 Bazaar's scale (relevance on the
# development set, latency, the cost of embedding new methods).
#
# Environment: WAYSTATION_TEST_DATABASE_URL (the server the databases are made on;
# default the local cluster), CATALOG (the real catalog), BENCH_SIZES ("real 100000"),
# BENCH_DURATION (8s a run), BENCH_THREADS (2), BENCH_CONNECTIONS (64), BENCH_SEARCH
# (1; 0 measures the snapshot routes alone), SEARCH_MODEL_DIR (the sentence encoder's
# files, as make bench passes them: the hybrid builtin model), SNAPSHOT_MEMLIMIT (the
# service's soft memory limit while it builds a whole snapshot, as make bench passes
# it; unset: none), SERVE_MEMLIMIT (its soft memory limit between generations, as a
# server of that size is given it; unset: none), SERVE_GOGC (its collector's pacing
# between generations; unset: auto).
#
# BENCH_SERVERS names server binaries to compare instead (built beforehand, e.g. the
# code before and after a change): for each catalog each starts on a site of its own,
# one after the other, and the routes are measured on each in turn, route by route,
# so that the machine's noise falls on all alike; nginx is not run. Each row gives the
# requests/s and CPU a request of a binary over the first's, and the memory table a
# row per binary. The 100k load run alone, the code before against after, twice:
#
#   BENCH_SIZES=100000 BENCH_SERVERS="before after before after" .ci/bench.sh
#
# with SEARCH_MODEL_DIR and SNAPSHOT_MEMLIMIT as make bench passes them (the bench
# database is loaded first with the first binary when it does not hold the catalog).
# BENCH_AFTER, when set, is a command run after the load run and its memory read,
# with each server's address, pid and number as arguments, before the servers stop: to read a heap
# profile from a binary built with one, say.
set -euo pipefail

cd "$(dirname -- "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
OUT=$ROOT/var/bench
CATALOG=${CATALOG:-../shared/data/bazaar-2026-08.jsonl}
SIZES=${BENCH_SIZES:-real 100000}
DURATION=${BENCH_DURATION:-8s}
THREADS=${BENCH_THREADS:-2}
CONNS=${BENCH_CONNECTIONS:-64}
SEARCH=${BENCH_SEARCH:-1}
SERVERS=${BENCH_SERVERS:-}
API=/functions/v1/api/api/public/v1

note() { printf 'bench.sh: %s\n' "$*" >&2; }
die() { printf 'bench.sh: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------- processes

# Every process started here, stopped by its pid on exit however the script ends.
PIDS=()
stop() { # PID
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do stop "$pid"; done
	PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------- tools

.ci/tools.sh wrk nginx
WRK=$(command -v wrk || true)
NGINX=$(command -v nginx || true)
[[ -n $NGINX ]] || { [[ -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx; }
[[ -n $WRK && -n $NGINX ]] || die "wrk and nginx are needed (apt-get install wrk nginx)"
PSQL=$(command -v psql || true)
if [[ -z $PSQL ]]; then
	for p in /usr/lib/postgresql/*/bin/psql; do [[ -x $p ]] && PSQL=$p; done
fi
[[ -n $PSQL ]] || die "psql is needed (make db installs it)"
[[ -r $CATALOG ]] || die "the real catalog $CATALOG is missing"

mkdir -p "$OUT/bin" "$OUT/wrk"
if [[ -z $SERVERS ]]; then
	note "building the server"
	"${GO:-go}" build -o "$OUT/bin/waystation" ./cmd/server
	SERVER=$OUT/bin/waystation
else
	bins=()
	for bin in $SERVERS; do
		[[ -x $bin ]] || die "BENCH_SERVERS: $bin is not an executable"
		bins+=("$(realpath -- "$bin")")
	done
	SERVERS=${bins[*]}
	SERVER=${bins[0]}
fi
"${GO:-go}" build -o "$OUT/bin/growcatalog" ./internal/cmd/growcatalog

ADMIN_URL=${WAYSTATION_TEST_DATABASE_URL:-$(.ci/db.sh url postgres)}
# db_url NAME: the URL of database NAME on the same server.
db_url() { sed -E "s#^([a-z]+://[^/?]*)/[^?]*#\\1/$1#" <<<"$ADMIN_URL"; }
psql_admin() { "$PSQL" "$ADMIN_URL" -X -q -A -t -v ON_ERROR_STOP=1 "$@" </dev/null; }
# psql_db NAME ARGS...: psql on database NAME.
psql_db() { "$PSQL" "$(db_url "$1")" -X -q -A -t -v ON_ERROR_STOP=1 "${@:2}" </dev/null; }

# ---------------------------------------------------------------------------- databases

# load_db NAME SIZE: the catalog of SIZE ("real", or a number of methods) in database
# NAME, loaded unless the database says it holds that already (its comment).
load_db() {
	local name=$1 size=$2 url key have
	url=$(db_url "$name")
	# The builtin model the databases were embedded with counts too: the server must not
	# spend the load run embedding the catalog again.
	key="$(sha256sum <"$CATALOG" | cut -c1-16) $size $(sha256sum <internal/postgres/pgtest/synthetic.go | cut -c1-16) ${SEARCH_MODEL_DIR:+$(basename "$SEARCH_MODEL_DIR")}"
	have=$(psql_admin -c "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '$name'")
	if [[ $have == "$key" ]]; then
		note "database $name holds the $size catalog already"
		return
	fi
	note "loading the $size catalog into database $name"
	psql_admin -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" -c "CREATE DATABASE $name"
	DATABASE_URL=$url "$SERVER" migrate
	DATABASE_URL=$url "$SERVER" import "$CATALOG" | tail -n 1
	if [[ $size != real ]]; then
		DATABASE_URL=$url "$OUT/bin/growcatalog" -methods "$size"
	fi
	psql_admin -c "COMMENT ON DATABASE $name IS '$key'"
}

# ---------------------------------------------------------------------------- servers

# start_service NAME [TAG]: SERVER on database NAME, its site in OUT/site-TAG and its
# log in OUT/service-TAG.log (TAG: NAME unless given); sets SERVICE (host:port) and
# SERVICE_PID. Search limits are raised so that they never refuse, yet are counted as
# in production.
start_service() {
	local name=$1 tag=${2:-$1} log=$OUT/service-${2:-$1}.log
	rm -rf -- "$OUT/site-$tag"
	: >"$log" # here, not only in the background: the last run's log must not be read
	# Appended, so that truncating the file between runs (truncate_logs) leaves no hole.
	env -i PATH="$PATH" HOME="${HOME:-/}" DATABASE_URL="$(db_url "$name")" HOST=127.0.0.1 PORT=0 \
		SITE_DIR="$OUT/site-$tag" SNAPSHOT_INTERVAL=24h SNAPSHOT_WATCH=1s PROBE_INTERVAL=0 LOG_LEVEL=INFO ACCESS_LOG=true \
		SEARCH_RATE_PER_MIN=1000000000 SEARCH_BURST=1000000000 SEARCH_DAILY_ALLOWANCE=1000000000 \
		SEARCH_MODEL_DIR="${SEARCH_MODEL_DIR:-}" SNAPSHOT_MEMLIMIT="${SNAPSHOT_MEMLIMIT:-}" SERVE_MEMLIMIT="${SERVE_MEMLIMIT:-}" SERVE_GOGC="${SERVE_GOGC:-}" "$SERVER" serve >>"$log" 2>&1 &
	SERVICE_PID=$!
	PIDS+=("$SERVICE_PID")
	SERVICE=''
	# The server builds and publishes its first snapshot before it listens.
	for _ in $(seq 6000); do
		SERVICE=$(sed -n 's#^waystation serving on http://\([^/]*\)/.*#\1#p' "$log")
		[[ -n $SERVICE ]] && return
		kill -0 "$SERVICE_PID" 2>/dev/null || { cat "$log" >&2; die "the server exited"; }
		sleep 0.1
	done
	die "the server did not listen within 10 minutes"
}

# start_nginx NAME LOG: nginx on the service's site, on a free loopback port, its
# access log off (LOG "off") or on, buffered as in production ("on"); sets EDGE and
# NGINX_PID. Its origin is a socket nothing listens on, so that a request the files do
# not answer fails (502) rather than being measured as the service's.
start_nginx() {
	local name=$1 prefix=$OUT/nginx-$1-log-$2 port access="access_log off;"
	[[ $2 == on ]] && access="access_log $prefix/access.log combined buffer=64k flush=1s;"
	rm -rf -- "$prefix"
	mkdir -p "$prefix"
	sed -e "s#/srv/waystation/site#$OUT/site-$name#g" \
		-e "s#server 127.0.0.1:8080 max_fails=0;#server unix:$prefix/no-origin.sock;#" \
		-e "s#listen 8081;#listen 127.0.0.1:@PORT@;#" generator/nginx.conf.example >"$prefix/waystation.conf"
	local mime=/etc/nginx/mime.types
	[[ -r $mime ]] || { mime=$prefix/mime.types; echo 'types { text/html html; text/css css; }' >"$mime"; }
	local user=''
	((EUID == 0)) && user="user root;"
	for _ in $(seq 20); do
		port=$((20000 + RANDOM % 30000))
		(: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
		sed -i "s#listen 127.0.0.1:[0-9@PORT]*;#listen 127.0.0.1:$port;#" "$prefix/waystation.conf"
		# As a server would run it: a worker per core, files sent with sendfile, and
		# connections kept as long as the client keeps them (as Go does).
		local brotli=/usr/lib/nginx/modules/ngx_http_brotli_static_module.so load=""
		if [[ -e $brotli ]]; then
			load="load_module $brotli;"
		else
			sed -i "s#brotli_static on;##" "$prefix/waystation.conf"
		fi
		cat >"$prefix/nginx.conf" <<-EOF
			$load
			daemon off;
			$user
			worker_processes auto;
			pid $prefix/nginx.pid;
			error_log $prefix/error.log warn;
			events { worker_connections 1024; }
			http {
			    include $mime;
			    $access
			    sendfile on;
			    tcp_nopush on;
			    keepalive_requests 1000000;
			    client_body_temp_path $prefix/body;
			    proxy_temp_path $prefix/proxy;
			    fastcgi_temp_path $prefix/fastcgi;
			    uwsgi_temp_path $prefix/uwsgi;
			    scgi_temp_path $prefix/scgi;
			    include $prefix/waystation.conf;
			}
		EOF
		"$NGINX" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" >"$prefix/out.log" 2>&1 &
		NGINX_PID=$!
		PIDS+=("$NGINX_PID")
		for _ in $(seq 300); do
			if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				EDGE=127.0.0.1:$port
				return
			fi
			kill -0 "$NGINX_PID" 2>/dev/null || break
			sleep 0.1
		done
		stop "$NGINX_PID"
		note "nginx did not start on port $port: $(tail -n 3 "$prefix/error.log" "$prefix/out.log" 2>/dev/null | tr '\n' ' ')"
	done
	die "nginx did not start"
}

# ---------------------------------------------------------------------------- wrk

# Each request a query nobody asked before: two words and a counter of its own.
cat >"$OUT/novel.lua" <<'EOF'
local words = {"ethereum", "weather", "token", "price", "image", "domain", "scrape",
	"flight", "translate", "gas", "inflation", "company", "tweets", "block", "city"}
local threads, n = 0, 0
function setup(thread)
	threads = threads + 1
	thread:set("id", threads)
end
function init(args)
	path = args[1]
	nonce = args[2]
end
function request()
	n = n + 1
	return wrk.format("GET", path .. words[n % #words + 1] .. "+" .. words[(n * 7) % #words + 1] ..
		"+" .. nonce .. "t" .. id .. "n" .. n)
end
EOF

# check WHAT URL [HEADER]: the answer must be a 200; sets BYTES, the body's size.
check() {
	local what=$1 url=$2 hdr=${3:-X-Bench: 1} code
	read -r code BYTES < <(curl -s -o /dev/null -w '%{http_code} %{size_download}\n' -H "$hdr" "$url")
	[[ $code == 200 ]] || die "$what: $url answered $code"
}

# same URL_A URL_B [HEADER]: nginx and the service must send the same bytes and ETag.
same() {
	local a=$1 b=$2 hdr=${3:-X-Bench: 1}
	check nginx "$a" "$hdr"
	check service "$b" "$hdr"
	cmp -s <(curl -s -H "$hdr" "$a") <(curl -s -H "$hdr" "$b") || die "nginx and the service send different bodies for ${a#http://*/}"
	local ea eb
	ea=$(curl -s -o /dev/null -D - -H "$hdr" "$a" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
	eb=$(curl -s -o /dev/null -D - -H "$hdr" "$b" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
	[[ -n $ea && $ea == "$eb" ]] || die "ETags differ for ${a#http://*/}: nginx $ea, service $eb"
}

# rss PID: the process's resident memory now, in MB.
rss() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

# generation SQL: the statement run on the catalog's database, then the generation
# each service's watch makes of the change waited for (the services TAGS names, whose
# pids are SPIDS; the one service of database name unless set).
generation() {
	local tags=("${TAGS[@]:-$name}") spids=("${SPIDS[@]:-$SERVICE_PID}") i
	for i in "${!tags[@]}"; do : >"$OUT/service-${tags[i]}.log"; done
	psql_db "$name" -c "$1" >/dev/null
	for i in "${!tags[@]}"; do
		for _ in $(seq 6001); do
			grep -q 'msg="snapshot generated" why="catalog changed"' "$OUT/service-${tags[i]}.log" && break
			kill -0 "${spids[i]}" 2>/dev/null || die "the server exited"
			sleep 0.1
		done
		grep -q 'msg="snapshot generated" why="catalog changed"' "$OUT/service-${tags[i]}.log" ||
			die "the service made no snapshot of a change within 10 minutes"
	done
}

# truncate_logs: the access logs of the services and nginx emptied, so that a run's
# lines do not pile up on disk.
truncate_logs() {
	local tag
	for tag in "${TAGS[@]:-$name}"; do : >"$OUT/service-$tag.log"; done
	[[ ! -d $OUT/nginx-$name-log-on ]] || : >"$OUT/nginx-$name-log-on/access.log"
}

# cpu_ticks PID...: the user and system clock ticks the processes spent so far.
cpu_ticks() {
	local t=0 p
	for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
	echo "$t"
}
HZ=$(getconf CLK_TCK)

# run_wrk FILE [OPTIONS] URL [SCRIPT ARGUMENTS]: a second's warm-up, then the run,
# printed with its command; sets RPS, P99 (ms) and ERRORS, and CPU: the CPU time the
# processes CPU_PIDS names spent per request, in µs, which the other work on a shared
# machine disturbs less than requests/s.
run_wrk() {
	local file=$1 c0 n
	shift
	truncate_logs
	c0=$(cpu_ticks $CPU_PIDS)
	"$WRK" -t "$THREADS" -c "$CONNS" -d 1s --timeout 30s "$@" >/dev/null 2>&1 || true
	note "wrk -t $THREADS -c $CONNS -d $DURATION --timeout 30s --latency $*"
	echo "wrk -t $THREADS -c $CONNS -d $DURATION --timeout 30s --latency $*" >"$file"
	"$WRK" -t "$THREADS" -c "$CONNS" -d "$DURATION" --timeout 30s --latency "$@" >>"$file" 2>&1 ||
		{ cat "$file" >&2; die "wrk $* failed"; }
	n=$(awk '/requests in/ {print $1}' "$file")
	CPU=$(awk -v t=$(($(cpu_ticks $CPU_PIDS) - c0)) -v hz="$HZ" -v n="$n" 'BEGIN {printf "%.0f", n ? t / hz * 1e6 / n : 0}')
	RPS=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$file")
	P99=$(awk '$1 == "99%" {v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
		m = (u == "us") ? 0.001 : (u == "ms") ? 1 : (u == "s") ? 1000 : (u == "m") ? 60000 : 1;
		printf "%.2f", v * m}' "$file")
	ERRORS=$(awk '/Non-2xx or 3xx responses:/ {e += $NF} /Socket errors:/ {gsub(/,/, ""); e += $4 + $6 + $8 + $10} END {print e + 0}' "$file")
	LOAD=$(cut -d' ' -f1 /proc/loadavg)
}

# metric_rows REGEX UNIT...: a table row for each Go benchmark of go-bench.txt whose
# line matches REGEX and reports the first UNIT: its name, then the value of each UNIT.
metric_rows() {
	local re=$1
	shift
	awk -v re="$re" -v units="$*" 'BEGIN {n = split(units, u, " ")}
		$0 ~ re {
			split("", m)
			for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
			if (!(u[1] in m)) next
			name = $1; sub(/-[0-9]+$/, "", name)
			line = "| " name
			for (j = 1; j <= n; j++) line = line " | " ((u[j] in m) ? m[u[j]] : "-")
			print line " |"
		}' "$OUT/go-bench.txt"
}

ROWS=()
MEMORY=()
# row CATALOG ROUTE BYTES NGINX_RPS NGINX_P99 NGINX_LOG_RPS NGINX_LOG_P99 SERVICE_RPS SERVICE_P99 ERRORS
# NGINX_CPU NGINX_LOG_CPU SERVICE_CPU: nginx with its access log off, then on; the service
# with its own on; CPU µs a request; and the machine's load average (1 min) at the end of
# the service's run, which says how far the other work on the machine bent the figures.
row() {
	local ratio='' ratio_log='' line
	[[ -n $4 ]] && ratio=$(awk -v s="$8" -v n="$4" 'BEGIN {printf "%.2f", s / n}')
	[[ -n $6 ]] && ratio_log=$(awk -v s="$8" -v n="$6" 'BEGIN {printf "%.2f", s / n}')
	line="| $1 | $2 | $3 | ${4:--} | ${5:--} | ${6:--} | ${7:--} | $8 | $9 | ${ratio:--} | ${ratio_log:--} | ${11:--} | ${12:--} | ${13} | ${10} | $LOAD |"
	ROWS+=("$line")
	printf '%-5s %-21s %9s B   nginx %6s req/s p99 %7s ms   nginx+log %6s req/s p99 %7s ms   service %6s req/s p99 %7s ms   ratio %4s  %4s (log)   CPU µs/req nginx %s, +log %s, service %s   errors %s   load %s\n' \
		"$1" "$2" "$3" "${4:--}" "${5:--}" "${6:--}" "${7:--}" "$8" "$9" "${ratio:--}" "${ratio_log:--}" "${11:--}" "${12:--}" "${13}" "${10}" "$LOAD"
}

# ---------------------------------------------------------------------------- the run

# compare NAME SIZE: BENCH_SERVERS's binaries on database NAME, each on a site of its
# own, the routes measured on each in turn (see the top of this file).
TAGS=() SPIDS=()
compare() {
	local name=$1 size=$2 bins=($SERVERS) addrs=() boots=() gens=() i tag
	TAGS=() SPIDS=()
	for i in "${!bins[@]}"; do
		tag=$name-$((i + 1))
		note "the $size catalog: starting ${bins[i]} as server $((i + 1)) (it publishes the site first)"
		SERVER=${bins[i]} start_service "$name" "$tag"
		TAGS+=("$tag") SPIDS+=("$SERVICE_PID") addrs+=("$SERVICE") boots+=("$(rss "$SERVICE_PID")")
		note "$size: server $((i + 1)) resident memory after boot: ${boots[i]} MB"
	done
	first_id=$(psql_db "$name" -c "SELECT min(id) FROM provider_methods WHERE enabled")
	generation "UPDATE provider_methods SET description = description || ' ', updated_at = now() WHERE id = $first_id"
	for i in "${!bins[@]}"; do gens+=("$(rss "${SPIDS[i]}")"); done
	note "$size: resident memory after one generation: ${gens[*]} MB"
	generation "UPDATE provider_methods SET description = left(description, -1), updated_at = now() WHERE id = $first_id"
	local label first slug host
	label=$(curl -s "http://${addrs[0]}$API/services?limit=1" | sed -n 's/.*"total":\([0-9]*\).*/\1/p')
	[[ $size == real ]] || label=$((label / 1000))k
	first=$(curl -s "http://${addrs[0]}$API/services?limit=1" | sed -n 's/^{"object":"list","items":\[{"slug":"\([^"]*\)".*"hostname":"\([^"]*\)".*/\1 \2/p')
	slug=${first% *} host=${first#* }
	[[ -n $slug && -n $host ]] || die "no method in the $name catalog"
	local routes=("unfiltered list|$API/services|" "unfiltered list gzip|$API/services|Accept-Encoding: gzip"
		"slug|$API/services/$slug|" "merchant|$API/merchants/$host|")
	((SEARCH == 0)) || routes+=("filtered list|$API/services?category=blockchain,finance&payable=true&limit=20|"
		"exact search|$API/services?q=$slug|" "cached search|$API/services?q=ethereum+block+height|" "novel search||")
	local route what path hdr rps0 cpu0 nonce
	for route in "${routes[@]}"; do
		IFS='|' read -r what path hdr <<<"$route"
		hdr=${hdr:-X-Bench: 1}
		nonce=$RANDOM$RANDOM
		for i in "${!bins[@]}"; do
			if [[ $what == "novel search" ]]; then
				check service "http://${addrs[i]}$API/services?q=flight+prices+$RANDOM"
				CPU_PIDS=${SPIDS[i]} run_wrk "$OUT/wrk/$label-novel-search-server$((i + 1)).txt" -s "$OUT/novel.lua" "http://${addrs[i]}" "$API/services?q=" "$nonce$i"
			else
				check service "http://${addrs[i]}$path" "$hdr"
				CPU_PIDS=${SPIDS[i]} run_wrk "$OUT/wrk/$label-${what// /-}-server$((i + 1)).txt" -H "$hdr" "http://${addrs[i]}$path"
			fi
			((i > 0)) || rps0=$RPS cpu0=$CPU
			ROWS+=("| $label | $what | $((i + 1)) $(basename -- "${bins[i]}") | $BYTES | $RPS | $P99 | $CPU | $(awk -v a="$RPS" -v b="$rps0" 'BEGIN {printf "%.2f", b ? a / b : 0}') | $(awk -v a="$CPU" -v b="$cpu0" 'BEGIN {printf "%.2f", b ? a / b : 0}') | $ERRORS | $LOAD |")
			printf '%-5s %-21s server %d %-20s %9s B   %6s req/s p99 %7s ms   CPU µs/req %s   errors %s   load %s\n' \
				"$label" "$what" $((i + 1)) "$(basename -- "${bins[i]}")" "$BYTES" "$RPS" "$P99" "$CPU" "$ERRORS" "$LOAD"
		done
	done
	for i in "${!bins[@]}"; do
		local rss hwm
		rss=$(rss "${SPIDS[i]}")
		hwm=$(awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/${SPIDS[i]}/status")
		MEMORY+=("| $label | $((i + 1)) $(basename -- "${bins[i]}") | ${boots[i]} | ${gens[i]} | $rss | $hwm |")
		note "$label: server $((i + 1)) ($(basename -- "${bins[i]}")) resident memory ${boots[i]} MB after boot, ${gens[i]} after a generation, $rss after the run, $hwm at its peak"
	done
	for i in "${!bins[@]}"; do
		[[ -z ${BENCH_AFTER:-} ]] || $BENCH_AFTER "${addrs[i]}" "${SPIDS[i]}" $((i + 1)) || note "BENCH_AFTER failed for server $((i + 1))"
	done
	cleanup
	TAGS=() SPIDS=()
	[[ $size == real ]] || for tag in "${!bins[@]}"; do rm -rf -- "$OUT/site-$name-$((tag + 1))"; done
}

STARTED=$(date -u +%FT%TZ)
LOAD_STARTED=$(cut -d' ' -f1-3 /proc/loadavg)
for size in $SIZES; do
	if [[ -n $SERVERS ]]; then
		name=waystation_bench
		[[ $size == real ]] || name=waystation_bench_$((size / 1000))k
		load_db "$name" "$size"
		compare "$name" "$size"
		continue
	fi
	name=waystation_bench
	[[ $size == real ]] || name=waystation_bench_$((size / 1000))k
	load_db "$name" "$size"
	note "the $size catalog: starting the service (it publishes the site first) and nginx"
	start_service "$name"
	boot_rss=$(rss "$SERVICE_PID")
	note "$size: service resident memory after boot (its snapshot built and published): $boot_rss MB (awk '/^VmRSS:/' /proc/$SERVICE_PID/status)"
	# One generation, as after a catalog change: a method's description, then back.
	first_id=$(psql_db "$name" -c "SELECT min(id) FROM provider_methods WHERE enabled")
	generation "UPDATE provider_methods SET description = description || ' ', updated_at = now() WHERE id = $first_id"
	gen_rss=$(rss "$SERVICE_PID")
	note "$size: service resident memory after one generation (a method changed): $gen_rss MB"
	generation "UPDATE provider_methods SET description = left(description, -1), updated_at = now() WHERE id = $first_id"
	start_nginx "$name" on
	EDGE_LOG=$EDGE NGINX_LOG_PIDS="$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"
	start_nginx "$name" off
	NGINX_PIDS="$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"
	label=$(curl -s "http://$SERVICE$API/services?limit=1" | sed -n 's/.*"total":\([0-9]*\).*/\1/p')
	[[ $size == real ]] || label=$((label / 1000))k
	first=$(curl -s "http://$SERVICE$API/services?limit=1" | sed -n 's/^{"object":"list","items":\[{"slug":"\([^"]*\)".*"hostname":"\([^"]*\)".*/\1 \2/p')
	slug=${first% *}
	host=${first#* }
	[[ -n $slug && -n $host ]] || die "no method in the $name catalog"

	for route in "unfiltered list|$API/services|" "unfiltered list gzip|$API/services|Accept-Encoding: gzip" \
		"slug|$API/services/$slug|" "merchant|$API/merchants/$host|"; do
		IFS='|' read -r what path hdr <<<"$route"
		hdr=${hdr:-X-Bench: 1}
		same "http://$EDGE$path" "http://$SERVICE$path" "$hdr"
		bytes=$BYTES
		tag=$label-${what// /-}
		same "http://$EDGE_LOG$path" "http://$SERVICE$path" "$hdr"
		CPU_PIDS=$NGINX_PIDS run_wrk "$OUT/wrk/$tag-nginx.txt" -H "$hdr" "http://$EDGE$path"
		nr=$RPS np=$P99 ne=$ERRORS nc=$CPU
		CPU_PIDS=$NGINX_LOG_PIDS run_wrk "$OUT/wrk/$tag-nginx-log.txt" -H "$hdr" "http://$EDGE_LOG$path"
		lr=$RPS lp=$P99 le=$ERRORS lc=$CPU
		CPU_PIDS=$SERVICE_PID run_wrk "$OUT/wrk/$tag-service.txt" -H "$hdr" "http://$SERVICE$path"
		row "$label" "$what" "$bytes" "$nr" "$np" "$lr" "$lp" "$RPS" "$P99" "$((ne + le + ERRORS))" "$nc" "$lc" "$CPU"
	done
	if [[ $SEARCH == 0 ]]; then
		MEMORY+=("| $label | $boot_rss | $gen_rss | $(rss "$SERVICE_PID") | $(awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$SERVICE_PID/status") |")
		cleanup
		[[ $size == real ]] || rm -rf -- "$OUT/site-$name"
		continue
	fi

	filtered="$API/services?category=blockchain,finance&payable=true&limit=20"
	exact="$API/services?q=$slug"
	cached="$API/services?q=ethereum+block+height"
	grep -q '"match":"slug"' <<<"$(curl -s "http://$SERVICE$exact")" || die "q=$slug did not resolve exactly"
	! grep -q '"match":"\(slug\|method\|provider\)"' <<<"$(curl -s "http://$SERVICE$cached")" ||
		die "the cached query resolves exactly"
	for route in "filtered list|$filtered" "exact search|$exact" "cached search|$cached"; do
		IFS='|' read -r what path <<<"$route"
		check service "http://$SERVICE$path"
		bytes=$BYTES
		CPU_PIDS=$SERVICE_PID run_wrk "$OUT/wrk/$label-${what// /-}-service.txt" "http://$SERVICE$path"
		row "$label" "$what" "$bytes" "" "" "" "" "$RPS" "$P99" "$ERRORS" "" "" "$CPU"
	done
	check service "http://$SERVICE$API/services?q=flight+prices+$RANDOM"
	CPU_PIDS=$SERVICE_PID run_wrk "$OUT/wrk/$label-novel-search-service.txt" -s "$OUT/novel.lua" "http://$SERVICE" "$API/services?q=" "$RANDOM$RANDOM"
	row "$label" "novel search" "$BYTES" "" "" "" "" "$RPS" "$P99" "$ERRORS" "" "" "$CPU"

	rss=$(rss "$SERVICE_PID")
	hwm=$(awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$SERVICE_PID/status")
	MEMORY+=("| $label | $boot_rss | $gen_rss | $rss | $hwm |")
	note "$label: service resident memory ${rss} MB now, ${hwm} MB at its peak (building and publishing the snapshot)"
	cleanup
	# The published site of a large catalog takes gigabytes: it is not kept.
	[[ $size == real ]] || rm -rf -- "$OUT/site-$name"
done

# ---------------------------------------------------------------------------- results

{
	echo "# make bench: results"
	echo
	echo "One run, $STARTED, on $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)), shared with"
	echo "everything else on the machine: read the ratios, which come from runs back to back, more"
	echo "than the absolute figures. $("$WRK" -v 2>&1 | head -n 1 | cut -d' ' -f1-2), $THREADS threads, $CONNS connections, $DURATION a run"
	echo "over loopback; $("$NGINX" -v 2>&1 | sed 's/^nginx version: //') with the generator's nginx example, a worker per core,"
	echo "its access log off, then on (buffer=64k flush=1s); the service is the server binary"
	echo "($("${GO:-go}" env GOVERSION)) on the same snapshot, its access log on (LOG_LEVEL=INFO), as in production."
	echo "Each wrk command is the first line of its raw output. Load average (1, 5, 15 min): $LOAD_STARTED"
	echo "at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; each row's is the 1-minute one after its service run."
	echo
	if [[ -n $SERVERS ]]; then
		echo "## Load (wrk), the servers compared (BENCH_SERVERS), each route on each in turn"
		echo
		echo "| catalog | route | server | body bytes | req/s | p99 ms | CPU µs/req | req/s over server 1's | CPU over server 1's | errors | load |"
		echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
		printf '%s\n' "${ROWS[@]}"
		echo
		echo "## Resident memory of the servers (MB)"
		echo
		echo "As below; SERVE_MEMLIMIT ${SERVE_MEMLIMIT:-none}, SERVE_GOGC ${SERVE_GOGC:-auto}, SNAPSHOT_MEMLIMIT ${SNAPSHOT_MEMLIMIT:-none}."
		echo
		echo "| catalog | server | VmRSS after boot | VmRSS after a generation | VmRSS after the run | VmHWM |"
		echo "|---|---|---:|---:|---:|---:|"
		printf '%s\n' "${MEMORY[@]}"
		echo
		echo "Raw outputs: wrk/*.txt beside this file."
	fi
	[[ -z $SERVERS ]] || exit 0
	echo "## Load (wrk)"
	echo
	echo "| catalog | route | body bytes | nginx req/s | nginx p99 ms | nginx+log req/s | nginx+log p99 ms | service req/s | service p99 ms | service/nginx | service/nginx+log | nginx CPU µs/req | nginx+log CPU µs/req | service CPU µs/req | errors | load |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${ROWS[@]}"
	echo
	echo "## Resident memory of the service (MB)"
	echo
	echo "VmRSS of the server (/proc/PID/status) once it listens, its first snapshot built and published;"
	echo "after one generation, as after a catalog change (one method's description, through the watch);"
	echo "and after the load run; VmHWM, its peak, the builds included. Its soft memory limit between"
	echo "generations (SERVE_MEMLIMIT): ${SERVE_MEMLIMIT:-none}, its collector's pacing (SERVE_GOGC): ${SERVE_GOGC:-auto}; while it"
	echo "builds a whole snapshot (SNAPSHOT_MEMLIMIT): ${SNAPSHOT_MEMLIMIT:-none}."
	echo
	echo "| catalog | VmRSS after boot | VmRSS after a generation | VmRSS after the run | VmHWM (peak, snapshot builds and publications included) |"
	echo "|---|---:|---:|---:|---:|"
	printf '%s\n' "${MEMORY[@]}"
	if [[ -s $OUT/go-bench.txt ]]; then
		echo
		echo "## Go benchmarks of the routes (allocations per request)"
		echo
		echo "| benchmark | ns/op | B/op | allocs/op |"
		echo "|---|---:|---:|---:|"
		awk '/^Benchmark(RealCatalog|Catalog100k)\// {name = $1; sub(/-[0-9]+$/, "", name); gsub(/_/, " ", name);
			printf "| %s | %s | %s | %s |\n", name, $3, $5, $7}' "$OUT/go-bench.txt"
		echo
		echo "## Publishing the snapshot at 100k methods (Go benchmark)"
		echo
		echo "BenchmarkPublish100k (generator/scale_bench_test.go): the real catalog grown to 100,000 methods,"
		echo "a full build and publication with its peak resident memory (VmHWM, reset just before), then a"
		echo "change to 1% of the methods published as after a catalog change: first into a fresh directory"
		echo "(linking what it can), then into the spare, as every later one; then what a server holds between"
		echo "generations, in its heap and resident (VmRSS, after the build's garbage went back). Printed by"
		echo "\`SNAPSHOT_MEMLIMIT=400MiB WAYSTATION_BENCH_100K=1 go test -run '^\$' -bench Publish100k -benchtime 1x ./generator\`."
		echo
		echo "Seconds are wall time, then the CPU time of the process (user and system), the stable figure on"
		echo "a loaded machine. make bench runs its full build under the soft memory limit a server of that"
		echo "size is given (SNAPSHOT_MEMLIMIT=400MiB, which a server applies to full generations only), and"
		echo "the changes without it; each change's peak is its own (VmHWM reset before it), beside the largest"
		echo "heap a collection found live during it (live MB), which the collector's pacing does not move. The"
		echo "files a change replaced in the spare are removed after it returns (removed s), before the next begins."
		echo
		echo "| benchmark | full s | CPU s | full peak MB | limit MB | files | 1% fresh s | CPU s | written | 1% spare s | CPU s | written | peak MB | live MB | removed s | held heap MB | held resident MB |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		metric_rows '^BenchmarkPublish100k' full-s full-cpu-s full-peak-MB memlimit-MB files 1%-fresh-s 1%-fresh-cpu-s 1%-fresh-written \
			1%-spare-s 1%-spare-cpu-s 1%-spare-written 1%-spare-peak-MB 1%-spare-live-MB 1%-spare-removed-s held-MB held-RSS-MB
		echo
		echo "## Search at the Bazaar's scale (Go benchmarks, in process, one query at a time)"
		echo
		echo "The development set through the engine and its calibrated band, on the real catalog and grown"
		echo "(15k: every distractor embedded; Twins: near-twin vectors): recall@3 of its labelled methods,"
		echo "the false-match rate, and recall@3 of the nearest three whatever the band says."
		echo
		echo "| benchmark | recall@3 | paraphrase | task | keyword | false-match rate | nearest three | near-twins counted |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|"
		metric_rows '^BenchmarkSearch[^ ]*/dev-set' recall@3 paraphrase-recall@3 task-recall@3 keyword-recall@3 \
			false-match-rate nearest3-recall@3 twin-recall@3
		echo
		echo "| benchmark | p50 µs | p99 µs | embeddings/op | embedding p50 µs |"
		echo "|---|---:|---:|---:|---:|"
		metric_rows '^BenchmarkSearch[^ ]*/(exact|cached|novel)' p50-µs p99-µs embeddings/op embed-p50-µs
		echo
		echo "Embedding new methods under the builtin model (1,500, extrapolated to 15,000):"
		echo
		echo "| benchmark | ms/method | model ms/method | CPU ms/method | s for 15k | heap growth MB | RSS growth MB |"
		echo "|---|---:|---:|---:|---:|---:|---:|"
		metric_rows '^BenchmarkEmbed' ms/method model-ms/method cpu-ms/method s/15k-methods heap-growth-MB rss-growth-MB
	fi
	echo
	echo "Raw outputs: wrk/*.txt beside this file."
} >"$OUT/results.md"
note "results in ${OUT#"$ROOT"/}/results.md"
