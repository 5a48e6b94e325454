#!/usr/bin/env bash
# A real, throwaway PostgreSQL 16 server with pgvector, for tests and benchmarks.
#
#   scripts/pg.sh start DATA_DIR            initdb + start; prints one line on stdout: the URL
#                                           postgres://rag:PASSWORD@127.0.0.1:PORT/rag
#   scripts/pg.sh stop DATA_DIR             fast shutdown, then deletes DATA_DIR (safe to repeat)
#   scripts/pg.sh url DATA_DIR [--direct]   prints the URL of the running server again
#   scripts/pg.sh psql DATA_DIR [ARGS...]   runs the bundled psql against it (as role rag)
#
# The binaries come from the PyPI wheel pgserver 0.1.4 (PostgreSQL 16.2 with pgvector 0.6.2),
# fetched with pip once and unpacked under ${PG_CACHE:-/var/tmp/rag-index-pgserver}. Nothing is
# installed system-wide, except, when run as root, one system user (see below).
#
# Why an unprivileged user: initdb, pg_ctl and postgres refuse to run as root. So when this script
# runs as root (as it does on the project's machines and in CI) it creates, once, the system user
# rag-index-pg (no home, no login shell) and runs every server-side program as that user; the
# cache and DATA_DIR must then be reachable by it (so not under /root, which is mode 700). Run as
# any other user, it runs everything as that user.
#
# The server listens on 127.0.0.1 only (plus a unix socket inside DATA_DIR), with scram-sha-256
# password authentication for everyone; the login role `rag` (random password, CREATEDB) owns the
# database `rag`, and the extension vector is created by the superuser in `rag` and in template1,
# so databases that tests create have it too.
#
# TLS: this PostgreSQL build has no OpenSSL (`ssl = on` is fatal: "SSL is not supported by this
# build"). So the URL's port is a small TLS front (python3, written to DATA_DIR/tls-proxy.py) that
# answers the protocol's SSLRequest with a self-signed certificate (DATA_DIR/server.crt, for
# localhost and 127.0.0.1) and relays plain connections unchanged: both sslmode=disable and
# sslmode=require work. Postgres itself sees plain connections (pg_stat_ssl says ssl = false, and
# SCRAM channel binding, channel_binding=require, is not offered). `url --direct` gives the server's
# own port, without the relay (plain only): use it for latency-sensitive benchmarks.
#
# Environment: PG_CACHE (download/unpack cache), PG_TLS=0 (no TLS front: the URL is the direct
# one), PG_FAST=1 (fsync, synchronous_commit and full_page_writes off), PG_MAINTENANCE_WORK_MEM
# (the server's maintenance_work_mem, e.g. 4GB), PG_PYTHON (a python3 for the TLS front that the
# server's user can run).
set -euo pipefail

readonly PGSERVER_VERSION=0.1.4
readonly WHEEL_SHA256_X86_64=d595789b47624a3d963aa9aa6359da9be31beb7e61f1a45541953242068b8813
readonly PG_SYSTEM_USER=rag-index-pg
readonly MARKER=.rag-index-pg
PG_CACHE=${PG_CACHE:-/var/tmp/rag-index-pgserver}

log() { printf 'pg.sh: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}
usage() {
    sed -n '3,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
now_ms() { date +%s%3N; }

# ---------------------------------------------------------------------------------------------
# Paths, the cache and the user that runs the server.

abs_dir() {
    local dir
    dir=$(realpath -m -- "$1")
    [[ $dir != / ]] || die "refusing to use / as DATA_DIR"
    [[ $dir != *[$'\n\'']* ]] || die "DATA_DIR must not contain a quote or a newline: $dir"
    printf '%s\n' "$dir"
}

ROOT_MODE=0
[[ $(id -u) -eq 0 ]] && ROOT_MODE=1
WHEEL_DIR="$PG_CACHE/pgserver-$PGSERVER_VERSION-$(uname -m)"
PGI="$WHEEL_DIR/pgserver/pginstall"
PGBIN="$PGI/bin"
RUN_MODE=direct

# Downloads and unpacks the wheel, unless it already is; creates the system user when root.
# Serialised by a lock in the cache so that concurrent first starts do it once.
setup() {
    if [[ -f $WHEEL_DIR/.complete ]] && { ((ROOT_MODE == 0)) || id -u "$PG_SYSTEM_USER" >/dev/null 2>&1; }; then
        pick_run_mode
        return
    fi
    mkdir -p -- "$PG_CACHE"
    [[ -e $PG_CACHE/.lock ]] || : >"$PG_CACHE/.lock"
    exec 8<"$PG_CACHE/.lock"
    flock -w 900 8 || die "timed out waiting for the lock $PG_CACHE/.lock"
    if [[ ! -f $WHEEL_DIR/.complete ]]; then
        download_wheel
    fi
    if ((ROOT_MODE)) && ! id -u "$PG_SYSTEM_USER" >/dev/null 2>&1; then
        local nologin=/usr/sbin/nologin
        [[ -x $nologin ]] || nologin=/sbin/nologin
        [[ -x $nologin ]] || nologin=/bin/false
        log "creating the system user $PG_SYSTEM_USER (PostgreSQL refuses to run as root)"
        useradd --system --no-create-home --home-dir /nonexistent --shell "$nologin" --user-group \
            --comment "rag-index throwaway PostgreSQL (scripts/pg.sh)" "$PG_SYSTEM_USER" >&2 ||
            id -u "$PG_SYSTEM_USER" >/dev/null 2>&1 || die "could not create the user $PG_SYSTEM_USER"
    fi
    exec 8<&-
    pick_run_mode
}

download_wheel() {
    local py tmp whl sum
    py=$(command -v python3) || die "python3 (with pip) is needed to download pgserver"
    chmod 755 "$PG_CACHE" 2>/dev/null || true
    rm -rf -- "$PG_CACHE"/.download.* # left by an interrupted download (we hold the lock)
    tmp=$(mktemp -d "$PG_CACHE/.download.XXXXXX")
    log "downloading pgserver==$PGSERVER_VERSION (PostgreSQL 16.2 + pgvector 0.6.2) with pip into $PG_CACHE"
    local args=(-m pip download --no-deps --only-binary=:all: --disable-pip-version-check
        --progress-bar off -d "$tmp/wheel")
    # The binaries inside do not depend on the Python version: ask for the cp311 build whatever the
    # local interpreter is, and fall back to pip's own choice (e.g. on another architecture).
    "$py" "${args[@]}" --platform "manylinux2014_$(uname -m)" --implementation cp --python-version 3.11 \
        --abi cp311 "pgserver==$PGSERVER_VERSION" >&2 ||
        "$py" "${args[@]}" "pgserver==$PGSERVER_VERSION" >&2 || {
        rm -rf -- "$tmp"
        die "pip could not download pgserver==$PGSERVER_VERSION"
    }
    whl=$(find "$tmp/wheel" -name 'pgserver-*.whl' | head -n1)
    [[ -n $whl ]] || die "pip downloaded no pgserver wheel"
    if [[ $whl == *manylinux2014_x86_64.whl ]]; then
        sum=$(sha256sum "$whl" | cut -d' ' -f1)
        [[ $sum == "$WHEEL_SHA256_X86_64" ]] || die "unexpected sha256 $sum of $(basename "$whl")"
    fi
    unzip -q "$whl" -d "$tmp/unpacked"
    [[ -f $tmp/unpacked/pgserver/pginstall/bin/postgres ]] || die "no pginstall/bin/postgres in $(basename "$whl")"
    chmod -R u+rwX,go+rX,go-w "$tmp/unpacked"
    chmod 755 "$tmp/unpacked/pgserver/pginstall/bin/"*
    rm -rf -- "$WHEEL_DIR"
    mv "$tmp/unpacked" "$WHEEL_DIR"
    touch "$WHEEL_DIR/.complete"
    rm -rf -- "$tmp"
}

pick_run_mode() {
    if ((ROOT_MODE == 0)); then
        RUN_MODE=direct
    elif command -v setpriv >/dev/null; then
        RUN_MODE=setpriv
    elif command -v runuser >/dev/null; then
        RUN_MODE=runuser
    elif command -v su >/dev/null; then
        RUN_MODE=su
    else
        die "running as root, but none of setpriv, runuser, su is there to drop to $PG_SYSTEM_USER"
    fi
    if ((ROOT_MODE)); then
        PG_UID=$(id -u "$PG_SYSTEM_USER")
        PG_GID=$(id -g "$PG_SYSTEM_USER")
    fi
}

# Builds in PG_CMD the command line that runs a command as the server's user with a clean
# environment (no PG* variables of the caller). Extra environment: pg_cmd VAR=value ... -- cmd...
pg_cmd() {
    local envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C LANG=C HOME=/
        "LD_LIBRARY_PATH=$PGI/lib")
    while [[ $# -gt 0 && $1 != -- ]]; do
        envs+=("$1")
        shift
    done
    [[ ${1-} == -- ]] && shift
    local cmd=(env -i "${envs[@]}" "$@")
    case $RUN_MODE in
    direct) PG_CMD=("${cmd[@]}") ;;
    setpriv) PG_CMD=(setpriv --reuid="$PG_UID" --regid="$PG_GID" --clear-groups -- "${cmd[@]}") ;;
    runuser) PG_CMD=(runuser -u "$PG_SYSTEM_USER" -- "${cmd[@]}") ;;
    su) PG_CMD=(su -s /bin/bash "$PG_SYSTEM_USER" -c "$(printf '%q ' "${cmd[@]}")") ;;
    esac
}

# Runs a command as the server's user (see pg_cmd), from / (the caller's cwd may be unreadable to
# it), without the lock descriptors (else a postmaster would keep DATA_DIR locked).
as_pg() {
    pg_cmd "$@"
    (cd / && exec "${PG_CMD[@]}") 8<&- 9<&-
}

give_to_pg() { if ((ROOT_MODE)); then chown "$PG_UID:$PG_GID" -- "$@"; fi; }

# ---------------------------------------------------------------------------------------------
# State of a data directory.

alive() { # is process $1 there and not a zombie? (kill -0 succeeds on zombies, and an exited
    # server whose parent has gone waits as one until PID 1 reaps it, which can take seconds)
    local stat
    read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]]
}

postmaster_pid() { # prints the pid of a live postmaster of $1, or fails
    local pid
    [[ -f $1/postmaster.pid ]] || return 1
    pid=$(head -n1 -- "$1/postmaster.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == postgres ]] ||
        return 1
    printf '%s\n' "$pid"
}

proxy_pid() { # prints the pid of a live TLS front of $1, or fails
    local pid port
    [[ -f $1/tls-proxy.port ]] || return 1
    read -r pid port <"$1/tls-proxy.port" || return 1
    [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$1/tls-proxy.py" || return 1
    printf '%s\n' "$pid"
}

stop_proxy() {
    local pid i
    pid=$(proxy_pid "$1") || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        alive "$pid" || return 0
        sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
}

stop_server() { # fast shutdown of the postmaster of $1 if one runs; waits until it has exited
    local dir=$1 pid i
    pid=$(postmaster_pid "$dir") || return 0
    if [[ -x $PGBIN/pg_ctl ]]; then
        as_pg -- "$PGBIN/pg_ctl" -D "$dir" -m fast -w -t 60 -s stop >&2 ||
            as_pg -- "$PGBIN/pg_ctl" -D "$dir" -m immediate -w -t 30 -s stop >&2 || true
    else # the cache is gone: SIGINT is what pg_ctl -m fast sends
        kill -INT "$pid" 2>/dev/null || true
    fi
    for ((i = 0; i < 600; i++)); do
        alive "$pid" || return 0
        sleep 0.1
    done
    log "postmaster $pid did not stop: killing it"
    kill -KILL "$pid" 2>/dev/null || true
}

lock_dir() { # holds an flock on DATA_DIR itself (fd 9) until the script exits
    exec 9<"$1"
    flock "${2:--n}" 9 || die "another pg.sh is working on $1"
}

# ---------------------------------------------------------------------------------------------
# start

free_port() {
    local py
    py=$(command -v /usr/bin/python3 python3 | head -n1) || true # a pyenv shim costs ~0.2 s
    if [[ -n $py ]]; then
        "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
        return
    fi
    local p i
    for ((i = 0; i < 100; i++)); do
        p=$((20000 + RANDOM % 40000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || {
            echo "$p"
            return
        }
    done
    die "found no free port"
}

random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

proxy_python() { # a python3 with ssl and asyncio that the server's user can run
    local c
    for c in ${PG_PYTHON:+"$PG_PYTHON"} /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3 || true)"; do
        [[ -n $c && -x $c ]] || continue
        if as_pg -- "$c" -c 'import asyncio, ssl' 2>/dev/null; then
            printf '%s\n' "$c"
            return
        fi
    done
    return 1
}

START_DIR='' START_CREATED=0 START_DONE=0
start_cleanup() {
    local rc=$?
    ((START_DONE)) && return
    [[ -n $START_DIR && -d $START_DIR ]] || return
    log "start failed: cleaning up $START_DIR"
    stop_proxy "$START_DIR"
    stop_server "$START_DIR"
    if ((START_CREATED)); then
        rm -rf -- "$START_DIR"
    else # the caller made the (empty) directory: leave it empty
        find "$START_DIR" -mindepth 1 -delete 2>/dev/null || true
    fi
    return "$rc"
}

cmd_start() {
    local dir t0 py port pw super_pw pwtmp sockdir url direct_url i tls=${PG_TLS:-1}
    dir=$(abs_dir "$1")
    t0=$(now_ms)
    setup
    [[ -x $PGBIN/postgres ]] || die "no PostgreSQL binaries in $PGBIN"

    [[ -d $dir ]] || START_CREATED=1
    mkdir -p -- "$dir"
    lock_dir "$dir"
    if [[ -f $dir/$MARKER ]]; then
        if postmaster_pid "$dir" >/dev/null; then
            die "a server already runs in $dir: stop it first (or get its URL with: $0 url $dir)"
        fi
        log "$dir holds a stopped server of pg.sh: wiping it"
        stop_proxy "$dir"
        find "$dir" -mindepth 1 -delete
    elif [[ -n $(ls -A -- "$dir") ]]; then
        die "$dir is not empty and has no $MARKER (not made by pg.sh): refusing to touch it"
    fi
    START_DIR=$dir
    trap start_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    give_to_pg "$dir"
    chmod 700 -- "$dir"
    as_pg -- test -w "$dir" ||
        die "$PG_SYSTEM_USER cannot write $dir: put DATA_DIR where that user can reach (not under /root)"
    as_pg -- test -x "$PGBIN/postgres" ||
        die "$PG_SYSTEM_USER cannot run $PGBIN/postgres: set PG_CACHE to a place that user can reach"

    # initdb. The superuser `postgres` gets a random password too: no trust authentication anywhere.
    super_pw=$(random_hex 16)
    pwtmp=$(mktemp)
    printf '%s\n' "$super_pw" >"$pwtmp"
    give_to_pg "$pwtmp"
    local out
    if ! out=$(as_pg -- "$PGBIN/initdb" -D "$dir" -U postgres --pwfile="$pwtmp" --auth=scram-sha-256 \
        --locale=C -E UTF8 --no-sync --no-instructions 2>&1); then
        rm -f -- "$pwtmp"
        printf '%s\n' "$out" >&2
        die "initdb failed"
    fi
    rm -f -- "$pwtmp"
    printf 'made by scripts/pg.sh start on %s; scripts/pg.sh stop deletes this directory\n' "$(date -Is)" \
        >"$dir/$MARKER"
    (umask 077 && printf '%s\n' "$super_pw" >"$dir/superuser-password")
    give_to_pg "$dir/superuser-password"

    # Unix socket inside DATA_DIR, unless its path would be too long (108 bytes with the file name).
    sockdir=$dir
    if ((${#dir} + 15 >= 108)); then # + "/.s.PGSQL.65535"
        log "warning: $dir is too long for a unix socket path: TCP only"
        sockdir=
    fi
    cat >"$dir/pg_hba.conf" <<'EOF'
# scripts/pg.sh: password (scram-sha-256) for every role, on the unix socket and on 127.0.0.1.
local all all               scram-sha-256
host  all all 127.0.0.1/32  scram-sha-256
EOF
    {
        printf "\n# scripts/pg.sh\ninclude 'rag-index-pg.conf'\n"
    } >>"$dir/postgresql.conf"
    give_to_pg "$dir/pg_hba.conf"

    # Start, on a free port; another process may take the port between the pick and the bind: retry.
    for ((i = 1; ; i++)); do
        port=$(free_port)
        {
            echo "listen_addresses = '127.0.0.1'"
            echo "port = $port"
            echo "unix_socket_directories = '$sockdir'"
            echo "password_encryption = 'scram-sha-256'"
            # A vector index build of a large collection wants its graph in memory (~2.3 KB
            # per 384-dimension row); rag-index uses the server's setting when it is above 2 GB.
            if [[ -n ${PG_MAINTENANCE_WORK_MEM:-} ]]; then
                echo "maintenance_work_mem = '$PG_MAINTENANCE_WORK_MEM'"
            fi
            if [[ ${PG_FAST:-0} == 1 ]]; then
                echo "fsync = off"
                echo "synchronous_commit = off"
                echo "full_page_writes = off"
            fi
        } >"$dir/rag-index-pg.conf"
        give_to_pg "$dir/rag-index-pg.conf"
        rm -f -- "$dir/postgres.log"
        if as_pg -- "$PGBIN/pg_ctl" -D "$dir" -l "$dir/postgres.log" -w -t 60 -s start >&2; then
            break
        fi
        if ((i < 5)) && grep -q 'Address already in use' "$dir/postgres.log" 2>/dev/null; then
            log "port $port was taken: trying another"
            continue
        fi
        tail -n 20 "$dir/postgres.log" >&2 2>/dev/null || true
        die "postgres did not start (log: $dir/postgres.log)"
    done

    # Role, database, extension; and a check that pgvector's HNSW index works.
    pw=$(random_hex 16)
    as_pg PGPASSWORD="$super_pw" PGOPTIONS="-c client_min_messages=warning" -- "$PGBIN/psql" -X -q \
        -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres -o /dev/null >&2 <<EOF ||
CREATE ROLE rag LOGIN CREATEDB PASSWORD '$pw';
\connect template1
CREATE EXTENSION IF NOT EXISTS vector;
\connect postgres
CREATE DATABASE rag OWNER rag;
\connect rag
CREATE EXTENSION IF NOT EXISTS vector;
BEGIN;
CREATE TEMP TABLE pg_sh_check (embedding vector(3));
INSERT INTO pg_sh_check VALUES ('[1,2,3]'), ('[3,2,1]');
CREATE INDEX ON pg_sh_check USING hnsw (embedding vector_cosine_ops);
SELECT 1 / count(*) FROM (SELECT 1 FROM pg_sh_check ORDER BY embedding <=> '[1,2,3]' LIMIT 1) AS t;
ROLLBACK;
EOF
        die "could not create the role rag, its database or the extension vector"
    local versions
    versions=$(as_pg PGPASSWORD="$super_pw" -- "$PGBIN/psql" -X -qAt -h 127.0.0.1 -p "$port" -U postgres -d rag \
        -c "SELECT current_setting('server_version') || ' (pgvector ' || extversion || ')' FROM pg_extension WHERE extname = 'vector'")

    direct_url="postgres://rag:$pw@127.0.0.1:$port/rag"
    url=$direct_url
    local where="port $port"
    if [[ $tls != 0 ]]; then
        py=$(proxy_python) ||
            die "no python3 with ssl that $PG_SYSTEM_USER can run, for the TLS front (set PG_PYTHON, or PG_TLS=0)"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
            -keyout "$dir/server.key" -out "$dir/server.crt" -subj /CN=localhost \
            -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
            -addext extendedKeyUsage=serverAuth 2>/dev/null || die "openssl could not make a certificate"
        chmod 600 "$dir/server.key"
        chmod 644 "$dir/server.crt"
        write_proxy "$dir/tls-proxy.py"
        : >"$dir/tls-proxy.log"
        give_to_pg "$dir/server.key" "$dir/server.crt" "$dir/tls-proxy.py" "$dir/tls-proxy.log"
        local pm_pid setsid=()
        pm_pid=$(postmaster_pid "$dir")
        command -v setsid >/dev/null && setsid=(setsid)
        pg_cmd -- "$py" "$dir/tls-proxy.py" "$dir" "$port" "$pm_pid"
        (cd / && exec "${setsid[@]}" "${PG_CMD[@]}") </dev/null >>"$dir/tls-proxy.log" 2>&1 8<&- 9<&- &
        for ((i = 0; i < 200; i++)); do
            proxy_pid "$dir" >/dev/null && break
            sleep 0.05
        done
        proxy_pid "$dir" >/dev/null || {
            cat "$dir/tls-proxy.log" >&2
            die "the TLS front did not start"
        }
        local pport
        read -r _ pport <"$dir/tls-proxy.port"
        url="postgres://rag:$pw@127.0.0.1:$pport/rag"
        where="TLS front on port $pport, server on port $port"
    fi
    (umask 077 && printf '%s\n' "$url" >"$dir/url" && printf '%s\n' "$direct_url" >"$dir/url-direct")

    START_DONE=1
    trap - EXIT INT TERM
    log "PostgreSQL $versions ready in $(($(now_ms) - t0)) ms in $dir: $where"
    printf '%s\n' "$url"
}

write_proxy() {
    cat >"$1" <<'PY'
"""TLS front of scripts/pg.sh: the PostgreSQL build it runs has no OpenSSL.

Usage: tls-proxy.py DATA_DIR BACKEND_PORT POSTMASTER_PID. Listens on a free port of 127.0.0.1
and writes "PID PORT" to DATA_DIR/tls-proxy.port. For each client it answers an SSLRequest with
'S' and does the TLS handshake (DATA_DIR/server.crt and server.key), answers a GSSENCRequest with
'N', then relays the bytes both ways to the server on 127.0.0.1:BACKEND_PORT; a client that starts
with a plain StartupMessage (or a CancelRequest) is relayed as it is. Exits on SIGTERM, or when the
postmaster has gone.
"""
import asyncio
import os
import signal
import ssl
import struct
import sys

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104


def log(msg):
    print(f"tls-proxy: {msg}", file=sys.stderr, flush=True)


class Backend(asyncio.Protocol):
    def __init__(self, client):
        self.client = client

    def data_received(self, data):
        self.client.transport.write(data)

    def eof_received(self):
        return False

    def connection_lost(self, exc):
        self.client.transport.close()

    def pause_writing(self):
        self.client.transport.pause_reading()

    def resume_writing(self):
        self.client.transport.resume_reading()


class Client(asyncio.Protocol):
    def __init__(self, ctx, backend_port):
        self.ctx = ctx
        self.backend_port = backend_port
        self.transport = None
        self.backend = None
        self.buf = b""
        self.negotiating = True
        self.tls = False
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if not self.negotiating:
            if self.backend is None:
                self.buf += data
            else:
                self.backend.write(data)
            return
        self.buf += data
        while len(self.buf) >= 8:
            length, code = struct.unpack("!II", self.buf[:8])
            if length == 8 and code == SSL_REQUEST and not self.tls:
                self.buf = self.buf[8:]
                if self.buf:  # a client must wait for the answer before it starts TLS
                    self.transport.abort()
                    return
                self.transport.write(b"S")
                self.transport.pause_reading()
                asyncio.ensure_future(self.start_tls())
                return
            if length == 8 and code == GSSENC_REQUEST:
                self.buf = self.buf[8:]
                self.transport.write(b"N")
                continue
            self.negotiating = False
            asyncio.ensure_future(self.connect())
            return

    async def start_tls(self):
        loop = asyncio.get_running_loop()
        try:
            self.transport = await loop.start_tls(self.transport, self, self.ctx, server_side=True)
            self.tls = True
        except Exception as e:  # the transport is closed by start_tls
            log(f"TLS handshake failed: {e!r}")
            self.closed = True

    async def connect(self):
        loop = asyncio.get_running_loop()
        try:
            backend, _ = await loop.create_connection(
                lambda: Backend(self), "127.0.0.1", self.backend_port
            )
        except OSError as e:
            log(f"cannot reach the server: {e!r}")
            self.transport.close()
            return
        if self.closed:
            backend.close()
            return
        self.backend = backend
        data, self.buf = self.buf, b""
        backend.write(data)

    def eof_received(self):
        return False

    def connection_lost(self, exc):
        self.closed = True
        if self.backend is not None:
            self.backend.close()

    def pause_writing(self):
        if self.backend is not None:
            self.backend.pause_reading()

    def resume_writing(self):
        if self.backend is not None:
            self.backend.resume_reading()


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


async def serve(data_dir, backend_port, postmaster_pid):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(os.path.join(data_dir, "server.crt"), os.path.join(data_dir, "server.key"))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: Client(ctx, backend_port), "127.0.0.1", 0, backlog=512
    )
    port = server.sockets[0].getsockname()[1]
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    tmp = os.path.join(data_dir, "tls-proxy.port.tmp")
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()} {port}\n")
    os.replace(tmp, os.path.join(data_dir, "tls-proxy.port"))
    while not stop.done():
        await asyncio.wait([stop], timeout=1.0)
        if not alive(postmaster_pid) or not os.path.isdir(data_dir):
            log("the postmaster has gone: exiting")
            break
    server.close()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
PY
}

# ---------------------------------------------------------------------------------------------
# stop, url, psql

cmd_stop() {
    local dir
    dir=$(abs_dir "$1")
    if [[ ! -e $dir ]]; then
        log "$dir does not exist: nothing to stop"
        return 0
    fi
    [[ -d $dir && -f $dir/$MARKER ]] || die "$dir has no $MARKER (not made by pg.sh): refusing to touch it"
    ((ROOT_MODE == 0)) || id -u "$PG_SYSTEM_USER" >/dev/null 2>&1 || die "no user $PG_SYSTEM_USER"
    pick_run_mode
    lock_dir "$dir" -w120
    stop_proxy "$dir"
    stop_server "$dir"
    [[ -f $dir/$MARKER ]] && rm -rf -- "$dir"
    log "stopped and deleted $dir"
}

cmd_url() {
    local dir file=url
    dir=$(abs_dir "$1")
    [[ ${2-} == --direct ]] && file='url-direct'
    [[ -f $dir/$MARKER && -f $dir/$file ]] || die "no server of pg.sh in $dir"
    postmaster_pid "$dir" >/dev/null || die "the server of $dir is not running"
    if [[ $file == url ]] && [[ -f $dir/tls-proxy.port ]] && ! proxy_pid "$dir" >/dev/null; then
        die "the TLS front of $dir is not running (scripts/pg.sh url $dir --direct still works)"
    fi
    cat -- "$dir/$file"
}

cmd_psql() {
    local url
    url=$(cmd_url "$1")
    shift
    [[ -x $PGBIN/psql ]] || die "no psql in $PGBIN"
    LD_LIBRARY_PATH="$PGI/lib" exec "$PGBIN/psql" -X "$url" "$@"
}

case ${1-} in
start) [[ $# -eq 2 ]] || usage && cmd_start "$2" ;;
stop) [[ $# -eq 2 ]] || usage && cmd_stop "$2" ;;
url) [[ $# -eq 2 || ($# -eq 3 && $3 == --direct) ]] || usage && cmd_url "$2" "${3-}" ;;
psql) [[ $# -ge 2 ]] || usage && shift && cmd_psql "$@" ;;
*) usage ;;
esac
