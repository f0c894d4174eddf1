#!/usr/bin/env bash
# Finds Debian's chromium (the dashboard's browser test drives it with puppeteer-core); when it is
# missing and we are root, installs the package. No browser is downloaded by npm.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "chromium not found; install Debian's chromium package (apt-get install chromium) or run as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
