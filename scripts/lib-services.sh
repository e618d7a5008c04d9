# Sourced by scripts/test: what the test suite needs besides Python, made present.
#   PostgreSQL  DATABASE_URL if set; else the server on 127.0.0.1:5432 if it lets `postgres` in
#               without a password; else a Debian cluster of this machine, started; else a private
#               cluster of the tests' own (trust authentication, $POLLUX_TEST_PGDATA), started on
#               5432 or, where that port is taken, the next free one (DATABASE_URL then points at
#               it).
#   Redis       REDIS_URL if set; else the server on 127.0.0.1:6379, started where nothing answers.
#   Programs    initdb/pg_ctl and redis-server (the fault tests start private ones), Debian's
#               chromium (browser tests) and LibreOffice Calc (the exported workbooks are opened):
#               installed with apt-get where missing (as root, or through sudo without a password).
# Services this starts keep running after the tests, for the next run.

services_say() { printf '== %s\n' "$*"; }

port_open() {  # $1: port on 127.0.0.1
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pg_bin() {  # $1: a server program; Debian keeps them out of PATH
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -1)
  if [ -n "$found" ]; then echo "$found"; else command -v "$1" || true; fi
}

pg_lets_postgres_in() {  # $1: port
  local psql
  psql=$(command -v psql || pg_bin psql)
  [ -n "$psql" ] && "$psql" "postgres://postgres@127.0.0.1:$1/postgres" -wAtqc 'select 1' \
    >/dev/null 2>&1
}

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo "$@"
  else
    return 1
  fi
}

services_install_missing() {
  local packages=()
  [ -n "$(pg_bin initdb)" ] || packages+=(postgresql)
  command -v redis-server >/dev/null 2>&1 || packages+=(redis-server)
  command -v chromium >/dev/null 2>&1 || [ -n "${CHROMIUM_PATH:-}" ] || packages+=(chromium)
  command -v soffice >/dev/null 2>&1 || packages+=(libreoffice-calc-nogui)
  [ ${#packages[@]} -eq 0 ] && return 0
  services_say "installing ${packages[*]} (Debian packages the tests need)"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
    || ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" \
      >/dev/null; then
    echo "scripts/test: could not install ${packages[*]}; as root run:" >&2
    echo "  apt-get install ${packages[*]}" >&2
    return 1
  fi
}

wait_for() {  # $1: seconds; the rest: a command that succeeds when the service is up
  local seconds=$1
  shift
  for _ in $(seq "$seconds"); do
    "$@" && return 0
    sleep 1
  done
  "$@"
}

pg_private_cluster() {  # a cluster of the tests' own, trust authentication, on a free port
  local data=${POLLUX_TEST_PGDATA:-}
  local run_as=()
  if [ -z "$data" ]; then
    # PostgreSQL refuses to run as root: as root the cluster belongs to `postgres`, outside a
    # checkout that user may not be able to enter.
    if [ "$(id -u)" = 0 ]; then data=/var/tmp/pollux-test-postgres; else data=$PWD/var/test-postgres; fi
  fi
  [ "$(id -u)" = 0 ] && run_as=(runuser -u postgres --)
  local port=${POLLUX_TEST_PGPORT:-5432}
  if [ -f "$data/pollux-port" ]; then port=$(cat "$data/pollux-port"); fi
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown postgres "$data"
    "${run_as[@]}" "$(pg_bin initdb)" -D "$data" -U postgres --auth=trust -E UTF8 \
      --locale=C.UTF-8 >/dev/null
  fi
  if ! pg_lets_postgres_in "$port"; then
    while port_open "$port"; do port=$((port + 1)); done
    echo "$port" | "${run_as[@]}" tee "$data/pollux-port" >/dev/null
    services_say "starting a private PostgreSQL in $data on 127.0.0.1:$port"
    "${run_as[@]}" "$(pg_bin pg_ctl)" -D "$data" -l "$data/server.log" -w -t 60 \
      -o "-p $port -h 127.0.0.1 -k $data" start >/dev/null
  fi
  PG_PORT=$port
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/pollux"
}

services_postgres() {
  [ -n "${DATABASE_URL:-}" ] && return 0
  pg_lets_postgres_in 5432 && return 0
  local cluster
  cluster=$(ls -d /etc/postgresql/*/main 2>/dev/null | sort -V | tail -1)
  if [ -n "$cluster" ] && ! port_open 5432 && [ -z "${POLLUX_TEST_PGDATA:-}" ]; then
    local version
    version=$(basename "$(dirname "$cluster")")
    services_say "starting PostgreSQL $version (cluster main)"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    wait_for 30 pg_lets_postgres_in 5432 && return 0
  fi
  pg_private_cluster
  wait_for 30 pg_lets_postgres_in "$PG_PORT"
}

redis_answers() {  # $1: port
  redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG
}

services_redis() {
  [ -n "${REDIS_URL:-}" ] && return 0
  redis_answers 6379 && return 0
  if port_open 6379; then
    echo "scripts/test: something that is not Redis listens on 127.0.0.1:6379; set REDIS_URL" >&2
    return 1
  fi
  services_say "starting Redis on 127.0.0.1:6379"
  mkdir -p var
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir "$PWD/var" --logfile "$PWD/var/redis-test.log" >/dev/null
  wait_for 30 redis_answers 6379
}

services_start() {
  services_install_missing
  services_postgres
  services_redis
}
