#!/usr/bin/env bash
# `npm pack` and `npm publish` run this first (the prepack script): dist/src built from scratch,
# so the tarball holds exactly the output of today's src/ — never the stale .js of a file that was
# renamed or deleted since the last build (tsc never removes outputs). It builds into a folder of
# its own inside dist/ and swaps dist/src in by renames, so a process reading dist/src
# meanwhile sees the old or the new tree, not a half-built one. tsconfig.pack.json: src/ only, no
# source maps (they would point at src/*.ts, which the package does not ship). A type error fails
# the pack.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p dist
out=$(mktemp -d dist/.pack-XXXXXX)
trap 'rm -rf "$out"' EXIT
node node_modules/typescript/bin/tsc -p tsconfig.pack.json --outDir "$out"
# rename(2), which never moves a folder into another: should a concurrent build recreate dist/src
# between the two renames, the second fails and the swap runs again.
node -e '
const fs = require("node:fs");
const [out, old] = process.argv.slice(1);
for (let i = 0; ; i++) {
  if (fs.existsSync("dist/src")) fs.renameSync("dist/src", `${old}-${i}`);
  try {
    fs.renameSync(`${out}/src`, "dist/src");
    break;
  } catch (err) {
    if (i === 5) throw err;
  }
}
for (const d of fs.readdirSync("dist")) if (d.startsWith(old.slice(5))) fs.rmSync(`dist/${d}`, { recursive: true, force: true });
' "$out" "dist/.src-old-$$"
