#!/usr/bin/env bash
# The comparison runs, one after another on an otherwise idle machine, then the reports.
# Usage: benchmarks/run_all.sh [python]
#
# Default (issue 14): TPC-C at scale 1.0 for 1, 4 and 10 warehouses, clients 1, 4 and 16, both formulations
# (standard and batched), for tique (embedded and MAPI), native MonetDB (default and OLTP pipeline) and
# PostgreSQL; CH-benCHmark after the OLTP run at 4 and 10 warehouses; HTAP with 2 analytical clients at 4
# warehouses. JSON, markdown and PNG per run in $OUT (default results/scale), then `python -m benchmarks.curves`
# writes benchmarks/RESULTS_CURVES.md and benchmarks/plots/*.png. About 3 hours on a 2-core machine at the
# default 60 s runs (10 s warm-up). The steps run in priority order (the issue's target configuration first),
# so an interrupted run still has the most important figures.
#
# SET=small: the earlier comparison behind benchmarks/RESULTS.md (2 warehouses at scale 0.1, about 50 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}

if [ "${SET:-scale}" = small ]; then
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
  exit 0
fi

OUT=${OUT:-results/scale}
DURATION=${DURATION:-60}
WARMUP=${WARMUP:-10}
CH_REPEAT=${CH_REPEAT:-5}
OTHER_CLIENTS=${OTHER_CLIENTS:-1,4,16}           # clients at 1 and 10 warehouses
OTHER_FORMS=${OTHER_FORMS:-standard batched}     # formulations at 1 and 10 warehouses
ALL=${SYSTEMS:-tique,tique-mapi,monetdb,monetdb-oltp,postgres}
OLAP=${OLAP_SYSTEMS:-tique,monetdb,monetdb-oltp,postgres}
RUN="--duration $DURATION --warmup $WARMUP --scale 1.0"
mkdir -p "$OUT"
tpcc() {  # warehouses formulation clients name
  $PY -m benchmarks tpcc --systems "$ALL" --warehouses "$1" --formulation "$2" --clients "$3" $RUN --out "$OUT/tpcc_w$1_$2_$4.json"
}
tpcc 4 standard 4 c4
tpcc 4 batched 4 c4
for form in standard batched; do  # the same clients at scale 0.1: the NewOrder p50 target
  $PY -m benchmarks tpcc --systems tique --warehouses 4 --scale 0.1 --formulation "$form" --clients 4 --duration "$DURATION" --warmup "$WARMUP" --out "$OUT/tpcc_w4_${form}_s0.1.json"
done
tpcc 4 standard 1,16 c1-16
for form in $OTHER_FORMS; do
  for w in 1 10; do
    tpcc "$w" "$form" "$OTHER_CLIENTS" all
  done
done
$PY -m benchmarks ch --systems "$OLAP" --warehouses 4 --scale 1.0 --clients 4 --oltp-seconds "$DURATION" --repeat "$CH_REPEAT" --out "$OUT/ch_w4.json"
$PY -m benchmarks htap --systems "$OLAP" --warehouses 4 --grid 4:0,4:2 $RUN --out "$OUT/htap_w4.json"
tpcc 4 batched 1,16 c1-16
$PY -m benchmarks ch --systems "$OLAP" --warehouses 10 --scale 1.0 --clients 4 --oltp-seconds "$DURATION" --repeat "$CH_REPEAT" --out "$OUT/ch_w10.json"
for form in standard batched; do  # statements, engine calls and time per transaction type, one client
  $PY -m benchmarks profile --systems "$OLAP" --warehouses 4 --scale 1.0 --formulation "$form" --count 50 --out "$OUT/profile_w4_$form.json"
done
$PY -m benchmarks.curves "$OUT"
