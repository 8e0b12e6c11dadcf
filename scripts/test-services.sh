#!/usr/bin/env bash
# Start PostgreSQL 15 (with PostGIS) and Redis for the test suite when they are not running, and
# make sure the test role exists. Idempotent.
set -eu
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
PGUSER_NAME="${TEST_PG_USER:-platform}"
PGPASS="${TEST_PG_PASSWORD:-platform}"

if ! pg_lsclusters -h 2>/dev/null | grep -q '^15 \+main'; then
  $SUDO pg_createcluster 15 main >/dev/null
fi
if ! pg_lsclusters -h | awk '$1==15 && $2=="main" {print $4}' | grep -q online; then
  $SUDO pg_ctlcluster 15 main start
fi
for _ in $(seq 1 30); do
  $SUDO runuser -u postgres -- pg_isready -q -h 127.0.0.1 -p 5432 && break
  sleep 1
done
# A superuser role: the test run creates its own databases and the postgis extension in them.
$SUDO runuser -u postgres -- psql -q -h /var/run/postgresql -v ON_ERROR_STOP=1 <<SQL >/dev/null
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${PGUSER_NAME}') THEN
    CREATE ROLE ${PGUSER_NAME} LOGIN SUPERUSER PASSWORD '${PGPASS}';
  END IF;
END \$\$;
SQL
$SUDO runuser -u postgres -- psql -q -h /var/run/postgresql -tc "SELECT 1 FROM pg_database WHERE datname='${PGUSER_NAME}'" | grep -q 1 \
  || $SUDO runuser -u postgres -- createdb -h /var/run/postgresql -O "${PGUSER_NAME}" "${PGUSER_NAME}"

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.5; done
fi
echo "PostgreSQL/PostGIS and Redis are running."
