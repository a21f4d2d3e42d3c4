#!/usr/bin/env bash
# Waystation's local PostgreSQL (with pgvector), installed and started on demand.
#
#   .ci/db.sh              install what is missing, start the private cluster, create the
#                          databases waystation and waystation_test with the vector
#                          extension; print the URL of database waystation on stdout
#   .ci/db.sh url [db]     print the URL of database db (default waystation); no side effects
#   .ci/db.sh stop         stop the private cluster if it runs
#
# With DATABASE_URL set, the default action only checks that it answers.
#
# The cluster lives in var/pg of the repository (data/, run/ for the unix socket, log) and
# listens on the unix socket only: no TCP port is taken. Its socket file is named after
# port 5432, or WAYSTATION_PGPORT. Everything but the URL goes to stderr;
# WAYSTATION_DB_VERBOSE=1 shows the output of apt-get, initdb and the pgvector build as
# they run instead of only when they fail.
#
# Debian (bookworm or later) is assumed for installing: the server comes from the
# "postgresql" package; pgvector from postgresql-N-pgvector when the configured archives
# have it, otherwise it is built from Debian's own pgvector source package (trixie).
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
PORT=${WAYSTATION_PGPORT:-5432}
DATABASES=(waystation waystation_test)
PGVECTOR_SRC_LIST=/etc/apt/sources.list.d/waystation-pgvector-src.sources
PGVECTOR_SRC_SUITE=trixie

note() { printf 'db.sh: %s\n' "$*" >&2; }
die() { printf 'db.sh: error: %s\n' "$*" >&2; exit 1; }

[[ $PORT =~ ^[0-9]+$ ]] && ((PORT >= 1 && PORT <= 65535)) ||
	die "WAYSTATION_PGPORT must be a port number, not '$PORT'"

IS_ROOT=0
((EUID == 0)) && IS_ROOT=1

# ---------------------------------------------------------------------------- helpers

# Temporary files and directories removed on exit.
CLEANUP=()
cleanup() { ((${#CLEANUP[@]} == 0)) || rm -rf -- "${CLEANUP[@]}"; }
trap cleanup EXIT

# run_quiet DESCRIPTION COMMAND...: run a noisy command, showing its output only if it fails.
# Our lock (fd 9) is not passed on: a daemon that apt-get might start must not keep it.
run_quiet() {
	local desc=$1 log rc
	shift
	note "$desc"
	if [[ ${WAYSTATION_DB_VERBOSE:-} == 1 ]]; then
		"$@" </dev/null >&2 9<&- || die "$desc failed (exit $?)"
		return
	fi
	log=$(mktemp "${TMPDIR:-/tmp}/waystation-db.XXXXXX")
	if "$@" </dev/null >"$log" 2>&1 9<&-; then
		rm -f -- "$log"
	else
		rc=$?
		tail -n 40 -- "$log" >&2
		die "$desc failed (exit $rc); its whole output is in $log"
	fi
}

# need_root WHAT: fail clearly unless we are root or have password-less sudo.
need_root() {
	((IS_ROOT)) && return 0
	command -v sudo >/dev/null && sudo -n true 2>/dev/null && return 0
	die "root is needed for $1: run this script as root (or with password-less sudo),
  or install the packages yourself: postgresql postgresql-contrib postgresql-<N>-pgvector"
}

# as_root COMMAND...: run a command as root, through sudo when needed (see need_root).
as_root() {
	if ((IS_ROOT)); then "$@"; else sudo -n "$@"; fi
}

APT_UPDATED=0
apt_get() {
	as_root env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get -q \
		-o DPkg::Lock::Timeout=600 -o Dpkg::Use-Pty=0 "$@"
}
apt_update() {
	need_root "apt-get update"
	run_quiet "apt-get update" apt_get update
	APT_UPDATED=1
}
apt_install() {
	((APT_UPDATED)) || apt_update
	need_root "apt-get install $*"
	run_quiet "apt-get install $*" apt_get install -y --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
}

# The highest PostgreSQL major version whose server binaries are installed, or nothing.
highest_major() {
	local d n best=''
	for d in /usr/lib/postgresql/*/; do
		n=${d%/}
		n=${n##*/}
		[[ $n =~ ^[0-9]+$ ]] || continue
		[[ -x $d/bin/postgres && -x $d/bin/initdb && -x $d/bin/pg_ctl && -x $d/bin/psql ]] || continue
		if [[ -z $best ]] || ((n > best)); then best=$n; fi
	done
	echo "$best"
}

has_pgvector() { # N
	[[ -f /usr/share/postgresql/$1/extension/vector.control && -f /usr/lib/postgresql/$1/lib/vector.so ]]
}

find_tool() { # NAME: its path, also looked for in the sbin directories
	local c
	for c in "$(command -v "$1" 2>/dev/null)" "/usr/bin/$1" "/usr/sbin/$1" "/sbin/$1"; do
		[[ -n $c && -x $c ]] && { echo "$c"; return; }
	done
}
# setpriv switches user in a few milliseconds; runuser goes through PAM, slower.
SETPRIV=$(find_tool setpriv)
RUNUSER=''
[[ -n $SETPRIV ]] || RUNUSER=$(find_tool runuser)
ME=$(id -un)

# check_user USER: fail clearly unless as_user USER can work.
check_user() {
	[[ $1 == "$ME" ]] && return 0
	((IS_ROOT)) || die "the cluster in $DATA_DIR belongs to '$1': run this script as '$1' or as root"
	getent passwd "$1" >/dev/null ||
		die "user '$1' does not exist (the postgresql packages create 'postgres'); PostgreSQL cannot run as root"
	[[ -n $SETPRIV || -n $RUNUSER ]] || die "setpriv or runuser (util-linux) is needed to run PostgreSQL as '$1'"
}

# SWITCH: the command prefix that runs a command as user SWITCH_USER (for root).
SWITCH_USER=''
SWITCH=()
set_switch() { # USER
	[[ $SWITCH_USER == "$1" ]] && return 0
	local uid gid home
	IFS=: read -r _ _ uid gid _ home _ <<<"$(getent passwd "$1")"
	if [[ -n $SETPRIV ]]; then
		SWITCH=("$SETPRIV" --reuid="$uid" --regid="$gid" --init-groups env HOME="$home" USER="$1" LOGNAME="$1")
	else
		SWITCH=("$RUNUSER" -u "$1" --)
	fi
	SWITCH_USER=$1
}

# as_user USER COMMAND...: run a command as USER (the cluster's owner, see check_user) from
# /, with only stdin, stdout and stderr open: a server started from here must not hold our
# lock or a caller's pipe.
as_user() {
	local user=$1
	shift
	[[ $user == "$ME" ]] || set_switch "$user"
	(
		cd /
		local fd
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			if ((fd > 2 && fd < 255)); then eval "exec $fd>&-"; fi
		done
		if [[ $user == "$ME" ]]; then
			exec "$@"
		else
			exec "${SWITCH[@]}" "$@"
		fi
	)
}

# Percent-encode a value for a URL query parameter or path segment.
urlencode() {
	local s=$1 out='' c i
	local LC_ALL=C
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9/._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

# ---------------------------------------------------------------------------- locations

# Sets PGBASE (var/pg, or a /tmp fallback), DATA_DIR, RUN_DIR, LOG_FILE and OWNER (the OS
# user the cluster runs as). Has no side effects.
choose_paths() {
	local repo_base=$ROOT/var/pg fallback=/tmp/waystation-pg-$EUID why=''
	if [[ -d $repo_base/data ]]; then
		PGBASE=$repo_base
	else
		PGBASE=$repo_base
		local user
		user=$(default_owner)
		if ((IS_ROOT)) && [[ -n $SETPRIV$RUNUSER ]] && getent passwd "$user" >/dev/null; then
			local d=$ROOT
			[[ -d $ROOT/var ]] && d=$ROOT/var
			as_user "$user" test -x "$d" 2>/dev/null ||
				why="user $user cannot reach $d (a parent directory is not searchable)"
		elif ! ((IS_ROOT)); then
			local d=$ROOT
			[[ -d $ROOT/var ]] && d=$ROOT/var
			[[ -w $d ]] || why="$d is not writable"
		fi
		# A unix socket's path has at most 107 bytes.
		if [[ -z $why ]] && ((${#repo_base} + 16 + ${#PORT} > 107)); then
			why="the socket path under $repo_base would be too long for a unix socket"
		fi
		if [[ -n $why ]]; then
			PGBASE=$fallback
			FALLBACK_WHY=$why
		fi
	fi
	DATA_DIR=$PGBASE/data
	RUN_DIR=$PGBASE/run
	LOG_FILE=$PGBASE/log
	if [[ -d $DATA_DIR ]]; then
		OWNER=$(stat -c %U -- "$DATA_DIR")
	else
		OWNER=$(default_owner)
	fi
}
FALLBACK_WHY=''

default_owner() {
	if ((IS_ROOT)); then echo postgres; else echo "$ME"; fi
}

url_for() { # DBNAME
	printf 'postgres://postgres@/%s?host=%s&port=%s&sslmode=disable\n' \
		"$(urlencode "$1")" "$(urlencode "$RUN_DIR")" "$PORT"
}

# ---------------------------------------------------------------------------- commands

cmd_url() {
	(($# <= 1)) || die "usage: $0 url [dbname]"
	choose_paths
	url_for "${1:-waystation}"
}

cmd_stop() {
	choose_paths
	[[ -d $DATA_DIR ]] || return 0
	check_user "$OWNER"
	[[ -s $DATA_DIR/PG_VERSION ]] || return 0
	local n
	n=$(<"$DATA_DIR/PG_VERSION")
	local pg_ctl=/usr/lib/postgresql/$n/bin/pg_ctl
	[[ -x $pg_ctl ]] || die "$pg_ctl is missing: cannot stop the cluster in $DATA_DIR"
	if as_user "$OWNER" "$pg_ctl" -D "$DATA_DIR" status >/dev/null 2>&1; then
		as_user "$OWNER" "$pg_ctl" -D "$DATA_DIR" -m fast -w stop >/dev/null ||
			die "pg_ctl stop failed; see $LOG_FILE"
		note "stopped PostgreSQL ($DATA_DIR)"
	fi
}

check_database_url() {
	local psql
	psql=$(command -v psql 2>/dev/null || true)
	if [[ -z $psql ]]; then
		local n
		n=$(highest_major)
		[[ -n $n ]] && psql=/usr/lib/postgresql/$n/bin/psql
	fi
	if [[ -z $psql ]]; then
		note "warning: psql is not installed, DATABASE_URL was not checked"
		return 0
	fi
	local out
	if ! out=$(PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-10} "$psql" "$DATABASE_URL" -X -q -A -t -c 'select 1' 2>&1 </dev/null); then
		printf '%s\n' "$out" >&2
		die "DATABASE_URL is set but does not answer (unset it to use the local cluster)"
	fi
}

ensure_server() {
	PG_MAJOR=$(highest_major)
	if [[ -z $PG_MAJOR ]]; then
		apt_install postgresql postgresql-contrib
		PG_MAJOR=$(highest_major)
		[[ -n $PG_MAJOR ]] ||
			die "postgresql was installed but no server is under /usr/lib/postgresql/<N>/bin"
	fi
}

ensure_pgvector() {
	local n=$PG_MAJOR
	has_pgvector "$n" && return 0
	((APT_UPDATED)) || apt_update
	local candidate
	candidate=$(LC_ALL=C apt-cache policy "postgresql-$n-pgvector" 2>/dev/null | awk '/Candidate:/ {print $2}' || true)
	if [[ -n $candidate && $candidate != "(none)" ]]; then
		apt_install "postgresql-$n-pgvector"
	else
		build_pgvector "$n"
	fi
	has_pgvector "$n" ||
		die "pgvector was installed but /usr/share/postgresql/$n/extension/vector.control or /usr/lib/postgresql/$n/lib/vector.so is missing"
}

# Builds pgvector for PostgreSQL N from Debian's source package.
build_pgvector() {
	local n=$1
	note "no postgresql-$n-pgvector package available: building pgvector from Debian's $PGVECTOR_SRC_SUITE source package"
	local want
	want="Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $PGVECTOR_SRC_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
	need_root "installing pgvector"
	if [[ ! -f $PGVECTOR_SRC_LIST || $(<"$PGVECTOR_SRC_LIST") != "$want" ]]; then
		[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] ||
			die "/usr/share/keyrings/debian-archive-keyring.gpg is missing (apt-get install debian-archive-keyring)"
		note "adding $PGVECTOR_SRC_LIST (deb-src $PGVECTOR_SRC_SUITE)"
		printf '%s\n' "$want" | as_root tee "$PGVECTOR_SRC_LIST" >/dev/null
		apt_update
	elif [[ -z $(LC_ALL=C apt-cache showsrc pgvector 2>/dev/null | head -n1) ]]; then
		apt_update
	fi
	apt_install build-essential dpkg-dev "postgresql-server-dev-$n"

	local tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/waystation-pgvector.XXXXXX")
	CLEANUP+=("$tmp")
	# As root apt downloads as _apt, which needs to write there.
	if ((IS_ROOT)) && id -u _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
	run_quiet "apt-get source pgvector/$PGVECTOR_SRC_SUITE" \
		bash -c 'cd "$1" && LC_ALL=C apt-get -q source "pgvector/$2"' _ "$tmp" "$PGVECTOR_SRC_SUITE"
	local src
	src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' -print -quit)
	[[ -n $src && -f $src/Makefile ]] || die "apt-get source pgvector gave no source tree in $tmp"
	# OPTFLAGS= drops -march=native: the build must run on any x86-64 (or other) machine.
	local make_args=(-C "$src" PG_CONFIG="/usr/lib/postgresql/$n/bin/pg_config" OPTFLAGS=)
	run_quiet "building pgvector ${src##*/pgvector-} for PostgreSQL $n" \
		make -j"$(nproc 2>/dev/null || echo 2)" "${make_args[@]}"
	run_quiet "installing pgvector" as_root make "${make_args[@]}" install
}

ensure_dirs() {
	if [[ $PGBASE == "$ROOT/var/pg" && ! -d $ROOT/var ]]; then
		mkdir -m 0755 -- "$ROOT/var" || die "cannot create $ROOT/var"
	fi
	local mode d
	for d in "$PGBASE:0755" "$RUN_DIR:0755" "$DATA_DIR:0700"; do
		mode=${d##*:}
		d=${d%:*}
		if [[ ! -d $d ]]; then
			mkdir -m "$mode" -- "$d" || die "cannot create $d"
			if ((IS_ROOT)); then chown "$OWNER:" -- "$d"; fi
		fi
		[[ $(stat -c %U -- "$d") == "$OWNER" ]] ||
			die "$d belongs to $(stat -c %U -- "$d"), not $OWNER; remove it (or run as its owner)"
	done
}

# The settings the cluster runs with, kept in DATA_DIR/waystation.conf (included from
# postgresql.conf). Sets CONF_CHANGED to 1 when they changed.
CONF_CHANGED=0
write_conf() {
	local q=\' conf
	conf="# Written by .ci/db.sh, which rewrites it when its settings change: edit the script instead.
listen_addresses = ''
port = $PORT
unix_socket_directories = '${RUN_DIR//$q/$q$q}'
unix_socket_permissions = 0777
max_connections = 200
shared_buffers = 128MB
fsync = on"
	local file=$DATA_DIR/waystation.conf
	local include="include_if_exists = 'waystation.conf'"
	if [[ $'\n'$(<"$DATA_DIR/postgresql.conf")$'\n' != *$'\n'"$include"$'\n'* ]]; then
		printf '\n%s\n' "$include" |
			as_user "$OWNER" tee -a "$DATA_DIR/postgresql.conf" >/dev/null
	fi
	if [[ ! -f $file || $(<"$file") != "$conf" ]]; then
		printf '%s\n' "$conf" | as_user "$OWNER" tee "$file" >/dev/null
		CONF_CHANGED=1
	fi
}

ensure_cluster() {
	local bin=/usr/lib/postgresql/$PG_MAJOR/bin
	local psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$RUN_DIR" -p "$PORT" -U postgres)
	if [[ $OWNER != "$ME" ]] && ! ((IS_ROOT)); then
		# Someone else's cluster (root made it for postgres, say): use it if it runs.
		"${psql[@]}" -d postgres -c 'select 1' </dev/null >/dev/null 2>&1 ||
			die "the cluster in $DATA_DIR belongs to '$OWNER' and does not answer: run this script as '$OWNER' or as root"
	else
		start_cluster "$bin"
	fi
	ensure_databases "${psql[@]}"
}

start_cluster() { # BIN
	local bin=$1
	check_user "$OWNER"
	ensure_dirs
	if [[ ! -s $DATA_DIR/PG_VERSION ]]; then
		[[ -z $FALLBACK_WHY ]] || note "using $PGBASE instead of $ROOT/var/pg: $FALLBACK_WHY"
		[[ -z $(ls -A -- "$DATA_DIR") ]] ||
			die "$DATA_DIR is not empty but holds no cluster; remove it"
		local locale=C
		if locale -a 2>/dev/null | grep -iE '^c\.utf-?8$' >/dev/null; then locale=C.UTF-8; fi
		run_quiet "initdb $DATA_DIR (PostgreSQL $PG_MAJOR)" as_user "$OWNER" "$bin/initdb" \
			-D "$DATA_DIR" -A trust --username=postgres -E UTF8 --locale="$locale"
	fi

	local running=0
	write_conf
	if as_user "$OWNER" "$bin/pg_ctl" -D "$DATA_DIR" status >/dev/null 2>&1; then
		running=1
	fi
	if ((running && CONF_CHANGED)); then
		note "settings changed (socket $RUN_DIR, port $PORT): restarting PostgreSQL"
		as_user "$OWNER" "$bin/pg_ctl" -D "$DATA_DIR" -m fast -w stop >/dev/null ||
			die "pg_ctl stop failed; see $LOG_FILE"
		running=0
	fi
	if ((!running)); then
		note "starting PostgreSQL $PG_MAJOR (data $DATA_DIR, log $LOG_FILE)"
		# A socket lock file left by a crash or reboot names a pid that may be reused.
		as_user "$OWNER" find "$RUN_DIR" -mindepth 1 -maxdepth 1 -name '.s.PGSQL.*' -delete
		if ! as_user "$OWNER" "$bin/pg_ctl" -D "$DATA_DIR" -l "$LOG_FILE" -w -t 60 start >/dev/null 2>&1; then
			tail -n 20 -- "$LOG_FILE" >&2 || true
			die "PostgreSQL did not start; see $LOG_FILE"
		fi
	fi
}

ensure_databases() { # PSQL COMMAND...
	local psql=("$@")
	local list missing db
	list=$(printf "'%s'," "${DATABASES[@]}")
	missing=$("${psql[@]}" -d postgres -A -t -c \
		"select d from unnest(array[${list%,}]) d where not exists (select 1 from pg_database where datname = d)" </dev/null) ||
		die "cannot query the cluster over $RUN_DIR; see $LOG_FILE"
	for db in $missing; do
		"${psql[@]}" -d postgres -c "CREATE DATABASE \"$db\"" </dev/null || die "cannot create database $db"
		note "created database $db"
	done
	local script='SET client_min_messages = warning;'
	for db in "${DATABASES[@]}"; do
		script+="
\\connect $db
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector;"
	done
	"${psql[@]}" -d postgres <<<"$script" ||
		die "CREATE EXTENSION vector failed: pgvector does not work with PostgreSQL $PG_MAJOR"
}

cmd_start() {
	(($# == 0)) || die "usage: $0 [url [dbname] | stop]"
	if [[ -n ${DATABASE_URL:-} ]]; then
		check_database_url
		return
	fi
	# One run at a time per checkout (the lock is on this script's file).
	exec 9<"${BASH_SOURCE[0]}"
	if command -v flock >/dev/null; then
		flock -w 900 9 || die "another .ci/db.sh is still running"
	fi
	ensure_server
	choose_paths
	if [[ -r $DATA_DIR/PG_VERSION ]]; then
		local v
		v=$(<"$DATA_DIR/PG_VERSION")
		if [[ $v != "$PG_MAJOR" ]]; then
			[[ -x /usr/lib/postgresql/$v/bin/postgres ]] ||
				die "$DATA_DIR was made by PostgreSQL $v, which is not installed (found $PG_MAJOR): remove $PGBASE or install postgresql-$v"
			PG_MAJOR=$v
		fi
	fi
	ensure_pgvector
	ensure_cluster
	url_for waystation
}

case ${1:-} in
url) shift; cmd_url "$@" ;;
stop) shift; (($# == 0)) || die "usage: $0 stop"; cmd_stop ;;
start | '') [[ -z ${1:-} ]] || shift; cmd_start "$@" ;;
*) die "usage: $0 [url [dbname] | stop]" ;;
esac
