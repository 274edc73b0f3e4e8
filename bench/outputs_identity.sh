#!/usr/bin/env bash
# Usage: bench/outputs_identity.sh AERIE_BIN OUTDIR
# Writes a fixed set of maps, exports, conversions, scans (seven sensors and the MARSIM method) and a flight's
# recording from the shared real scans (../shared/data beside the repository), so that a change meant to keep
# every output (a refactoring, a split) can be checked byte for byte against the build before it:
#   bench/outputs_identity.sh OLD_BIN /tmp/old && bench/outputs_identity.sh NEW_BIN /tmp/new
#   python3 bench/outputs_compare.py /tmp/old /tmp/new      # prints IDENTICAL, or what differs
set -euo pipefail
BIN=$(realpath "$1"); OUT=$2; REPO=$(realpath "$(dirname "$0")/.."); D=$(realpath "$REPO/../shared/data")
rm -rf "$OUT"; mkdir -p "$OUT"; cd "$OUT"
export RAYON_NUM_THREADS=2
$BIN prepare $D/las/autzen_trim.laz -o autzen.amap >/dev/null 2>&1
$BIN prepare $D/maps/hall_map_20cm.pcd -o hall.amap --resolution 0.2 >/dev/null 2>&1
$BIN prepare $D/e57/pumpA_tls.e57 -o pump.amap >/dev/null 2>&1
$BIN prepare $D/las/lone_star_tls.laz -o lone.amap >/dev/null 2>&1
$BIN prepare $D/ply/stanford_bun000_ascii.ply -o bunny.amap >/dev/null 2>&1
for f in pcd ply las laz e57 xyz bin; do $BIN export autzen.amap -o autzen_export.$f >/dev/null 2>&1; done
$BIN export hall.amap -o hall_marsim.pcd --for marsim >/dev/null 2>&1
$BIN export lone.amap -o lone_ros.pcd --for ros >/dev/null 2>&1
$BIN export pump.amap -o pump.e57 >/dev/null 2>&1
$BIN convert $D/pcd/hdl32_scan_binary.pcd -o hdl.laz >/dev/null 2>&1
$BIN convert $D/e57/bunnyDouble.e57 -o bunny.ply >/dev/null 2>&1
P=2.541082,4.504131,0.338537,-0.238357059,0.137686623,1.825842042
for s in os0_64 os0_64_hall avia mid360 os1_128 d455 hdl64e; do
  $BIN scan hall.amap --sensor $s --pose $P -o scan_$s.pcd >/dev/null 2>&1 || echo "scan $s failed"
done
$BIN scan hall.amap --sensor os0_64 --pose $P --method marsim -o scan_marsim.pcd >/dev/null 2>&1
$BIN fly hall.amap --mission $REPO/examples/missions/hall_goals.toml -o fly --duration 6 >/dev/null 2>&1 || echo "fly failed"
rm -f fly/flight.png   # a picture: compare it by eye
ls -la "$OUT" | wc -l
