#!/usr/bin/env bash
# Finds valkey-server; when it is missing and we are root, installs Debian's package from
# bookworm-backports, using the same mirror as the machine's existing Debian sources.
set -euo pipefail
if command -v valkey-server >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "valkey-server not found; install valkey-server 8 (Debian bookworm-backports) or run as root" >&2
  exit 1
fi
mirror=""
for f in /etc/apt/sources.list.d/*.sources; do
  [ -e "$f" ] || continue
  # deb822 stanzas: take the URIs of a stanza whose Suites include plain "bookworm".
  mirror=$(awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm( |\n|$)/ && !/security/ {for(i=1;i<=NF;i++) if($i=="URIs:"){print $(i+1); exit}}' "$f")
  [ -n "$mirror" ] && break
done
if [ -z "$mirror" ]; then
  mirror=$(grep -hE '^deb .* bookworm( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2; exit}' || true)
fi
if [ -z "$mirror" ]; then echo "no Debian bookworm mirror found in apt sources" >&2; exit 1; fi
cat > /etc/apt/sources.list.d/echomq-backports.sources <<SRC
Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq -t bookworm-backports valkey-server valkey-tools >/dev/null
# The package starts a system service on 6379; tests never use it, stop it to save memory.
(service valkey-server stop || systemctl stop valkey-server || pkill -x valkey-server) >/dev/null 2>&1 || true
command -v valkey-server >/dev/null
