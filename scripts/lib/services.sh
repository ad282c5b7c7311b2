# shellcheck shell=bash
# Makes sure Postgres and Redis answer on the configured URLs: uses running ones, otherwise starts
# them with Docker (where an engine runs) or from Debian's packages, and says what it did.

say() { printf '\033[1m[abacus %ss]\033[0m %s\n' "$SECONDS" "$*"; }  # seconds since the script started
die() { printf '\033[1;31m[abacus] %s\033[0m\n' "$*" >&2; exit 1; }

PG_URL="${ABACUS_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/abacus}"
REDIS_URL="${ABACUS_REDIS_URL:-redis://127.0.0.1:6379}"

url_host() { node -e 'const u=new URL(process.argv[1]);process.stdout.write(u.hostname)' "$1"; }
url_port() { node -e 'const u=new URL(process.argv[1]);process.stdout.write(u.port||process.argv[2])' "$1" "$2"; }

pg_up() {
  node -e '
    const { Client } = require("pg");
    const u = new URL(process.argv[1]); u.pathname = "/postgres";
    const c = new Client({ connectionString: u.toString(), connectionTimeoutMillis: 3000 });
    c.connect().then(() => c.end()).then(() => process.exit(0), () => process.exit(1));' "$PG_URL" 2>/dev/null
}

redis_up() {
  node -e '
    const net = require("net"); const u = new URL(process.argv[1]);
    const s = net.connect(Number(u.port || 6379), u.hostname, () => s.write("PING\r\n"));
    s.setTimeout(3000, () => process.exit(1));
    s.on("data", (d) => process.exit(String(d).includes("PONG") || String(d).includes("NOAUTH") ? 0 : 1));
    s.on("error", () => process.exit(1));' "$REDIS_URL" 2>/dev/null
}

docker_works() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

apt_install() {
  [ "$(id -u)" = 0 ] || die "need root to install $* (or start them yourself and set ABACUS_DATABASE_URL / ABACUS_REDIS_URL)"
  say "installing $* from Debian packages"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # name check-fn
  for _ in $(seq 1 60); do "$2" && return 0; sleep 1; done
  die "$1 did not come up"
}

ensure_postgres() {
  if pg_up; then say "Postgres: reachable at $(url_host "$PG_URL"):$(url_port "$PG_URL" 5432)"; return; fi
  local host; host=$(url_host "$PG_URL")
  case "$host" in 127.0.0.1|localhost|::1) ;; *) die "Postgres at $host is not reachable (ABACUS_DATABASE_URL)";; esac
  if docker_works; then
    say "Postgres: not running; starting it with docker compose (service postgres)"
    docker compose up -d postgres >/dev/null
  else
    command -v pg_ctlcluster >/dev/null 2>&1 || apt_install postgresql
    local ver; ver=$(ls /etc/postgresql | sort -V | tail -n1)
    local hba="/etc/postgresql/$ver/main/pg_hba.conf"
    if ! grep -q '^# abacus: local trust' "$hba"; then
      say "Postgres: allowing password-less connections from 127.0.0.1 for local development ($hba)"
      sed -i '1i # abacus: local trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
    fi
    say "Postgres: starting cluster $ver/main"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start 2>/dev/null || pg_ctlcluster --skip-systemctl-redirect "$ver" main reload
  fi
  wait_for Postgres pg_up
  say "Postgres: up"
}

ensure_redis() {
  if redis_up; then say "Redis: reachable at $(url_host "$REDIS_URL"):$(url_port "$REDIS_URL" 6379)"; return; fi
  local host; host=$(url_host "$REDIS_URL")
  case "$host" in 127.0.0.1|localhost|::1) ;; *) die "Redis at $host is not reachable (ABACUS_REDIS_URL)";; esac
  if docker_works; then
    say "Redis: not running; starting it with docker compose (service redis)"
    docker compose up -d redis >/dev/null
  else
    command -v redis-server >/dev/null 2>&1 || apt_install redis-server
    say "Redis: starting redis-server on port $(url_port "$REDIS_URL" 6379) (noeviction, as BullMQ needs)"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 --port "$(url_port "$REDIS_URL" 6379)" \
      --maxmemory-policy noeviction --save '' --appendonly no --dir /tmp
  fi
  wait_for Redis redis_up
  say "Redis: up"
}

ensure_node() {
  command -v node >/dev/null 2>&1 || die "Node.js 20 or newer is required (https://nodejs.org)"
  local major; major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || die "Node.js 20 or newer is required (found $(node --version))"
}

install_deps() {
  if [ -f node_modules/.package-lock.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
    say "dependencies: up to date"
  else
    say "installing npm dependencies (npm ci, from package-lock.json)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
}

# The browser tests' Chromium (Debian's `chromium`, driven by playwright-core): installed with apt when
# missing and this user may (root, or password-less sudo); otherwise those tests skip and say why.
chromium_bin() {
  local c
  for c in chromium chromium-browser google-chrome google-chrome-stable; do
    command -v "$c" 2>/dev/null && return 0
  done
  return 1
}

ensure_chromium() {
  if [ -n "${ABACUS_CHROMIUM:-}" ]; then say "Chromium: $ABACUS_CHROMIUM (ABACUS_CHROMIUM, for the browser tests)"; return; fi
  if chromium_bin >/dev/null; then say "Chromium: $(chromium_bin) (for the browser tests)"; return; fi
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n); else
      say "Chromium: not installed, and installing it needs root: the browser tests will be skipped (apt-get install -y chromium)"
      return
    fi
  fi
  say "Chromium: installing Debian's chromium with apt (for the browser tests)"
  if ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
    ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
    say "Chromium: $(chromium_bin) installed"
  else
    say "Chromium: could not be installed with apt: the browser tests will be skipped"
  fi
}
