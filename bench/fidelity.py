#!/usr/bin/env python3
"""Fidelity benchmark (issue 75): simulated OS0-64 scans in a user's fused map against the real scans taken there.

The map is ../shared/data/balm/hall_fused.laz (149 real scans of a hall placed by their poses and merged, every
surface a layer several centimetres thick), prepared with `aerie prepare` and its default recipe at each
resolution. At each chosen pose i of ../shared/data/balm/poses.csv the script simulates a scan with `aerie scan`
(Aerie's renderer, and `--method marsim` on the same map) and scores it against the real scan `full<i>.pcd` with
../shared/tools/beamcmp.py's own functions, beam by beam. It prints one row per (resolution, sensor, method):
the mean over poses of beam_med, beam_sgn, in10_all and hit, with the spread (min..max) of beam_med and in10_all,
and writes every pose's figures as JSON lines with --jsonl.

    cargo build --release
    python3 bench/fidelity.py target/release/aerie --work /tmp/fid            # 0.1 and 0.2 m, ten poses
    python3 bench/fidelity.py target/release/aerie --poses all --sensors os0_64,os0_64_hall
    python3 bench/fidelity.py target/release/aerie --frames 5      # five frames at each still pose, merged

Prepared maps are kept in --work and reused when newer than the binary (--fresh prepares again).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SHARED = os.environ.get("AERIE_SHARED_DATA", os.path.join(HERE, "..", "..", "shared", "data"))


def load_beamcmp(shared):
    sys.path.insert(0, os.path.join(shared, "..", "tools"))
    import beamcmp  # noqa: E402
    import cloudio  # noqa: E402

    return beamcmp, cloudio


def read_poses(path):
    """{scan index: (x, y, z, roll, pitch, yaw)} from poses.csv, R = Rz(yaw) Ry(pitch) Rx(roll)."""
    poses = {}
    with open(path) as f:
        next(f)
        for line in f:
            c = line.strip().split(",")
            if len(c) < 14:
                continue
            i = int(c[0].removeprefix("full").removesuffix(".pcd"))
            t = [float(v) for v in c[2:5]]
            r = [float(v) for v in c[5:14]]
            roll = math.atan2(r[7], r[8])
            pitch = -math.asin(max(-1.0, min(1.0, r[6])))
            yaw = math.atan2(r[3], r[0])
            poses[i] = (*t, roll, pitch, yaw)
    return poses


def available(shared, poses):
    return sorted(i for i in poses if os.path.exists(os.path.join(shared, "balm", f"full{i}.pcd")))


def choose(avail, spec):
    if spec == "all":
        return avail
    if spec.startswith("every"):
        # every N-th of the available scans: spread over the whole sequence, no pose picked by hand.
        n = max(1, len(avail) // int(spec[5:]))
        return avail[::n][: int(spec[5:])]
    return [int(v) for v in spec.split(",")]


def rotation(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch), math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def score(beamcmp, cloudio, sim_path, real_path, map_pose=None):
    sim = cloudio.xyz(cloudio.read(sim_path))
    if map_pose is not None:
        # Frames merged by `aerie scan --merge` are in the map frame: back into the sensor frame of the pose.
        x, y, z, roll, pitch, yaw = map_pose
        sim = (sim - np.array([x, y, z])) @ rotation(roll, pitch, yaw)
    real = cloudio.xyz(cloudio.read(real_path))
    el_nom = np.linspace(-45.46, 45.85, 64)
    bs, _ = beamcmp.beams(sim, 1024, el_nom)
    br, _ = beamcmp.beams(real, 1024, el_nom)
    both = [k for k in br if k in bs]
    sdr = np.array([bs[k] - br[k] for k in both]) if both else np.array([np.inf])
    dr = np.abs(sdr)
    return dict(
        beam_med=float(np.median(dr)),
        beam_sgn=float(np.median(sdr)),
        in10_all=float((dr <= 0.10).sum()) / max(1, len(br)),
        hit=len(both) / max(1, len(br)),
    )


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")


def prepare(aerie, laz, work, res, fresh, extra):
    tag = "_".join([f"{res:g}"] + [a.strip("-") for a in extra])
    out = os.path.join(work, f"hall_fused_{tag}.amap")
    if fresh or not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(aerie):
        run([aerie, "prepare", laz, "-o", out, "--resolution", f"{res:g}", *extra])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("aerie")
    ap.add_argument("--shared", default=DEFAULT_SHARED)
    ap.add_argument("--work", default="fidelity_work")
    ap.add_argument("--resolutions", default="0.1,0.2")
    ap.add_argument("--poses", default="every10", help="'all', 'everyN' (N spread over the 41), or i,j,k")
    ap.add_argument("--sensors", default="os0_64,os0_64_hall", help="presets or sensor files (.toml)")
    ap.add_argument("--methods", default="aerie,marsim")
    ap.add_argument("--prepare-args", default="", help="extra arguments for aerie prepare, space-separated")
    ap.add_argument("--scan-args", default="", help="extra arguments for aerie scan, space-separated")
    ap.add_argument("--frames", type=int, default=1, help="frames accumulated at each still pose (--merge)")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--jsonl")
    a = ap.parse_args()

    beamcmp, cloudio = load_beamcmp(a.shared)
    poses = read_poses(os.path.join(a.shared, "balm", "poses.csv"))
    chosen = choose(available(a.shared, poses), a.poses)
    os.makedirs(a.work, exist_ok=True)
    laz = os.path.join(a.shared, "balm", "hall_fused.laz")
    log = open(a.jsonl, "w") if a.jsonl else None
    rows = []
    print(f"poses: {','.join(map(str, chosen))}", flush=True)
    for res in [float(r) for r in a.resolutions.split(",")]:
        amap = prepare(a.aerie, laz, a.work, res, a.fresh, a.prepare_args.split())
        for sensor in a.sensors.split(","):
            for method in a.methods.split(","):
                per = []
                for i in chosen:
                    pose = ",".join(f"{v:.9f}" for v in poses[i])
                    tag = os.path.splitext(os.path.basename(sensor))[0]  # a preset's name or a sensor file's
                    sim = os.path.join(a.work, f"sim_{res:g}_{tag}_{method}_{i}.pcd")
                    cmd = [a.aerie, "scan", amap, "--sensor", sensor, "--pose", pose, "-o", sim]
                    if method != "aerie":
                        cmd += ["--method", method]
                    if a.frames > 1:
                        cmd += ["--frames", str(a.frames), "--merge"]
                    run(cmd + a.scan_args.split())
                    real = os.path.join(a.shared, "balm", f"full{i}.pcd")
                    s = score(beamcmp, cloudio, sim, real, poses[i] if a.frames > 1 else None)
                    s.update(res=res, sensor=sensor, method=method, pose=i)
                    per.append(s)
                    if log:
                        log.write(json.dumps(s) + "\n")
                        log.flush()
                rows.append(summarise(res, sensor, method, per))
                print(rows[-1], flush=True)
    print()
    print("| r_map | sensor | method | beam_med (m) | beam_sgn (m) | in10_all | hit | beam_med min..max | in10_all min..max |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(r)


def summarise(res, sensor, method, per):
    m = {k: statistics.fmean(p[k] for p in per) for k in ("beam_med", "beam_sgn", "in10_all", "hit")}
    bm = [p["beam_med"] for p in per]
    ia = [p["in10_all"] for p in per]
    return (
        f"| {res:g} | {sensor} | {method} | {m['beam_med']:.4f} | {m['beam_sgn']:+.4f} | {m['in10_all']:.3f} | "
        f"{m['hit']:.3f} | {min(bm):.3f}..{max(bm):.3f} | {min(ia):.3f}..{max(ia):.3f} |"
    )


if __name__ == "__main__":
    main()
