#!/usr/bin/env python3
"""A whole `aerie prepare` against the same steps in Open3D, each as a whole process, side by side.

Usage (from the repository root, after `cargo build --release`):
    pip install open3d laspy lazrs numpy
    python3 bench/prepare_whole.py [--data ../shared/data] [--repeat 3] [--inputs lone_star,tiled]

Inputs: las/lone_star_tls.laz (518,862 points) as the user has it, and optionally lone_star tiled 4x4 as binary
PLY (8.3M points, made with bench/tile.py; pass --tiled PATH). Steps and parameters are the same for both: read
the file, statistical outlier removal (k neighbours, STD standard deviations), voxel downsampling of R metres,
normals from 16 neighbours within 3R, write the result (Aerie: the packed .amap with its buckets, plane thickness
and metadata; Open3D: a binary PLY with normals). Open3D cannot read LAZ, so its process reads LAZ with
laspy+lazrs, which is what an Open3D user does.

Each run is a fresh process timed whole under `/usr/bin/time -v` (wall time, maximum resident set size), Python's
start and imports included for Open3D, as a user would see them; runs alternate between the tools and the median
is printed. Ratio = Open3D time / Aerie time (above 1: Aerie faster).
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile

OPEN3D_SCRIPT = r"""
import sys
import numpy as np, open3d as o3d
src, dst, k, std, r = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
if src.endswith((".laz", ".las")):
    import laspy
    las = laspy.read(src)
    xyz = np.vstack([las.x, las.y, las.z]).T
    pc = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(xyz - xyz.min(axis=0)))
else:
    pc = o3d.io.read_point_cloud(src)
pc, _ = pc.remove_statistical_outlier(k, std)
pc = pc.voxel_down_sample(r)
pc.estimate_normals(o3d.geometry.KDTreeSearchParamHybrid(radius=3 * r, max_nn=16))
o3d.io.write_point_cloud(dst, pc, write_ascii=False)
print(len(pc.points))
"""


def timed(cmd):
    """Wall seconds and maximum RSS (KiB) of one process, from GNU time."""
    out = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{out.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", out.stderr)
    h, m, s = wall.groups()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1))
    return int(h or 0) * 3600 + int(m) * 60 + float(s), rss


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data"))
    ap.add_argument("--aerie", default=os.path.join(here, "..", "target", "release", "aerie"))
    ap.add_argument("--tiled", default=None, help="lone_star tiled 4x4 as binary PLY (bench/tile.py)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--std", type=float, default=2.0)
    ap.add_argument("--resolution", type=float, default=0.05)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    a = ap.parse_args()
    inputs = [("lone_star_tls.laz", os.path.join(a.data, "las", "lone_star_tls.laz"))]
    if a.tiled:
        inputs.append((os.path.basename(a.tiled), a.tiled))
    tmp = tempfile.mkdtemp(prefix="aerie-prepare-whole-")
    script = os.path.join(tmp, "o3d_prepare.py")
    with open(script, "w") as f:
        f.write(OPEN3D_SCRIPT)
    results = []
    for name, path in inputs:
        info = subprocess.run([a.aerie, "info", path, "--json"], capture_output=True, text=True, check=True)
        points = json.loads(info.stdout)[0]["points"]
        aerie_cmd = [a.aerie, "prepare", path, "-o", os.path.join(tmp, "out.amap"), "--resolution",
                     str(a.resolution), "--sor-k", str(a.k), "--sor-std", str(a.std)]
        o3d_cmd = [sys.executable, script, path, os.path.join(tmp, "out.ply"), str(a.k), str(a.std),
                   str(a.resolution)]
        runs = {"aerie": [], "open3d": []}
        for _ in range(a.repeat):
            runs["aerie"].append(timed(aerie_cmd))
            runs["open3d"].append(timed(o3d_cmd))
        row = {"input": name, "points": points, "load_end": os.getloadavg()[0]}
        for tool, rs in runs.items():
            row[tool + "_s"] = statistics.median(r[0] for r in rs)
            row[tool + "_all_s"] = [round(r[0], 3) for r in rs]
            row[tool + "_rss_kib"] = max(r[1] for r in rs)
        row["ratio"] = row["open3d_s"] / row["aerie_s"]
        results.append(row)
    if a.json:
        print(json.dumps(results, indent=1))
        return
    print("| input | points | Aerie s (runs) | Aerie peak RSS, B/pt | Open3D s (runs) | Open3D peak RSS, B/pt | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        n = r["points"]
        print(f"| {r['input']} | {n:,} | {r['aerie_s']:.2f} ({', '.join(map(str, r['aerie_all_s']))}) "
              f"| {r['aerie_rss_kib'] * 1024 / n:.1f} | {r['open3d_s']:.2f} ({', '.join(map(str, r['open3d_all_s']))}) "
              f"| {r['open3d_rss_kib'] * 1024 / n:.1f} | {r['ratio']:.2f}x |")


if __name__ == "__main__":
    main()
