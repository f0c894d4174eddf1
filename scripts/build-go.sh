#!/usr/bin/env bash
# Builds the Go peer's commands into dist/go/ (echomq-worker, echomq-produce), fetching its
# modules from the Go module proxy on first use (peers/go/go.sum pins them).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=$(bash scripts/ensure-go.sh)
mkdir -p dist/go
(cd peers/go && "$GO" mod download && "$GO" build -o ../../dist/go/ ./cmd/...)
