#!/usr/bin/env python3
"""Read speed of Aerie against laspy+lazrs and Open3D on the same files, same machine, same run.

Usage (from the repository root, after `cargo build --release`):
    pip install laspy lazrs open3d
    python3 bench/read_peers.py [--data ../shared/data] [--repeat 5]

It converts las/lone_star_tls.laz to LAS, PCD binary and PLY binary with `aerie convert` (every attribute kept:
x y z as doubles, intensity, time, returns, class, scan angle, user data, point source id), then times reading
each file: Aerie through `aerie bench read` (in-process, median of N after a warm-up), the peers in this Python
process (median of N after a warm-up). Prints points/s and the ratio peer time / Aerie time (above 1: Aerie is faster). Aerie decodes every
attribute of every point; laspy is asked for the scaled x y z and intensity; Open3D keeps x y z (and colours and
normals when present) and skips the rest.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

def timed(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    ap.add_argument("--aerie", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "aerie"))
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    src = os.path.join(a.data, "las", "lone_star_tls.laz")
    tmp = tempfile.mkdtemp(prefix="aerie-bench-")
    files = {"laz": src}
    for ext in ["las", "pcd", "ply"]:
        out = os.path.join(tmp, "lone_star." + ext)
        subprocess.run([a.aerie, "convert", "-q", "--encoding", "binary", src, out] if ext != "las" else
                       [a.aerie, "convert", "-q", src, out], check=True)
        files[ext] = out
    rows = []
    res = subprocess.run([a.aerie, "bench", "read", "--json", "--repeat", str(a.repeat)] + list(files.values()),
                         check=True, capture_output=True, text=True).stdout
    aerie = {}
    for line, ext in zip(res.strip().splitlines(), files.keys()):
        r = json.loads(line); aerie[ext] = (r["points"], r["median_s"])
    peers = {}
    try:
        import laspy
        import numpy as np
        def laspy_read(path):
            # laspy maps an uncompressed file lazily; asking for the scaled coordinates and the intensity makes
            # it do the work every other reader here does.
            l = laspy.read(path)
            return np.asarray(l.x), np.asarray(l.y), np.asarray(l.z), np.asarray(l.intensity)
        for ext in ["laz", "las"]:
            n = len(laspy.read(files[ext]).points)
            peers.setdefault(ext, []).append(("laspy+lazrs", n, timed(lambda: laspy_read(files[ext]), a.repeat)))
    except ImportError:
        print("laspy not installed: pip install laspy lazrs", file=sys.stderr)
    try:
        import open3d as o3d
        for ext in ["pcd", "ply"]:
            n = len(o3d.io.read_point_cloud(files[ext]).points)
            peers.setdefault(ext, []).append(("open3d", n, timed(lambda: o3d.io.read_point_cloud(files[ext]), a.repeat)))
    except ImportError:
        print("open3d not installed: pip install open3d", file=sys.stderr)
    print(f"{'format':<6} {'tool':<12} {'points':>9} {'median s':>9} {'Mpoints/s':>10} {'aerie/peer':>10}")
    for ext in files:
        n, t = aerie[ext]
        print(f"{ext:<6} {'aerie':<12} {n:>9} {t:>9.4f} {n / t / 1e6:>10.2f}")
        for tool, pn, pt in peers.get(ext, []):
            print(f"{ext:<6} {tool:<12} {pn:>9} {pt:>9.4f} {pn / pt / 1e6:>10.2f} {pt / t:>9.2f}x")

if __name__ == "__main__":
    main()
