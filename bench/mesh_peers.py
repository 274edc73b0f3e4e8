#!/usr/bin/env python3
"""Mesh benchmark (issue 77): is Aerie's mesh worth simulating in, against Open3D's screened Poisson mesh?

The map is ../shared/data/balm/hall_fused.laz prepared with `aerie prepare` and its default recipe (as
bench/fidelity.py does). From that one map:

- `aerie mesh MAP -o aerie.ply` (whole process timed, peak memory from /usr/bin/time);
- Open3D's screened Poisson (`create_from_point_cloud_poisson`, depth 9 and 10) of the same map's points and
  normals (`aerie export MAP -o map.ply`), vertices whose density is under the 5% quantile removed, as Open3D's
  tutorial trims it; the whole process timed (python start, import, read, reconstruct, trim, write);
- Aerie's own point renderer, `aerie scan MAP --sensor os0_64` (the reference the mesh should match).

Each mesh is ray-cast with Open3D's RaycastingScene (Embree; two-sided, as it hits back faces too) with the
OS0-64 pattern of `aerie sensors --show os0_64` at the pose of each chosen real scan balm/full<i>.pcd, and every
simulated scan is scored against the real one with ../shared/tools/beamcmp.py (hit, in10_all, beam_med, cov25).
`back` is the share of mesh hits on a triangle's back face (a one-sided GPU ray sensor, as Gazebo's, would see
through those): low means triangles face the scanner.

    cargo build --release
    python3 bench/mesh_peers.py target/release/aerie --work /tmp/meshb            # r 0.1, ten poses
    python3 bench/mesh_peers.py target/release/aerie --resolutions 0.1,0.2 --depths 9,10

Needs python3 with numpy, scipy and open3d (pip install open3d; on a bare Debian also apt-get install
libusb-1.0-0, which Open3D's wheel links).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fidelity  # noqa: E402  (its pose reading, pose choice and map preparation)


def timed(cmd):
    """Runs cmd under /usr/bin/time: (seconds, peak resident MB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        r = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name, *cmd], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
        sec, kb = t.read().split()[-2:]
    return float(sec), int(kb) / 1024.0


def poisson_worker(src, depth, out):
    """The Open3D side, run as its own process so that its whole time is measured."""
    import open3d as o3d

    pcd = o3d.io.read_point_cloud(src)
    mesh, dens = o3d.geometry.TriangleMesh.create_from_point_cloud_poisson(pcd, depth=depth)
    dens = np.asarray(dens)
    mesh.remove_vertices_by_mask(dens < np.quantile(dens, 0.05))
    o3d.io.write_triangle_mesh(out, mesh)


def os0_pattern(aerie):
    """(elevations in degrees, columns, lidar origin height in m, min range, max range) of the os0_64 preset."""
    text = subprocess.run([aerie, "sensors", "--show", "os0_64"], capture_output=True, text=True, check=True).stdout
    try:
        import tomllib
    except ImportError:  # python < 3.11
        import tomli as tomllib
    return tomllib.loads(text)


def rays_of(sensor, pose):
    """Ray origins and unit directions in the map frame, and the rotation and origin of the sensor frame."""
    b = sensor_beams(sensor)
    x, y, z, roll, pitch, yaw = pose
    rot = fidelity.rotation(roll, pitch, yaw)
    t = np.array([x, y, z])
    origins = b["origins"] @ rot.T + t
    dirs = b["dirs"] @ rot.T
    return origins, dirs, rot, t


_BEAMS = {}


def sensor_beams(sensor):
    """The beams of one frame in the sensor frame: origins (the lidar origin above the frame) and directions."""
    key = id(sensor)
    if key in _BEAMS:
        return _BEAMS[key]
    el = np.radians(np.asarray(sensor["elevations_deg"], dtype=float))
    cols = int(sensor["columns"])
    az = np.radians(np.arange(cols) * 360.0 / cols)
    E, A = np.meshgrid(el, az, indexing="ij")
    dirs = np.stack([np.cos(E) * np.cos(A), np.cos(E) * np.sin(A), np.sin(E)], axis=-1).reshape(-1, 3)
    origins = np.zeros_like(dirs)
    origins[:, 2] = sensor.get("lidar_origin_z_m", 0.0)
    _BEAMS[key] = dict(origins=origins, dirs=dirs)
    return _BEAMS[key]


def cast(scene, sensor, pose, out):
    """Ray-casts one frame, writes the hits in the sensor frame as PCD; returns the share of back-face hits."""
    import open3d as o3d

    origins, dirs, rot, t = rays_of(sensor, pose)
    rays = o3d.core.Tensor(np.hstack([origins, dirs]).astype(np.float32))
    ans = scene.cast_rays(rays)
    th = ans["t_hit"].numpy()
    nrm = ans["primitive_normals"].numpy()
    ok = np.isfinite(th) & (th >= sensor["min_range_m"]) & (th <= sensor["max_range_m"])
    back = float(((nrm[ok] * dirs[ok]).sum(axis=1) > 0).mean()) if ok.any() else 0.0
    hits = origins[ok] + dirs[ok] * th[ok, None]
    local = (hits - t) @ rot
    write_pcd(out, local)
    return back


def write_pcd(path, xyz):
    with open(path, "wb") as f:
        n = len(xyz)
        f.write(
            (
                "# .PCD v0.7\nVERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\n"
                f"WIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA binary\n"
            ).encode()
        )
        f.write(np.ascontiguousarray(xyz, dtype=np.float32).tobytes())


def beamcmp(shared, sim, real):
    tool = os.path.join(shared, "..", "tools", "beamcmp.py")
    r = subprocess.run([sys.executable, tool, sim, real], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def sensor_of(aerie):
    """The os0_64 preset's pattern, from `aerie sensors --show os0_64`."""
    t = os0_pattern(aerie)
    flat = {}

    def walk(d):
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v)
            else:
                flat.setdefault(k, v)

    walk(t)
    elev = flat.get("elevations_deg") or list(
        np.linspace(flat["elevation_min_deg"], flat["elevation_max_deg"], int(flat["channels"]))
    )
    return dict(
        elevations_deg=elev,
        columns=int(flat.get("columns") or flat.get("horizontal_resolution") or 1024),
        lidar_origin_z_m=float(flat.get("lidar_origin_z_mm", 0.0)) / 1000.0,
        min_range_m=float(flat.get("min_range_m", flat.get("range_min_m", 0.3))),
        max_range_m=float(flat.get("max_range_m", flat.get("range_max_m", 50.0))),
    )


def mesh_rows(a, amap, res, tag, poses, chosen, sensor):
    """Makes every mesh of one map; returns {name: (path, seconds, MB)}."""
    out = {}
    aerie_mesh = os.path.join(a.work, f"aerie_{tag}.ply")
    out["aerie mesh"] = (aerie_mesh, *timed([a.aerie, "mesh", amap, "-o", aerie_mesh, "--quiet"]))
    if a.triangles:
        for n in a.triangles.split(","):
            p = os.path.join(a.work, f"aerie_{tag}_{n}.ply")
            out[f"aerie mesh --triangles {n}"] = (p, *timed([a.aerie, "mesh", amap, "-o", p, "-q", "--triangles", n]))
    cloud = os.path.join(a.work, f"map_{tag}.ply")
    fidelity.run([a.aerie, "export", amap, "-o", cloud, "--quiet"])
    for d in [int(v) for v in a.depths.split(",") if v]:
        p = os.path.join(a.work, f"poisson_{tag}_d{d}.ply")
        out[f"Open3D Poisson d{d}"] = (p, *timed([sys.executable, __file__, "--poisson-worker", cloud, str(d), p]))
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--poisson-worker":
        poisson_worker(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("aerie")
    ap.add_argument("--shared", default=fidelity.DEFAULT_SHARED)
    ap.add_argument("--work", default="mesh_work")
    ap.add_argument("--resolutions", default="0.1")
    ap.add_argument("--poses", default="every10", help="'all', 'everyN' (N spread over the 41), or i,j,k")
    ap.add_argument("--depths", default="9,10", help="Open3D Poisson depths")
    ap.add_argument("--triangles", default="", help="also Aerie meshes simplified to these budgets, e.g. 500000")
    ap.add_argument("--small", action="store_true",
                    help="the small pair instead: maps/hall_map_20cm.pcd at 0.2 m and pcd/os0_hall_scan_full40.pcd")
    ap.add_argument("--fresh", action="store_true")
    a = ap.parse_args()

    import open3d as o3d

    os.makedirs(a.work, exist_ok=True)
    if a.small:
        poses = {40: (2.541082, 4.504131, 0.338537, -0.238357059, 0.137686623, 1.825842042)}
        chosen, a.resolutions = [40], "0.2"
        laz = os.path.join(a.shared, "maps", "hall_map_20cm.pcd")
        real_of = lambda i: os.path.join(a.shared, "pcd", "os0_hall_scan_full40.pcd")  # noqa: E731
    else:
        poses = fidelity.read_poses(os.path.join(a.shared, "balm", "poses.csv"))
        chosen = fidelity.choose(fidelity.available(a.shared, poses), a.poses)
        laz = os.path.join(a.shared, "balm", "hall_fused.laz")
        real_of = lambda i: os.path.join(a.shared, "balm", f"full{i}.pcd")  # noqa: E731
    sensor = sensor_of(a.aerie)
    print(f"poses: {','.join(map(str, chosen))}; sensor: {len(sensor['elevations_deg'])} x {sensor['columns']}",
          flush=True)
    table = []
    for res in [float(r) for r in a.resolutions.split(",")]:
        amap = fidelity.prepare(a.aerie, laz, a.work, res, a.fresh, [])
        tag = f"{res:g}"
        meshes = mesh_rows(a, amap, res, tag, poses, chosen, sensor)
        for name, (path, sec, mb) in meshes.items():
            m = o3d.io.read_triangle_mesh(path)
            scene = o3d.t.geometry.RaycastingScene()
            scene.add_triangles(o3d.t.geometry.TriangleMesh.from_legacy(m))
            per = []
            for i in chosen:
                sim = os.path.join(a.work, f"cast_{tag}_{name.replace(' ', '_')}_{i}.pcd")
                back = cast(scene, sensor, poses[i], sim)
                s = beamcmp(a.shared, sim, real_of(i))
                s["back"] = back
                per.append(s)
            table.append(row(res, name, len(m.triangles), sec, mb, per))
            print(table[-1], flush=True)
        per = []
        for i in chosen:
            sim = os.path.join(a.work, f"scan_{tag}_{i}.pcd")
            pose = ",".join(f"{v:.9f}" for v in poses[i])
            fidelity.run([a.aerie, "scan", amap, "--sensor", "os0_64", "--pose", pose, "-o", sim])
            per.append(beamcmp(a.shared, sim, real_of(i)))
        table.append(row(res, "aerie scan (points)", None, None, None, per))
        print(table[-1], flush=True)
    print()
    print("| r_map | surface | triangles | time (s) | peak MB | hit | in10_all | beam_med (m) | cov25 | back | "
          "beam_med min..max |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        print(r)


def row(res, name, tris, sec, mb, per):
    m = {k: statistics.fmean(p[k] for p in per) for k in ("hit", "in10_all", "beam_med", "cov25")}
    bm = [p["beam_med"] for p in per]
    back = f"{statistics.fmean(p['back'] for p in per):.3f}" if "back" in per[0] else "-"
    f = (lambda v, fmt: "-" if v is None else format(v, fmt))
    return (
        f"| {res:g} | {name} | {f(tris, ',')} | {f(sec, '.1f')} | {f(mb, '.0f')} | {m['hit']:.3f} | "
        f"{m['in10_all']:.3f} | {m['beam_med']:.4f} | {m['cov25']:.3f} | {back} | {min(bm):.3f}..{max(bm):.3f} |"
    )


if __name__ == "__main__":
    main()
