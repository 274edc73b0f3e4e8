#!/usr/bin/env bash
# Takes the user guide's screenshots of the app by driving the real window under Xvfb, step by step, as a
# person would: import lone_star_tls.laz, preview and run the cleaning, fly a Mid-360 quad, export for MARSIM.
#
#   apt-get install xvfb xdotool imagemagick mesa-vulkan-drivers
#   cargo build --release && bash docs/images/app_screenshots.sh [../shared/data/las/lone_star_tls.laz]
#
# Clicks are at fixed window coordinates (1280x800 window, default layout); if the layout changes, update them.
set -euo pipefail
cd "$(dirname "$0")/../.."
scan=${1:-../shared/data/las/lone_star_tls.laz}
out=docs/images
work=$(mktemp -d)
export DISPLAY=:77
Xvfb :77 -screen 0 1280x800x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null; pkill -f "aerie app --size 1280x800" || true; rm -rf "$work"' EXIT
sleep 1
HOME=$work WGPU_BACKEND=vulkan target/release/aerie app --size 1280x800 "$scan" >"$work/app.log" 2>&1 &
sleep 10
win=$(xdotool search --name Aerie | head -1)
xdotool windowfocus "$win"
click() { xdotool mousemove "$1" "$2" click 1; sleep "${3:-1}"; }
shot() { import -window root "$work/$1.png" && convert "$work/$1.png" -colors 256 "$out/app_$1.png"; }
click 36 246                      # the file's info
shot 1_import
click 115 18                      # 2 Clean
click 62 357 5                    # Preview outliers
xdotool mousemove 850 420; for _ in 1 2 3; do xdotool click 4; sleep 0.3; done; sleep 3
shot 2_clean
click 52 398 10                   # Run cleaning
shot 3_map
click 256 18 2                    # 4 Simulate
click 172 193; click 690 560      # start on the ground left of the tree
click 225 193; click 1160 520     # goal right of it
click 24 261 14                   # Fly
shot 4_simulate
click 40 41 2                     # 5 Export (MARSIM is the default choice)
click 97 303; xdotool type --delay 30 "$work/lone_marsim.pcd"; sleep 0.5
click 35 327 3                    # Export
shot 5_export
test -s "$work/lone_marsim.pcd" && echo "screenshots written to $out/app_*.png"
