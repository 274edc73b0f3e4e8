#!/usr/bin/env python3
"""Map-preparation speed of Aerie against Open3D, CloudCompare and PCL on the same input, same machine, same run.

Usage (from the repository root, after `cargo build --release`):
    pip install open3d laspy lazrs numpy
    apt-get install cloudcompare pcl-tools        # optional peers; skipped when absent
    python3 bench/prepare_peers.py [--data ../shared/data] [--big 5000000] [--repeat 3]

Inputs: las/lone_star_tls.laz (518,862 points), and a ~5M-point cloud made of tiled copies of it (each copy
shifted 50 m in x, so density and structure are real). Both are written as binary PCD (x y z) so every tool reads
the same file. Stages and parameters are the same for every tool: SOR with k=K neighbours and m=STD, a voxel
downsampling of R metres, normals from 16 neighbours within 3R.

Aerie and Open3D are timed in-process per stage (median of N). CloudCompare and PCL are command-line tools: each
stage is timed as a whole process, and the time of a process that only loads (and saves) the same file is
subtracted, so the figure is the stage's own work; both raw and net times are printed.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

def med(fn, repeat):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)

def run_s(cmd, env=None):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data"))
    ap.add_argument("--aerie", default=os.path.join(here, "..", "target", "release", "aerie"))
    ap.add_argument("--big", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--std", type=float, default=1.0)
    ap.add_argument("--resolution", type=float, default=0.05)
    ap.add_argument("--tools", default="aerie,open3d,cloudcompare,pcl", help="comma-separated subset to run")
    ap.add_argument("--inputs", default="lone_star,big", help="comma-separated subset: lone_star, big")
    ap.add_argument("--workdir", default=None, help="where the PCD inputs go (kept); default a temporary folder")
    a = ap.parse_args()
    tools = set(a.tools.split(","))
    wanted = set(a.inputs.split(","))
    import numpy as np
    import laspy
    tmp = a.workdir or tempfile.mkdtemp(prefix="aerie-prep-bench-")
    os.makedirs(tmp, exist_ok=True)
    las = laspy.read(os.path.join(a.data, "las", "lone_star_tls.laz"))
    xyz = np.vstack([las.x, las.y, las.z]).T
    xyz = xyz - xyz.min(axis=0)
    inputs = {}
    def write_pcd(path, pts):
        pts = pts.astype(np.float32)
        with open(path, "wb") as f:
            f.write(("# .PCD v0.7\nVERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\n"
                     f"WIDTH {len(pts)}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {len(pts)}\nDATA binary\n").encode())
            f.write(pts.tobytes())
    def write_ply(path, pts):
        # CloudCompare's Debian build has no PCD plugin; it reads binary PLY.
        pts = np.ascontiguousarray(pts.astype(np.float32))
        with open(path, "wb") as f:
            f.write((f"ply\nformat binary_little_endian 1.0\nelement vertex {len(pts)}\n"
                     "property float x\nproperty float y\nproperty float z\nend_header\n").encode())
            f.write(pts.tobytes())
    if "lone_star" in wanted:
        inputs["lone_star"] = os.path.join(tmp, "lone_star.pcd"); write_pcd(inputs["lone_star"], xyz)
    if "big" in wanted:
        copies = max(1, round(a.big / len(xyz)))
        big = np.vstack([xyz + np.array([50.0 * i, 0, 0]) for i in range(copies)])
        big_path = os.path.join(tmp, "big.pcd")
        write_pcd(big_path, big)
        inputs[f"tiled_{len(big) / 1e6:.1f}M"] = big_path
        del big
    r, k, m = a.resolution, a.k, a.std
    print(f"load average at start: {os.getloadavg()}, cpus: {os.cpu_count()}")
    results = []  # (input, stage, tool, seconds, note)
    for name, path in inputs.items():
        # Normals run on the downsampled cloud for every tool (Aerie's bench does the same internally).
        import open3d as o3d
        ds_path = os.path.join(tmp, name + "_down.pcd")
        write_pcd(ds_path, np.asarray(o3d.io.read_point_cloud(path).voxel_down_sample(r).points))
        out = ""
        if "aerie" in tools:
            out = subprocess.run([a.aerie, "bench", "prepare", path, "--json", "--repeat", str(a.repeat),
                                  "--resolution", str(r), "--sor-k", str(k), "--sor-std", str(m)],
                                 check=True, capture_output=True, text=True).stdout
        for line in out.strip().splitlines():
            row = json.loads(line)
            results.append((name, row["stage"], "aerie", row["median_s"], ""))
        if "open3d" in tools:
            pc = o3d.io.read_point_cloud(path)
            results.append((name, "sor", "open3d", med(lambda: pc.remove_statistical_outlier(k, m), a.repeat), ""))
            results.append((name, "downsample", "open3d", med(lambda: pc.voxel_down_sample(r), a.repeat), ""))
            ds = pc.voxel_down_sample(r)
            def normals():
                c = o3d.geometry.PointCloud(ds)
                c.estimate_normals(o3d.geometry.KDTreeSearchParamHybrid(radius=3 * r, max_nn=16))
            results.append((name, "normals", "open3d", med(normals, a.repeat), "on the downsampled cloud"))
            del pc, ds
        cc = shutil.which("CloudCompare") if "cloudcompare" in tools else None
        if cc:
            env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
            # Nothing is saved (-AUTO_SAVE OFF): stage time = process with the stage - process that only loads.
            ply, ply_ds = path[:-4] + ".ply", ds_path[:-4] + ".ply"
            write_ply(ply, np.asarray(o3d.io.read_point_cloud(path).points))
            write_ply(ply_ds, np.asarray(o3d.io.read_point_cloud(ds_path).points))
            base = [cc, "-SILENT", "-NO_TIMESTAMP", "-AUTO_SAVE", "OFF", "-O", ply]
            load = statistics.median(run_s(base, env) for _ in range(a.repeat))
            base_ds = [cc, "-SILENT", "-NO_TIMESTAMP", "-AUTO_SAVE", "OFF", "-O", ply_ds]
            load_ds = statistics.median(run_s(base_ds, env) for _ in range(a.repeat))
            # -SS SPATIAL r: minimum spacing r (CloudCompare has no fixed-size voxel grid on the command line).
            for stage, b, l, args in [("sor", base, load, ["-SOR", str(k), str(m)]),
                                      ("downsample", base, load, ["-SS", "SPATIAL", str(r)]),
                                      ("normals", base_ds, load_ds, ["-OCTREE_NORMALS", str(3 * r)])]:
                t = statistics.median(run_s(b + args, env) for _ in range(a.repeat))
                results.append((name, stage, "cloudcompare", max(t - l, 1e-9), f"process {t:.2f} s - load {l:.2f} s"))
        pcl = shutil.which("pcl_outlier_removal") if "pcl" in tools else None
        if pcl:
            o = os.path.join(tmp, "pcl_out.pcd")
            # Load + save without work: a voxel grid so small PCL refuses it and passes the cloud through.
            load = statistics.median(run_s(["pcl_voxel_grid", path, o, "-leaf", "1e-9,1e-9,1e-9"]) for _ in range(a.repeat))
            load_ds = statistics.median(run_s(["pcl_voxel_grid", ds_path, o, "-leaf", "1e-9,1e-9,1e-9"]) for _ in range(a.repeat))
            for stage, l, cmd in [("sor", load, ["pcl_outlier_removal", path, o, "-method", "statistical", "-mean_k", str(k), "-std_dev_mul", str(m)]),
                                  ("downsample", load, ["pcl_voxel_grid", path, o, "-leaf", f"{r},{r},{r}"]),
                                  ("normals", load_ds, ["pcl_normal_estimation", ds_path, o, "-k", "16"])]:
                t = statistics.median(run_s(cmd) for _ in range(a.repeat))
                results.append((name, stage, "pcl", max(t - l, 1e-9), f"process {t:.2f} s - load/save {l:.2f} s"))
    print(f"load average at end: {os.getloadavg()}")
    print(f"{'input':<14} {'stage':<12} {'tool':<13} {'seconds':>9} {'peer/aerie':>10}  note")
    aerie = {(n, s): t for n, s, tool, t, _ in results if tool == "aerie"}
    for n, s, tool, t, note in results:
        ratio = f"{t / aerie[(n, s)]:.1f}x" if tool != "aerie" and (n, s) in aerie else ""
        print(f"{n:<14} {s:<12} {tool:<13} {t:>9.3f} {ratio:>10}  {note}")

if __name__ == "__main__":
    main()
