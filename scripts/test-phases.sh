#!/usr/bin/env bash
# Run the PostGIS phase and the embedded phase of `make test`: side by side by default (about a
# third less wall time on two cores), one after the other with TEST_SERIAL=1. The embedded phase
# writes to a log that is printed once the PostGIS phase is done, so the two outputs never
# interleave. Fails when either phase fails, and says which.
set -u
postgis="$1"
embedded="$2"

if [ "${TEST_SERIAL:-0}" = 1 ]; then
  $postgis; pg=$?
  $embedded; em=$?
else
  log=$(mktemp)
  # Its own process group, so an interrupted run stops the embedded phase too.
  set -m
  $embedded >"$log" 2>&1 &
  embedded_pid=$!
  set +m
  trap 'kill -- -"$embedded_pid" 2>/dev/null; rm -f "$log"' EXIT
  trap 'exit 130' INT TERM
  echo "== PostGIS phase (the embedded phase runs beside it; its output follows) =="
  $postgis; pg=$?
  wait "$embedded_pid"; em=$?
  echo "== Embedded phase (SpatiaLite) =="
  cat "$log"
fi

echo "== make test: PostGIS phase exit $pg, embedded phase exit $em =="
[ "$pg" = 0 ] && [ "$em" = 0 ]
