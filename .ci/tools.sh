#!/usr/bin/env bash
# Installs the programs the browser and edge tests drive, when they are missing:
# chromium (headless, for the human pages), nginx (serving the generated site, with
# its brotli static module) and jq (which the walk pipes answers through).
#
#   .ci/tools.sh            install what is missing; quick when everything is present
#   .ci/tools.sh wrk nginx  the same for the programs named (each from its package of
#                           that name): make bench's load run asks for these two
#
# Debian or Ubuntu with root (or password-less sudo) is assumed. Without either, the
# script says what to install and exits 0: the tests then skip, except under CI=true,
# where they fail.
set -euo pipefail

note() { printf 'tools.sh: %s\n' "$*" >&2; }

wanted=("$@")
((${#wanted[@]} > 0)) || wanted=(chromium nginx jq)
missing=()
for p in "${wanted[@]}"; do
	command -v "$p" >/dev/null 2>&1 || [[ -x /usr/bin/$p || -x /usr/sbin/$p ]] || missing+=("$p")
done
# nginx serves the site's .br files through Debian's brotli static module.
BROTLI_MODULE=/usr/lib/nginx/modules/ngx_http_brotli_static_module.so
if [[ " ${wanted[*]} " == *" nginx "* && ! -e $BROTLI_MODULE ]]; then
	missing+=(libnginx-mod-http-brotli-static)
fi
((${#missing[@]} == 0)) && exit 0

as_root() {
	if ((EUID == 0)); then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"; else return 1; fi
}
if ! as_root true 2>/dev/null || ! command -v apt-get >/dev/null; then
	note "please install: ${missing[*]} (the browser and edge tests skip without them)"
	exit 0
fi

apt() {
	as_root env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get -q \
		-o DPkg::Lock::Timeout=600 -o Dpkg::Use-Pty=0 "$@"
}
log=$(mktemp "${TMPDIR:-/tmp}/waystation-tools.XXXXXX")
trap 'rm -f -- "$log"' EXIT
note "installing ${missing[*]}"
# The service nginx's package would start is not wanted: the edge test runs its own.
if ! { apt update && apt install -y --no-install-recommends \
	-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"; } </dev/null >"$log" 2>&1; then
	tail -n 40 -- "$log" >&2
	note "apt-get install ${missing[*]} failed"
	exit 1
fi
