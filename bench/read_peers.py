#!/usr/bin/env python3
"""Read speed of Aerie against laspy+lazrs and Open3D on the same files, same machine, same run.

Usage (from the repository root, after `cargo build --release`):
    pip install laspy lazrs numpy open3d
    python3 bench/read_peers.py [--data ../shared/data] [--repeat 5] [--cold 5] [--aerie target/release/aerie]

It converts las/lone_star_tls.laz to LAS, PCD binary and PLY binary with `aerie convert` (every attribute kept:
x y z as doubles, intensity, time, returns, class, scan angle, user data, point source id), and adds the other
shared LAS/LAZ files. Then it times reading each file two ways:

- in-process: Aerie through `aerie bench read` (median of N after a warm-up), the peers in this Python process
  (median of N after a warm-up). Repeated reads in one process may reuse memory the allocator kept from the
  previous read, so this measures decoding more than paging;
- cold (`--cold K`, LAS/LAZ only): the first read in a fresh process (the file in the page cache, the process's
  memory fresh), Aerie's and laspy's processes alternating, median of K. This is what a tool that reads a file
  once pays; process start and Python imports are not counted.

Prints points/s and the ratio peer time / Aerie time (above 1: Aerie is faster). Aerie decodes every attribute
of every point; laspy is asked for the scaled x y z and intensity; Open3D keeps x y z (and colours and normals
when present) and skips the rest.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

LASPY_READ = """
import laspy, numpy as np
def laspy_read(path):
    # laspy maps an uncompressed file lazily; asking for the scaled coordinates and the intensity makes it do
    # the work every other reader here does.
    l = laspy.read(path)
    return np.asarray(l.x), np.asarray(l.y), np.asarray(l.z), np.asarray(l.intensity)
"""

SHARED = ["autzen_trim.las", "autzen_trim.laz", "las11_airborne_small.laz", "las14_fmt8_extra_bytes.laz"]

def timed(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)

def cold_laspy(path):
    code = LASPY_READ + "import sys, time\nt = time.perf_counter(); laspy_read(sys.argv[1])\n" \
        "print(time.perf_counter() - t)\n"
    return float(subprocess.run([sys.executable, "-c", code, path], check=True, capture_output=True,
                                text=True).stdout)

def cold_aerie(aerie, path):
    out = subprocess.run([aerie, "bench", "read", "--json", "--repeat", "1", path], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["first_s"]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    ap.add_argument("--aerie", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "aerie"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", type=int, default=0, help="fresh-process first reads per LAS/LAZ file (0: none)")
    a = ap.parse_args()
    src = os.path.join(a.data, "las", "lone_star_tls.laz")
    tmp = tempfile.mkdtemp(prefix="aerie-bench-")
    files = {"laz": src}
    for ext in ["las", "pcd", "ply"]:
        out = os.path.join(tmp, "lone_star." + ext)
        subprocess.run([a.aerie, "convert", "-q", "--encoding", "binary", src, out] if ext != "las" else
                       [a.aerie, "convert", "-q", src, out], check=True)
        files[ext] = out
    for name in SHARED:
        path = os.path.join(a.data, "las", name)
        if os.path.exists(path):
            files[name] = path
    res = subprocess.run([a.aerie, "bench", "read", "--json", "--repeat", str(a.repeat)] + list(files.values()),
                         check=True, capture_output=True, text=True).stdout
    aerie = {}
    for line, key in zip(res.strip().splitlines(), files.keys()):
        r = json.loads(line); aerie[key] = (r["points"], r["median_s"])
    las_keys = [k for k, p in files.items() if p.endswith((".las", ".laz"))]
    peers = {}
    cold = {}
    try:
        import laspy
        import numpy as np
        namespace = {}
        exec(LASPY_READ, namespace)
        laspy_read = namespace["laspy_read"]
        for key in las_keys:
            n = len(laspy.read(files[key]).points)
            peers.setdefault(key, []).append(("laspy+lazrs", n, timed(lambda: laspy_read(files[key]), a.repeat)))
        for key in las_keys if a.cold > 0 else []:
            ours, theirs = [], []
            for _ in range(a.cold):
                ours.append(cold_aerie(a.aerie, files[key]))
                theirs.append(cold_laspy(files[key]))
            cold[key] = (statistics.median(ours), statistics.median(theirs))
    except ImportError:
        print("laspy not installed: pip install laspy lazrs", file=sys.stderr)
    try:
        import open3d as o3d
        for ext in ["pcd", "ply"]:
            n = len(o3d.io.read_point_cloud(files[ext]).points)
            peers.setdefault(ext, []).append(("open3d", n, timed(lambda: o3d.io.read_point_cloud(files[ext]), a.repeat)))
    except ImportError:
        print("open3d not installed: pip install open3d", file=sys.stderr)
    print(f"in-process, median of {a.repeat} after a warm-up")
    print(f"{'file':<28} {'tool':<12} {'points':>9} {'median s':>9} {'Mpoints/s':>10} {'peer/aerie':>10}")
    for key in files:
        n, t = aerie[key]
        print(f"{key:<28} {'aerie':<12} {n:>9} {t:>9.4f} {n / t / 1e6:>10.2f}")
        for tool, pn, pt in peers.get(key, []):
            print(f"{key:<28} {tool:<12} {pn:>9} {pt:>9.4f} {pn / pt / 1e6:>10.2f} {pt / t:>9.2f}x")
    if cold:
        print(f"cold: first read in a fresh process, median of {a.cold}")
        print(f"{'file':<28} {'aerie s':>9} {'laspy s':>9} {'peer/aerie':>10}")
        for key, (ours, theirs) in cold.items():
            print(f"{key:<28} {ours:>9.4f} {theirs:>9.4f} {theirs / ours:>9.2f}x")

if __name__ == "__main__":
    main()
