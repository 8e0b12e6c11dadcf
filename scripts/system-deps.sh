#!/usr/bin/env bash
# Install the Debian packages a target needs, only those missing. Usage: system-deps.sh run|test|browser
set -eu
case "${1:-run}" in
  run) pkgs="python3 python3-venv gdal-bin libsqlite3-mod-spatialite libgeos-c1v5 libproj25" ;;
  test) pkgs="python3 python3-venv gdal-bin libsqlite3-mod-spatialite libgeos-c1v5 libproj25 postgresql-15-postgis-3 postgresql-15 redis-server" ;;
  browser) pkgs="chromium chromium-driver" ;;
  *) echo "unknown set $1" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "Installing Debian packages:$missing"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
