#!/usr/bin/env python3
"""Aerie's filters.moving and DUFOMap side by side on the same sequences (issue 78, docs/benchmarks.md).

Each sequence is a folder in the KTH-RPL DynamicMap_Benchmark layout (pcd/NNNNNN.pcd in the world frame with
the sensor pose in VIEWPOINT, gt_cloud.pcd labelled in intensity). Both methods clean the accumulated frames,
and the same scorer (Aerie's dynamic_bench::score: a ground-truth point is kept when an output point lies within
0.05 m) gives SA, DA and AA. Wall time: the whole run of each (reading the frames, the method, writing the
cleaned map), and the method alone.

    python3 -m pip install dufomap
    cargo build --profile fast -p aerie-simcore --example moving_bench
    target/fast/examples/moving_bench generate /tmp/moving          # the simulated sequences
    python3 bench/dynamic_peers.py /tmp/moving/demo_avia /tmp/moving/demo_os0 /tmp/moving/hall_avia \\
        /tmp/moving/hall_os0

A folder without ground truth (the real balm hall written in the layout by `moving_bench balm ... OUT` with
BALM_LAYOUT=1) is cleaned by DUFOMap alone, with what it removes counted by height band; `--aerie-removed
OUT/removed.pcd` counts Aerie's removed points (from the same `moving_bench balm` run) beside it:

    BALM_LAYOUT=1 target/fast/examples/moving_bench balm ../shared/data/balm/hall_fused.laz \\
        ../shared/data/balm/poses.csv /tmp/moving/balm
    python3 bench/dynamic_peers.py /tmp/moving/balm/layout --aerie-removed /tmp/moving/balm/removed.pcd

DUFOMap runs with its paper's parameters (resolution 0.1 m, d_s 0.2, d_p 1) on 2 threads, as in its README:
run() on every frame in the world frame, oncePropagateCluster(if_propagate=True), then segment() on the
accumulated points.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

TOOL = os.environ.get("MOVING_BENCH", "target/fast/examples/moving_bench")
TYPES = {("F", 4): "<f4", ("F", 8): "<f8", ("U", 1): "u1", ("U", 2): "<u2", ("U", 4): "<u4",
         ("I", 1): "i1", ("I", 2): "<i2", ("I", 4): "<i4"}


def read_pcd(path):
    """x y z (N x 3 float64) and the VIEWPOINT as [x y z qw qx qy qz] of a binary PCD."""
    with open(path, "rb") as f:
        data = f.read()
    head = {}
    pos = 0
    while True:
        end = data.index(b"\n", pos)
        line = data[pos:end].decode().strip()
        pos = end + 1
        if not line or line.startswith("#"):
            continue
        key, *vals = line.split()
        head[key] = vals
        if key == "DATA":
            break
    if head["DATA"][0] != "binary":
        sys.exit(f"{path}: only binary PCD is read here")
    dtype = np.dtype([(n, TYPES[(t, int(s))]) for n, t, s in zip(head["FIELDS"], head["TYPE"], head["SIZE"])])
    n = int(head["POINTS"][0])
    rec = np.frombuffer(data, dtype=dtype, count=n, offset=pos)
    xyz = np.stack([rec["x"], rec["y"], rec["z"]], axis=1).astype(np.float64)
    view = np.array([float(v) for v in head.get("VIEWPOINT", "0 0 0 1 0 0 0".split())])
    return xyz, view


def write_pcd(path, xyz):
    """x y z as float64 (world coordinates, no offset), binary."""
    xyz = np.ascontiguousarray(xyz, dtype="<f8")
    n = len(xyz)
    header = ("# .PCD v0.7\nVERSION 0.7\nFIELDS x y z\nSIZE 8 8 8\nTYPE F F F\nCOUNT 1 1 1\n"
              f"WIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA binary\n")
    with open(path, "wb") as f:
        f.write(header.encode())
        f.write(xyz.tobytes())


def score(seq, cleaned):
    out = subprocess.run([TOOL, "score", seq, cleaned], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_aerie(seq, tmp):
    out = os.path.join(tmp, "aerie.pcd")
    t0 = time.perf_counter()
    res = subprocess.run([TOOL, "clean", seq, out], check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    info = json.loads(res)
    return out, wall, info["stage_s"]


def run_dufomap(seq, tmp, threads):
    from dufomap import dufomap

    out = os.path.join(tmp, "dufomap.pcd")
    t0 = time.perf_counter()
    frames = [read_pcd(p) for p in sorted(glob.glob(os.path.join(seq, "pcd", "*.pcd")))]
    t1 = time.perf_counter()
    m = dufomap(0.1, 0.2, 1, num_threads=threads)
    for xyz, view in frames:
        m.run(xyz, view.tolist(), cloud_transform=False)
    m.oncePropagateCluster(if_propagate=True, if_cluster=False)
    cloud = np.concatenate([xyz for xyz, _ in frames])
    labels = m.segment(cloud, frames[-1][1].tolist(), cloud_transform=False)
    t2 = time.perf_counter()
    write_pcd(out, cloud[labels == 0])
    wall = time.perf_counter() - t0
    run_dufomap.labels = labels
    return out, wall, t2 - t1


def bands(z, floor):
    """Counts of points per 1 m height band above `floor` (the 1st percentile of the map's heights)."""
    edges = np.arange(-1.0, 16.0, 1.0)
    h, _ = np.histogram(z - floor, bins=np.concatenate([[-1e9], edges, [1e9]]))
    return " ".join(f"{int(n)}" for n in h)


def unlabelled(seq, threads, aerie_removed):
    """DUFOMap (and Aerie's removed points, when given) on a layout without ground truth: removed share and
    removed points per height band."""
    with tempfile.TemporaryDirectory() as tmp:
        _, wall, alone = run_dufomap(seq, tmp, threads)
    labels = run_dufomap.labels
    cloud = np.concatenate([read_pcd(p)[0] for p in sorted(glob.glob(os.path.join(seq, "pcd", "*.pcd")))])
    floor = np.percentile(cloud[:, 2], 1.0)
    print(f"{len(cloud)} points; height bands (m above the 1st percentile, {floor:.2f}): <-1, then 1 m from -1 to 16, >16")
    print(f"all points: {bands(cloud[:, 2], floor)}")
    gone = int((labels == 1).sum())
    print(f"DUFOMap removed {gone} ({100 * gone / len(cloud):.3f}%), wall {wall:.2f} s, method {alone:.2f} s, "
          f"by band: {bands(cloud[labels == 1][:, 2], floor)}")
    if aerie_removed:
        z = read_pcd(aerie_removed)[0][:, 2]
        print(f"Aerie removed {len(z)} ({100 * len(z) / len(cloud):.3f}%), by band: {bands(z, floor)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sequences", nargs="+")
    ap.add_argument("--threads", type=int, default=2, help="DUFOMap threads (Aerie uses rayon's default)")
    ap.add_argument("--aerie-removed", help="Aerie's removed.pcd, for a folder without ground truth")
    args = ap.parse_args()
    if len(args.sequences) == 1 and not os.path.exists(os.path.join(args.sequences[0], "gt_cloud.pcd")):
        unlabelled(args.sequences[0], args.threads, args.aerie_removed)
        return
    print(f"{'sequence':<12} {'method':<8} {'SA %':>7} {'DA %':>7} {'AA %':>7} {'wall s':>7} {'method s':>8}")
    for seq in args.sequences:
        name = os.path.basename(os.path.normpath(seq))
        with tempfile.TemporaryDirectory() as tmp:
            for method, runner in [("aerie", lambda: run_aerie(seq, tmp)),
                                   ("dufomap", lambda: run_dufomap(seq, tmp, args.threads))]:
                out, wall, alone = runner()
                s = score(seq, out)
                print(f"{name:<12} {method:<8} {100 * s['sa']:7.2f} {100 * s['da']:7.2f} {100 * s['aa']:7.2f} "
                      f"{wall:7.2f} {alone:8.2f}", flush=True)


if __name__ == "__main__":
    main()
