#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600), two at a time, from the seeds docs/formats.md describes, and
# prints one table row per target (executions, coverage at the seeds and at the end, corpus, crash or not) in
# the form of docs/formats.md's tables. Needs `cargo install cargo-fuzz`, a nightly toolchain, a release build
# of aerie (to make the seeds) and ../shared/data.
#
#   cargo build --release && bash fuzz/run_all.sh [SECONDS]
#
# Corpora start empty each run (fuzz/corpus/TARGET, git-ignored); logs go to fuzz/logs/ (git-ignored as well).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
A=target/release/aerie
D=${AERIE_SHARED_DATA:-../shared/data}
S=$(mktemp -d /tmp/aerie-fuzz-seeds.XXXX)
L=fuzz/logs
mkdir -p "$L" "$S"/{amap,las,e57,ply,pcd,xyz,kitti}

# Seeds: three small shared files, maps prepared from them, and exports of those maps in every format.
"$A" prepare -q "$D/pcd/car6_binary_compressed.pcd" -o "$S/amap/car6_r1.amap" --resolution 1.0 2>/dev/null
"$A" prepare -q "$D/pcd/car6_binary_compressed.pcd" -o "$S/amap/car6_r05.amap" --resolution 0.5 --no-sor 2>/dev/null
"$A" prepare -q "$D/e57/tinyCartesianFloatRgb.e57" -o "$S/amap/tiny_rgb.amap" --resolution 0.5 2>/dev/null
"$A" prepare -q "$D/las/las11_airborne_small.laz" -o "$S/amap/las11.amap" --resolution 20 2>/dev/null
rm -f "$S"/amap/*.report.json
cp "$D/las/las11_airborne_small.laz" "$S/las/"
cp "$D/e57/tinyCartesianFloatRgb.e57" "$S/e57/"
cp "$D/pcd/car6_binary_compressed.pcd" "$S/pcd/"
export_to() { "$A" export "$@" >/dev/null 2>&1 || { echo "aerie export $* failed" >&2; exit 1; }; }
export_to "$S/amap/car6_r1.amap" "$S/las/car6.las"
export_to "$S/amap/car6_r1.amap" "$S/e57/car6.e57"
export_to "$S/amap/car6_r1.amap" "$S/ply/car6.ply" --encoding ascii
export_to "$S/amap/car6_r1.amap" "$S/pcd/car6.pcd" --encoding ascii
export_to "$S/amap/car6_r1.amap" "$S/xyz/car6.xyz"
export_to "$S/amap/car6_r1.amap" "$S/kitti/car6.bin"
export_to "$S/amap/tiny_rgb.amap" "$S/las/tiny.laz"
export_to "$S/amap/tiny_rgb.amap" "$S/las/tiny14.las" --las-version 1.4
export_to "$S/amap/tiny_rgb.amap" "$S/ply/tiny.ply"
export_to "$S/amap/tiny_rgb.amap" "$S/pcd/tiny.pcd"
export_to "$S/amap/tiny_rgb.amap" "$S/xyz/tiny.csv"
export_to "$S/amap/las11.amap" "$S/ply/las11.ply" --encoding binary-big-endian
export_to "$S/amap/las11.amap" "$S/kitti/las11.bin"

cargo +nightly fuzz build -O >"$L/build.log" 2>&1
run() {
    local t=$1 seeds=$S/$1
    [[ $t == amap* ]] && seeds=$S/amap
    rm -rf "fuzz/corpus/$t" && mkdir -p "fuzz/corpus/$t"
    nice -n 10 cargo +nightly fuzz run -O -j1 "$t" "fuzz/corpus/$t" "$seeds" -- \
        -max_total_time="$seconds" -seed=1 -print_final_stats=1 >"$L/$t.log" 2>&1 || true
}
for pair in "amap_sealed ply" "pcd xyz" "las e57" "amap kitti"; do
    set -- $pair
    run "$1" &
    run "$2" &
    wait
done
rm -rf "$S"

echo "| target | seeds | executions | exec/s | cov: seeds | cov: end | corpus | result |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
python3 - "$L" <<'EOF'
import glob, os, re, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.log")):
    t = os.path.basename(f)[:-4]
    if t == "build":
        continue
    s = open(f, errors="replace").read().replace("\r", "\n")
    seeds = re.search(r"INFO:\s+(\d+) files found in /tmp/aerie-fuzz-seeds", s)
    inited = re.search(r"INITED cov: (\d+)", s)
    covs = re.findall(r"cov: (\d+)", s)
    corpus = re.findall(r"corp: (\d+)/", s)
    runs = re.search(r"stat::number_of_executed_units: (\d+)", s)
    rate = re.search(r"stat::average_exec_per_sec:\s+(\d+)", s)
    crash = re.search(r"==\d+==ERROR|panicked|deadly signal|Test unit written", s)
    cell = lambda m: f"{int(m.group(1)):,}" if m else "?"
    print(f"| `{t}` | {seeds.group(1) if seeds else '?'} | {cell(runs)} | {cell(rate)} | {cell(inited)} | "
          f"{int(covs[-1]):,} | {int(corpus[-1]) if corpus else 0:,} | {'**crash**: see ' + f if crash else 'no crash'} |"
          if covs else f"| `{t}` | did not start: see {f} |")
EOF
