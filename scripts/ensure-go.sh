#!/usr/bin/env bash
# Prints the path of a Go toolchain (>= 1.26) and exits 0, or explains and exits 1. Looks at $GO,
# then `go` on PATH, then /usr/local/go/bin/go (where the machine image installs it, often not on
# PATH). Usage: GO=$(bash scripts/ensure-go.sh)
set -euo pipefail
for cand in "${GO:-}" "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
  [ -n "$cand" ] && [ -x "$cand" ] || continue
  ver=$("$cand" env GOVERSION 2>/dev/null || true) # e.g. go1.26.8
  minor=$(echo "$ver" | sed -nE 's/^go1\.([0-9]+).*/\1/p')
  if [ -n "$minor" ] && [ "$minor" -ge 26 ]; then
    echo "$cand"
    exit 0
  fi
done
echo "Go >= 1.26 not found (set GO=/path/to/go, or install it at /usr/local/go)" >&2
exit 1
