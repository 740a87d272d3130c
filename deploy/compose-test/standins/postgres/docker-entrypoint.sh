#!/bin/bash
# The official postgres image's start-up contract, on Debian's server binaries: an empty
# PGDATA is initialised (superuser POSTGRES_USER with POSTGRES_PASSWORD, database
# POSTGRES_DB, /docker-entrypoint-initdb.d run once), then the server runs as postgres,
# listening on every interface of the container.
set -euo pipefail
if [ "${1:-}" != postgres ]; then exec "$@"; fi
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "${POSTGRES_HOST_AUTH_METHOD:-}" != trust ]; then
    echo "error: database is uninitialized and superuser password is not specified (POSTGRES_PASSWORD)" >&2
    exit 1
  fi
  : "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
  pwopt=()
  if [ -n "${POSTGRES_PASSWORD:-}" ]; then
    pwfile=$(mktemp)
    printf '%s' "$POSTGRES_PASSWORD" >"$pwfile" && chown postgres "$pwfile"
    pwopt=(--pwfile="$pwfile")
  fi
  as_pg initdb --username="$POSTGRES_USER" "${pwopt[@]}" --auth-local=trust -E UTF8 >/dev/null
  rm -f "${pwfile:-}"
  echo "host all all all ${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >>"$PGDATA/pg_hba.conf"
  as_pg pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    as_pg psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) as_pg psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$POSTGRES_DB" -f "$f" ;;
      *.sh) . "$f" ;;
    esac
  done
  as_pg pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "PostgreSQL init process complete; ready for start up."
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -c listen_addresses='*' "${@:2}"
