#!/usr/bin/env bash
# A whole deployment on this host's loopback, with real servers: PostgreSQL (Debian package), a `chroma run`
# index server, the LLM server (our llama-server when `make llm` built it; else none and the app is set to
# answer without it), N app replicas and HAProxy in front (`chatbot serve --workers N`). Runs the migrations
# and the demo ingest against them.
#
#   scripts/deploy_local.sh up      start everything (stops what it started if a step fails)
#   scripts/deploy_local.sh down    stop everything `up` started (pid files under DEPLOY_DIR/run)
#   scripts/deploy_local.sh status  what runs, and readiness through the balancer
#
# Settings (environment): DEPLOY_DIR (default /tmp/chatbot-deploy-$DEPLOY_PORT), DEPLOY_PORT (balancer,
# default 28810; replicas on +1..+N; PostgreSQL +20, Chroma +21, LLM +22), DEPLOY_REPLICAS (2),
# DEPLOY_INGEST (corpus/demo/cards). Any CHATBOT_* variable set by the caller reaches every process.
# DEPLOY_DIR/chatbot.env holds the app's settings: `set -a; . DEPLOY_DIR/chatbot.env` to run
# `chatbot tokens create`, `chatbot users add` ... against this deployment.
set -Eeuo pipefail
trap 'printf "[deploy] error: line %s: %s failed\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${DEPLOY_PORT:-28810}"
REPLICAS="${DEPLOY_REPLICAS:-2}"
DIR="${DEPLOY_DIR:-/tmp/chatbot-deploy-$PORT}"
INGEST="${DEPLOY_INGEST:-$ROOT/corpus/demo/cards}"
PG_PORT=$((PORT + 20))
CHROMA_PORT=$((PORT + 21))
LLM_PORT=$((PORT + 22))
BIN="$ROOT/.venv/bin"
RUN="$DIR/run"
LOG="$DIR/log"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False GRADIO_ANALYTICS_ENABLED=False

say() { printf '[deploy] %s\n' "$*"; }
die() { printf '[deploy] error: %s\n' "$*" >&2; exit 1; }

pg_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return; }
  done
  die "PostgreSQL server binaries not found: install the Debian package postgresql (make system-deps)"
}

# initdb and the server refuse root: as root they run as the package's postgres user
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

wait_for() {  # wait_for SECONDS WHAT LOGFILE COMMAND...: retry COMMAND until it succeeds, else show the log
  local secs=$1 what=$2 logfile=$3; shift 3
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then
      [ -f "$logfile" ] && grep -v '^{' "$logfile" | tail -n 40 >&2
      die "$what did not come up within ${secs}s (logs: $LOG)"
    fi
    sleep 0.5
  done
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pidfile() {  # stop_pidfile FILE NAME WORD: SIGTERM, wait up to 20 s, then SIGKILL (only a process whose
  local f=$1 name=$2 word=$3 pid  # command line has WORD: a stale pid file may name a reused pid)
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$word"; then
    say "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

down() {
  stop_pidfile "$RUN/serve.pid" "app replicas and HAProxy" "chatbot"
  local f  # the supervisor stops its replicas and HAProxy; these catch any it left (e.g. it was SIGKILLed)
  for f in "$RUN"/replica-*.pid; do if [ -e "$f" ]; then stop_pidfile "$f" "$(basename "$f" .pid)" chatbot; fi; done
  stop_pidfile "$RUN/haproxy.pid" "HAProxy" "haproxy"
  stop_pidfile "$RUN/chroma.pid" "chroma" "chroma"
  if [ -f "$RUN/llm.started" ]; then
    (set -a; . "$DIR/chatbot.env"; "$BIN/chatbot" llm stop --port "$LLM_PORT" >/dev/null 2>&1) || true
    rm -f "$RUN/llm.started"
  fi
  if [ -f "$DIR/pg/data/postmaster.pid" ]; then
    say "stopping PostgreSQL"
    as_pg "$(pg_bin)/pg_ctl" -D "$DIR/pg/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  fi
  say "down"
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

up() {
  [ -x "$BIN/chatbot" ] || die "no $BIN/chatbot: run make install"
  command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || die "HAProxy not installed: make system-deps"
  for p in "$PORT" $(seq $((PORT + 1)) $((PORT + REPLICAS))) "$PG_PORT" "$CHROMA_PORT"; do
    port_free "$p" || die "port $p is taken (another deployment? scripts/deploy_local.sh down, or DEPLOY_PORT=...)"
  done
  mkdir -p "$RUN" "$LOG" "$DIR/data"
  UP_DONE=0
  trap '[ "$UP_DONE" = 1 ] || { say "a step failed: stopping what was started"; down; }' EXIT

  # 1. PostgreSQL: a cluster of our own under DIR, loopback only
  local pg; pg=$(pg_bin)
  if [ ! -f "$DIR/pg/data/PG_VERSION" ]; then
    mkdir -p "$DIR/pg"
    if [ "$(id -u)" = 0 ]; then
      chown -R postgres "$DIR/pg"
      as_pg test -w "$DIR/pg" || die "the postgres user cannot write $DIR/pg: a DEPLOY_DIR every user can traverse"
    fi
    as_pg "$pg/initdb" -D "$DIR/pg/data" -A trust -U postgres -E UTF8 --no-sync >"$LOG/initdb.log" 2>&1 \
      || { cat "$LOG/initdb.log" >&2; false; }
  fi
  as_pg "$pg/pg_ctl" -D "$DIR/pg/data" -l "$DIR/pg/server.log" -w -t 60 \
    -o "-p $PG_PORT -k $DIR/pg -c listen_addresses=127.0.0.1" start >/dev/null
  as_pg "$pg/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='chatbot'" \
    | grep -q 1 || as_pg "$pg/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres chatbot
  say "PostgreSQL on 127.0.0.1:$PG_PORT"

  # 2. Chroma server
  setsid "$BIN/chroma" run --path "$DIR/chroma" --host 127.0.0.1 --port "$CHROMA_PORT" >"$LOG/chroma.log" 2>&1 &
  echo $! >"$RUN/chroma.pid"
  wait_for 90 "chroma" "$LOG/chroma.log" curl -sf "http://127.0.0.1:$CHROMA_PORT/api/v2/heartbeat"
  say "chroma on 127.0.0.1:$CHROMA_PORT"

  # 3. The app's settings: every process (migrations, ingest, replicas) reads them from the environment
  cat >"$DIR/chatbot.env" <<EOF
CHATBOT_STORE__URL=postgresql+psycopg://postgres@127.0.0.1:$PG_PORT/chatbot
CHATBOT_INDEX__SERVER_URL=http://127.0.0.1:$CHROMA_PORT
CHATBOT_PATHS__DATA_DIR=$DIR/data
CHATBOT_LLM__PORT=$LLM_PORT
CHATBOT_LLM__BASE_URL=http://127.0.0.1:$LLM_PORT/v1
CHATBOT_LLM__AUTOSTART=false
EOF
  set -a; . "$DIR/chatbot.env"; set +a

  # 4. The LLM server: ours when built (make llm), else none (pipelines that need it fall back; the default
  #    dense+rerank pipeline with extractive replies never calls it)
  local llm_bin llm_model
  read -r llm_bin llm_model < <("$BIN/python" -c \
    "from chatbot.settings import load_settings as L; s=L().llm; print(s.server_binary, s.model_path)")
  if [ -x "$llm_bin" ] && [ -f "$llm_model" ]; then
    "$BIN/chatbot" llm start --port "$LLM_PORT" >"$LOG/llm.log" 2>&1
    touch "$RUN/llm.started"
    say "LLM server on 127.0.0.1:$LLM_PORT"
  else
    say "LLM server: not built here (make llm); the app runs without it (extractive replies, no HyDE/CoT)"
  fi

  # 5. Migrations and the demo ingest, against PostgreSQL and the Chroma server
  "$BIN/python" -c "from chatbot.settings import load_settings; from chatbot.store.db import open_store, \
current_revision; s = open_store(load_settings()); print('[deploy] database at revision', current_revision(s.engine))"
  "$BIN/chatbot" ingest "$INGEST" --quiet >"$LOG/ingest.log" 2>&1 || { tail -5 "$LOG/ingest.log" >&2; false; }
  say "ingested $INGEST"

  # 6. The replicas behind HAProxy (a supervisor restarts a replica that dies)
  setsid "$BIN/chatbot" serve --host 127.0.0.1 --port "$PORT" --workers "$REPLICAS" --pid-dir "$RUN" \
    >"$LOG/serve.log" 2>&1 &
  echo $! >"$RUN/serve.pid"
  for p in $(seq $((PORT + 1)) $((PORT + REPLICAS))); do
    wait_for 480 "replica on port $p" "$LOG/serve.log" curl -sf "http://127.0.0.1:$p/api/v1/ready"
  done
  wait_for 30 "HAProxy" "$LOG/serve.log" curl -sf "http://127.0.0.1:$PORT/api/v1/ready"
  UP_DONE=1
  say "up: http://127.0.0.1:$PORT/ ($REPLICAS replicas; settings in $DIR/chatbot.env, logs in $LOG)"
}

status() {
  local f
  for f in "$RUN"/*.pid; do
    [ -e "$f" ] || continue
    if alive "$f"; then echo "$(basename "$f" .pid): running (pid $(cat "$f"))"; else echo "$(basename "$f" .pid): gone"; fi
  done
  curl -s "http://127.0.0.1:$PORT/api/v1/ready" || echo "balancer: not answering"
  echo
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
