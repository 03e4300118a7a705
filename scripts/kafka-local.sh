#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft, combined broker+controller) without Docker.
#
# Usage: scripts/kafka-local.sh start|stop|restart|status|logs [N]
#
# Needs Java 17+ and Maven (jars are fetched from Maven Central once and cached).
#
# Environment:
#   KAFKA_LOCAL_HOME       cache/state folder (default: $HOME/.cache/guardrail-kafka)
#   KAFKA_LIB_DIR          jar folder (default: $KAFKA_LOCAL_HOME/lib); lets a second broker share jars
#   KAFKA_PORT             client (PLAINTEXT) port (default: 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port (default: 9093)
#   KAFKA_VERSION          force a Kafka version (default: 3.9.1, falling back to 3.9.0)
#   KAFKA_START_TIMEOUT    seconds to wait for the broker to become healthy (default: 90)
#   KAFKA_HEAP_OPTS        JVM heap options (default: -Xms256m -Xmx512m)
#
# Layout of $KAFKA_LOCAL_HOME:
#   lib/ (jars + .kafka-version marker), data/ (KRaft log dir), logs/, server.properties,
#   log4j.properties, kafka.pid, server.log
set -euo pipefail

KAFKA_LOCAL_HOME="${KAFKA_LOCAL_HOME:-$HOME/.cache/guardrail-kafka}"
case "$KAFKA_LOCAL_HOME" in
  /*) ;;
  *) KAFKA_LOCAL_HOME="$(pwd)/$KAFKA_LOCAL_HOME" ;;
esac
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
SCALA_BINARY="2.13"
SLF4J_VERSION="1.7.36"
HOST="127.0.0.1"

LIB_DIR="${KAFKA_LIB_DIR:-$KAFKA_LOCAL_HOME/lib}"
DATA_DIR="$KAFKA_LOCAL_HOME/data"
LOGS_DIR="$KAFKA_LOCAL_HOME/logs"
SERVER_PROPS="$KAFKA_LOCAL_HOME/server.properties"
LOG4J_PROPS="$KAFKA_LOCAL_HOME/log4j.properties"
TOOLS_LOG4J_PROPS="$KAFKA_LOCAL_HOME/tools-log4j.properties"
CLIENT_PROPS="$KAFKA_LOCAL_HOME/healthcheck-client.properties"
PID_FILE="$KAFKA_LOCAL_HOME/kafka.pid"
SERVER_LOG="$KAFKA_LOCAL_HOME/server.log"
MARKER="$LIB_DIR/.kafka-version"
CLASSPATH_GLOB="$LIB_DIR/*"

log() { printf '[kafka-local] %s\n' "$*"; }
err() { printf '[kafka-local] ERROR: %s\n' "$*" >&2; }

usage() {
  cat <<EOF
Usage: $0 start|stop|restart|status|logs [N]
  start    fetch jars if needed, format storage if needed, start broker and wait until healthy
  stop     stop the broker (SIGTERM, then SIGKILL after 30s)
  restart  stop + start
  status   print running/stopped (exit 0 if running, 3 if stopped)
  logs [N] print the last N (default 100) lines of $SERVER_LOG
Cache folder: $KAFKA_LOCAL_HOME
EOF
}

require_tools() {
  command -v java >/dev/null 2>&1 || { err "java not found on PATH (Java 17+ required)"; exit 1; }
}

# ---------------------------------------------------------------------------
# Jars
# ---------------------------------------------------------------------------
marker_content() { echo "kafka_${SCALA_BINARY}:$1 slf4j-reload4j:${SLF4J_VERSION}"; }

jars_present() {
  [[ -f "$MARKER" ]] || return 1
  compgen -G "$LIB_DIR/kafka_${SCALA_BINARY}-*.jar" >/dev/null || return 1
  if [[ -n "${KAFKA_VERSION:-}" ]]; then
    [[ "$(cat "$MARKER")" == "$(marker_content "$KAFKA_VERSION")" ]] || return 1
  fi
  return 0
}

installed_version() {
  # prints the Kafka version recorded in the marker, e.g. 3.9.1
  sed -n "s/^kafka_${SCALA_BINARY}:\([^ ]*\) .*/\1/p" "$MARKER" 2>/dev/null || true
}

write_pom() {
  local dir="$1" version="$2"
  cat >"$dir/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.guardrail</groupId>
  <artifactId>kafka-local-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_${SCALA_BINARY}</artifactId>
      <version>${version}</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-reload4j</artifactId>
      <version>${SLF4J_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF
}

fetch_jars() {
  if jars_present; then
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || { err "mvn not found on PATH (needed once to fetch Kafka jars)"; exit 1; }
  local candidates
  if [[ -n "${KAFKA_VERSION:-}" ]]; then
    candidates=("$KAFKA_VERSION")
  else
    candidates=(3.9.1 3.9.0)
  fi
  mkdir -p "$KAFKA_LOCAL_HOME"
  local tmp version ok=""
  tmp="$(mktemp -d "$KAFKA_LOCAL_HOME/.fetch.XXXXXX")"
  for version in "${candidates[@]}"; do
    log "fetching kafka_${SCALA_BINARY}:${version} and its runtime dependencies from Maven Central..."
    rm -rf "$tmp/lib"
    write_pom "$tmp" "$version"
    if (cd "$tmp" && mvn -q -B -f "$tmp/pom.xml" dependency:copy-dependencies \
          -DoutputDirectory="$tmp/lib" -DincludeScope=runtime >"$tmp/mvn.log" 2>&1); then
      ok="$version"
      break
    fi
    err "fetching kafka ${version} failed:"
    tail -n 20 "$tmp/mvn.log" >&2 || true
  done
  if [[ -z "$ok" ]]; then
    err "could not fetch Kafka jars (tried: ${candidates[*]})"
    rm -rf "$tmp"
    exit 1
  fi
  marker_content "$ok" >"$tmp/lib/.kafka-version"
  rm -rf "$LIB_DIR"
  mv "$tmp/lib" "$LIB_DIR"
  rm -rf "$tmp"
  log "installed Kafka ${ok} ($(find "$LIB_DIR" -name '*.jar' | wc -l) jars) into $LIB_DIR"
}

# ---------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------
write_configs() {
  mkdir -p "$DATA_DIR" "$LOGS_DIR"
  cat >"$SERVER_PROPS" <<EOF
# Generated by scripts/kafka-local.sh -- rewritten on every start.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@${HOST}:${KAFKA_CONTROLLER_PORT}
listeners=PLAINTEXT://${HOST}:${KAFKA_PORT},CONTROLLER://${HOST}:${KAFKA_CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://${HOST}:${KAFKA_PORT}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
offsets.topic.replication.factor=1
offsets.topic.num.partitions=12
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
num.partitions=6
log.dirs=${DATA_DIR}
# Not in the stock config: after a crash (kill -9) the controller refuses the broker's
# re-registration (DUPLICATE_BROKER_REGISTRATION) until the old session expires
# (default 9s, and registration retries back off exponentially, so ~15s). A shorter
# session makes crash recovery take ~5-8s; heartbeats are loopback-only here.
broker.heartbeat.interval.ms=1000
broker.session.timeout.ms=6000
EOF
  cat >"$LOG4J_PROPS" <<'EOF'
# Generated by scripts/kafka-local.sh -- everything goes to stdout (appended to server.log).
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.org.apache.zookeeper=WARN
# request logging is very chatty
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.kafka.controller=INFO
log4j.logger.kafka.log.LogCleaner=INFO
log4j.logger.state.change.logger=INFO
log4j.logger.kafka.authorizer.logger=INFO
EOF
  write_tool_configs
}

write_tool_configs() {
  mkdir -p "$KAFKA_LOCAL_HOME"
  # CLI tools (StorageTool, health check): warnings only, to stderr, keep stdout clean.
  cat >"$TOOLS_LOG4J_PROPS" <<'EOF'
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
  # Client config for the health check: fail fast instead of retrying for minutes.
  cat >"$CLIENT_PROPS" <<'EOF'
request.timeout.ms=5000
default.api.timeout.ms=8000
socket.connection.setup.timeout.ms=3000
socket.connection.setup.timeout.max.ms=3000
reconnect.backoff.max.ms=500
EOF
}

# Run a Kafka CLI class with the cached classpath.
run_tool() {
  java -Xmx256m -Dlog4j.configuration="file:$TOOLS_LOG4J_PROPS" -cp "$CLASSPATH_GLOB" "$@"
}

format_storage() {
  if [[ -f "$DATA_DIR/meta.properties" ]]; then
    return 0
  fi
  local cluster_id
  cluster_id="$(run_tool kafka.tools.StorageTool random-uuid 2>>"$SERVER_LOG" | tail -n 1)"
  if [[ -z "$cluster_id" ]]; then
    err "StorageTool random-uuid produced no id (see $SERVER_LOG)"
    exit 1
  fi
  log "formatting KRaft storage in $DATA_DIR (cluster id $cluster_id)"
  if ! run_tool kafka.tools.StorageTool format --ignore-formatted \
        -t "$cluster_id" -c "$SERVER_PROPS" >>"$SERVER_LOG" 2>&1; then
    err "StorageTool format failed; last log lines:"
    tail -n 20 "$SERVER_LOG" >&2 || true
    exit 1
  fi
}

# ---------------------------------------------------------------------------
# Process / health helpers
# ---------------------------------------------------------------------------
# Is $1 a live process that is our Kafka broker (guards against pid reuse)?
is_our_kafka_pid() {
  local pid="$1"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF "kafka.Kafka $SERVER_PROPS" || return 1
  fi
  return 0
}

read_pid() { [[ -f "$PID_FILE" ]] && tr -dc '0-9' <"$PID_FILE" || true; }

# Fallback when the pid file is missing: find a broker started from this cache folder.
find_kafka_pid() {
  local p
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    if { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF "kafka.Kafka $SERVER_PROPS"; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

running_pid() {
  local pid
  pid="$(read_pid)"
  if [[ -n "$pid" ]] && is_our_kafka_pid "$pid"; then
    echo "$pid"
    return 0
  fi
  find_kafka_pid
}

port_open() {
  timeout 2 bash -c "exec 3<>/dev/tcp/${HOST}/$1" 2>/dev/null
}

# A real request round-trip: bootstrap metadata + ApiVersions against the broker.
broker_healthy() {
  port_open "$KAFKA_PORT" || return 1
  [[ -f "$CLIENT_PROPS" && -f "$TOOLS_LOG4J_PROPS" ]] || write_tool_configs
  local out
  out="$(timeout 30 java -Xmx128m -Dlog4j.configuration="file:$TOOLS_LOG4J_PROPS" \
          -cp "$CLASSPATH_GLOB" kafka.admin.BrokerApiVersionsCommand \
          --bootstrap-server "${HOST}:${KAFKA_PORT}" --command-config "$CLIENT_PROPS" 2>/dev/null)" || return 1
  grep -q "(id: " <<<"$out"
}

rotate_log() {
  if [[ -f "$SERVER_LOG" ]] && (( $(stat -c %s "$SERVER_LOG") > 50 * 1024 * 1024 )); then
    mv -f "$SERVER_LOG" "$SERVER_LOG.1"
  fi
}

# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------
cmd_start() {
  require_tools
  mkdir -p "$KAFKA_LOCAL_HOME"
  fetch_jars

  local pid
  if port_open "$KAFKA_PORT"; then
    if broker_healthy; then
      log "kafka already running on ${HOST}:${KAFKA_PORT}"
      return 0
    fi
    pid="$(running_pid || true)"
    if [[ -n "$pid" ]]; then
      # Our broker is up but not answering yet (e.g. still starting / recovering): wait for it.
      echo "$pid" >"$PID_FILE"
      log "kafka (pid $pid) is starting, waiting for it to become healthy..."
      wait_healthy "$pid"
      return $?
    fi
    err "port ${KAFKA_PORT} is in use by something that does not answer Kafka requests"
    exit 1
  fi

  pid="$(running_pid || true)"
  if [[ -n "$pid" ]]; then
    log "kafka process $pid exists but is not listening yet, waiting for it to become healthy..."
    echo "$pid" >"$PID_FILE"
    wait_healthy "$pid"
    return $?
  fi

  # Nothing running: clean up after a crash.
  if [[ -f "$PID_FILE" ]]; then
    log "removing stale pid file (pid $(read_pid) is not running)"
    rm -f "$PID_FILE"
  fi
  if [[ -f "$DATA_DIR/.lock" ]]; then
    # Kafka uses an OS file lock, which dies with the process, so the file is harmless;
    # remove it anyway since no broker of ours is alive.
    rm -f "$DATA_DIR/.lock"
  fi
  if port_open "$KAFKA_CONTROLLER_PORT"; then
    err "controller port ${KAFKA_CONTROLLER_PORT} is already in use by another process"
    exit 1
  fi

  write_configs
  rotate_log
  format_storage

  log "starting Kafka $(installed_version) on ${HOST}:${KAFKA_PORT} (controller ${KAFKA_CONTROLLER_PORT}), log: $SERVER_LOG"
  echo "===== $(date -u '+%Y-%m-%dT%H:%M:%SZ') kafka-local.sh start =====" >>"$SERVER_LOG"
  # The inner shell writes its own pid, then execs java (same pid); setsid detaches it
  # from our session/process group so it survives the calling shell.
  # shellcheck disable=SC2086
  setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" \
    java $KAFKA_HEAP_OPTS -XX:+UseG1GC -Djava.awt.headless=true \
      -Dlog4j.configuration="file:$LOG4J_PROPS" -Dkafka.logs.dir="$LOGS_DIR" \
      -cp "$CLASSPATH_GLOB" kafka.Kafka "$SERVER_PROPS" \
    </dev/null >>"$SERVER_LOG" 2>&1 9>&- &

  local i
  for i in $(seq 1 50); do
    [[ -s "$PID_FILE" ]] && break
    sleep 0.1
  done
  pid="$(read_pid)"
  if [[ -z "$pid" ]]; then
    err "failed to launch kafka (no pid written)"
    tail -n 50 "$SERVER_LOG" >&2 || true
    exit 1
  fi
  wait_healthy "$pid"
}

wait_healthy() {
  local pid="$1" start now
  start="$(date +%s)"
  while true; do
    if ! kill -0 "$pid" 2>/dev/null; then
      err "kafka (pid $pid) exited during startup; last 50 log lines:"
      tail -n 50 "$SERVER_LOG" >&2 || true
      rm -f "$PID_FILE"
      exit 1
    fi
    if broker_healthy; then
      now="$(date +%s)"
      log "kafka is up (pid $pid, ${HOST}:${KAFKA_PORT}, healthy after $((now - start))s)"
      return 0
    fi
    now="$(date +%s)"
    if (( now - start >= KAFKA_START_TIMEOUT )); then
      err "kafka did not become healthy within ${KAFKA_START_TIMEOUT}s; last 50 log lines:"
      tail -n 50 "$SERVER_LOG" >&2 || true
      exit 1
    fi
    sleep 1
  done
}

cmd_stop() {
  local pid
  pid="$(running_pid || true)"
  if [[ -z "$pid" ]]; then
    rm -f "$PID_FILE"
    log "kafka is not running"
    return 0
  fi
  log "stopping kafka (pid $pid)..."
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for i in $(seq 1 30); do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$PID_FILE"
      log "kafka stopped"
      return 0
    fi
    sleep 1
  done
  log "kafka did not stop within 30s, sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for i in $(seq 1 10); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  rm -f "$PID_FILE"
  log "kafka killed"
}

cmd_status() {
  local pid
  pid="$(running_pid || true)"
  if [[ -n "$pid" ]]; then
    if port_open "$KAFKA_PORT"; then
      echo "running (pid $pid, ${HOST}:${KAFKA_PORT}, Kafka $(installed_version))"
    else
      echo "running (pid $pid, starting: port ${KAFKA_PORT} not open yet)"
    fi
    return 0
  fi
  if port_open "$KAFKA_PORT" && [[ -f "$MARKER" ]] && broker_healthy; then
    echo "running (not started by this script: no pid, ${HOST}:${KAFKA_PORT} answers)"
    return 0
  fi
  echo "stopped"
  return 3
}

cmd_logs() {
  local n="${1:-100}"
  if [[ -f "$SERVER_LOG" ]]; then
    tail -n "$n" "$SERVER_LOG"
  else
    log "no log yet ($SERVER_LOG)"
  fi
}

# Serialize start/stop/restart of the same cache folder (e.g. parallel test runners).
take_lock() {
  mkdir -p "$KAFKA_LOCAL_HOME"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$KAFKA_LOCAL_HOME/.script.lock"
    if ! flock -w $((KAFKA_START_TIMEOUT + 120)) 9; then
      err "timed out waiting for another kafka-local.sh on $KAFKA_LOCAL_HOME"
      exit 1
    fi
  fi
}

main() {
  local cmd="${1:-}"
  shift || true
  case "$cmd" in
    start) take_lock; cmd_start ;;
    stop) take_lock; cmd_stop ;;
    restart) take_lock; cmd_stop; cmd_start ;;
    status) cmd_status ;;
    logs) cmd_logs "$@" ;;
    -h|--help|help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
