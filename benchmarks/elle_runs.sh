#!/usr/bin/env bash
# The full Elle runs of issue 5: 8 clients x 20000 transactions against tique on the embedded engine and over
# tique serve (processes), each negative control, and native MonetDB. Results in results/elle-*/results.json;
# a summary table is printed at the end. Takes a while (minutes per run on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
TXNS=${TXNS:-20000}
PY=.venv/bin/python
tmp=$(mktemp -d)
trap 'kill $serve_pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
run() { "$PY" -m tique.cli elle run "$@" --clients 8 --txns "$TXNS" || true; }
run "monetdbe://$tmp/embedded" --out results/elle-tique-embedded
"$PY" -m tique.cli serve "$tmp/served" --port 50431 > "$tmp/serve.log" & serve_pid=$!
for _ in $(seq 60); do grep -q "ready on" "$tmp/serve.log" 2>/dev/null && break; sleep 1; done
run "monetdb://monetdb:monetdb@127.0.0.1:50431/served" --processes --out results/elle-tique-mapi
kill $serve_pid; wait $serve_pid || true
run "monetdbe://$tmp/neg1" --negative read-latest --out results/elle-read-latest
run "monetdbe://$tmp/neg2" --negative skip-certification --out results/elle-skip-certification
run "monetdbe://$tmp/native" --system native --out results/elle-native
"$PY" - <<'PY'
import json, pathlib
for d in sorted(pathlib.Path("results").glob("elle-*")):
    r = json.loads((d / "results.json").read_text())
    print(f"{d.name:28} valid SI: {str(r['valid?']):5}  abort rate {r['abort_rate']:.1%}  anomalies: {', '.join(r['anomaly-types']) or 'none'}")
PY
