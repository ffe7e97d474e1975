#!/usr/bin/env bash
# The comparison runs behind benchmarks/RESULTS.md, one after another on an otherwise idle machine, then the
# report. About 50 minutes on a 2-core machine. Usage: benchmarks/run_all.sh [python]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
W=${W:-2}
SCALE=${SCALE:-0.1}
ALL=tique,tique-mapi,monetdb,monetdb-mapi,postgres
$PY -m benchmarks tpcc --systems $ALL --warehouses "$W" --scale "$SCALE" --clients 1,2,4,8 --duration 20 --warmup 5 --out results/tpcc.json
$PY -m benchmarks ch --systems tique,monetdb,postgres --warehouses "$W" --scale "$SCALE" --clients 4 --oltp-seconds 30 --repeat 5 --out results/ch.json
$PY -m benchmarks ch --systems tique,monetdb,postgres --warehouses "$W" --scale "$SCALE" --clients 4 --oltp-seconds 30 --repeat 5 --checkpointer --out results/ch_checkpointer.json
$PY -m benchmarks htap --systems tique,monetdb,postgres --warehouses "$W" --scale "$SCALE" --grid 4:0,4:1,4:2,0:2,2:2 --duration 20 --warmup 5 --out results/htap.json
$PY -m benchmarks htap --systems tique,monetdb,postgres --warehouses "$W" --scale "$SCALE" --grid 4:0,4:2 --olap-workers 1 --duration 20 --warmup 5 --out results/htap_workers1.json
$PY -m benchmarks htap --systems tique,monetdb,postgres --warehouses "$W" --scale "$SCALE" --grid 4:0,4:2 --olap-workers 1 --olap-slots 1 --duration 20 --warmup 5 --out results/htap_slots1.json
$PY -m benchmarks contention --systems tique,monetdb,postgres --warehouses 4 --scale "$SCALE" --clients 4 --duration 20 --warmup 5 --out results/contention.json
$PY -m benchmarks longtx --systems tique,monetdb,postgres --warehouses "$W" --scale "$SCALE" --clients 4 --rows 50 --duration 30 --warmup 5 --out results/longtx.json
$PY -m benchmarks profile --systems tique,monetdb,postgres --warehouses "$W" --scale "$SCALE" --count 100 --out results/profile.json
$PY -m benchmarks report
