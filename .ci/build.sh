#!/usr/bin/env bash
# .ci/build.sh OUT PACKAGE: go build -o OUT PACKAGE, saying what happens while it
# runs. A first build compiles every package the program needs (go-ethereum and
# solana-go among them), which takes minutes, about nine on a busy two-core machine,
# and go build prints nothing meanwhile; so this says so once it has run ten seconds,
# and every 20 seconds how far it is. A build with little to compile says nothing.
set -euo pipefail
out=$1 pkg=$2
GO=${GO:-go}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# go build -v names each package as it compiles it: what was cached is not named.
"$GO" build -v -o "$out" "$pkg" 2>"$tmp/log" &
build=$!
"$GO" list -deps "$pkg" >"$tmp/deps" 2>/dev/null || true
total=$(wc -l <"$tmp/deps")

say() { printf 'build %s: %s\n' "$pkg" "$*" >&2; }
first=0
[[ -e $out ]] || first=1
t=0 told=0
while kill -0 "$build" 2>/dev/null; do
	sleep 1
	t=$((t + 1))
	if ((t == 10 && first)); then
		say "a first build compiles the $total packages it needs: a few minutes, up to ten on a busy two-core machine; later builds take seconds"
		told=1
	elif ((t == 20 && !told)); then
		say "much has changed since the last build: compiling it again may take minutes"
		told=1
	fi
	if ((t % 20 == 0)); then
		say "$(grep -cxF -f "$tmp/deps" "$tmp/log" || true) of at most $total packages compiled, ${t}s"
	fi
done
if ! wait "$build"; then
	# What is not a package's name is the compiler's word.
	grep -vxF -f "$tmp/deps" "$tmp/log" >&2 || true
	exit 1
fi
((!told)) || say "done in ${t}s"
