#!/usr/bin/env python3
"""Peer of `aerie bench scan` for issue 8: Embree ray casting (Open3D's RaycastingScene, `pip install open3d`) on a
Poisson mesh of the same map, for the same rays as Aerie's frames.

The map is the 4x4 tiling of lone_star made by bench/tile.py and prepared by `aerie prepare` at 0.05 m, exported
with its normals (`aerie export tiled.amap tiled_map.ply`). Poisson reconstruction of the whole 130 x 163 m map at
5 cm triangles would need octree depth 12 and more memory and time than this machine has, so the script meshes one
tile (the points in [0, ex) x [0, ey), the extent bench/tile.py printed) at depth 10 (40.8 m / 2^10 = 4 cm cells),
crops the vertices of lowest density (Poisson's closed surface over holes and sky), and copies the mesh onto the
16 tiles with the same offsets as the points: the same scene as the tiled map.

The rays are the ones Aerie casts, written by `aerie bench scan --map tiled.amap --pose ... --rays-out DIR`
(origin and unit direction per ray, map frame, the sensor pattern's nominal directions). Each ray set is cast
`--repeat` times after a warm-up; the median is reported, with the hit fraction within the sensor's range.

    python3 bench/scan_peers.py tiled_map.ply --extent 32.4408,40.7597 --rays DIR/rays_avia.f32 DIR/rays_os1_128.f32

With `--whole` (for a map that is not a tiling, e.g. the demo's site) the whole exported map is meshed as one piece:
no crop to a tile, no copies, no --extent; the density-quantile crop and --depth apply as before.

    python3 bench/scan_peers.py demo_map.ply --whole --depth 10 --rays DIR/rays_avia.f32 DIR/rays_os1_128.f32
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import open3d as o3d


def tile_mesh(mesh, extent, n):
    v = np.asarray(mesh.vertices)
    f = np.asarray(mesh.triangles)
    vs, fs = [], []
    for i in range(n):
        for j in range(n):
            fs.append(f + len(vs) * len(v))
            vs.append(v + np.array([i * extent[0], j * extent[1], 0.0]))
    return np.concatenate(vs).astype(np.float32), np.concatenate(fs).astype(np.uint32)


def build_mesh(path, extent, n, depth, quantile, whole=False):
    pcd = o3d.io.read_point_cloud(path)
    if whole:
        tile = pcd
    else:
        p = np.asarray(pcd.points)
        keep = (p[:, 0] < extent[0]) & (p[:, 1] < extent[1])
        tile = pcd.select_by_index(np.flatnonzero(keep))
    if not tile.has_normals():
        tile.estimate_normals(o3d.geometry.KDTreeSearchParamKNN(16))
    t = time.perf_counter()
    mesh, density = o3d.geometry.TriangleMesh.create_from_point_cloud_poisson(tile, depth=depth)
    density = np.asarray(density)
    mesh.remove_vertices_by_mask(density < np.quantile(density, quantile))
    poisson_s = time.perf_counter() - t
    edges = np.asarray(mesh.vertices)[np.asarray(mesh.triangles)]
    edge = np.median(np.linalg.norm(edges[:, 0] - edges[:, 1], axis=1))
    if whole:
        v = np.asarray(mesh.vertices).astype(np.float32)
        f = np.asarray(mesh.triangles).astype(np.uint32)
    else:
        v, f = tile_mesh(mesh, extent, n)
    return v, f, len(tile.points), poisson_s, float(edge)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("map_ply", help="the prepared map exported as PLY (aerie export)")
    ap.add_argument("--extent", help="tile extent ex,ey in metres (printed by bench/tile.py); required unless --whole")
    ap.add_argument("--whole", action="store_true",
                    help="mesh the whole map as one piece (no tile crop, no copies; --extent and --n unused)")
    ap.add_argument("--n", type=int, default=4, help="tiles per axis (default 4)")
    ap.add_argument("--depth", type=int, default=10, help="Poisson octree depth (default 10)")
    ap.add_argument("--crop-quantile", type=float, default=0.05, help="drop vertices below this density quantile")
    ap.add_argument("--rays", nargs="+", required=True, help="ray files from aerie bench scan --rays-out")
    ap.add_argument("--max-range", type=float, default=200.0, help="a hit beyond this range counts as a miss")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="Embree threads (0: all cores)")
    a = ap.parse_args()
    if a.extent is None and not a.whole:
        ap.error("the following arguments are required: --extent")
    extent = None if a.whole else [float(x) for x in a.extent.split(",")]
    v, f, n_pts, poisson_s, edge = build_mesh(a.map_ply, extent, a.n, a.depth, a.crop_quantile, a.whole)
    t = time.perf_counter()
    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(o3d.core.Tensor(v), o3d.core.Tensor(f))
    # Embree builds its BVH lazily, on the first query: time a one-ray cast with the build.
    scene.cast_rays(o3d.core.Tensor(np.zeros((1, 6), np.float32)))
    bvh_s = time.perf_counter() - t
    print(json.dumps({"tile_points": n_pts, "poisson_s": round(poisson_s, 2), "median_edge_m": round(edge, 4),
                      "triangles": len(f), "embree_build_s": round(bvh_s, 3),
                      "mesh_mb": round((v.nbytes + f.nbytes) / 2**20, 1), "load": os.getloadavg()[0]}))
    for path in a.rays:
        rays = np.fromfile(path, dtype="<f4").reshape(-1, 6)
        tensor = o3d.core.Tensor(rays)
        scene.cast_rays(tensor, nthreads=a.threads)
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            ans = scene.cast_rays(tensor, nthreads=a.threads)
            times.append((time.perf_counter() - t) * 1e3)
        hit = float((ans["t_hit"].numpy() <= a.max_range).mean())
        ms = statistics.median(times)
        print(json.dumps({"rays": os.path.basename(path), "n": len(rays), "median_ms": round(ms, 2),
                          "min_ms": round(min(times), 2), "mrays_per_s": round(len(rays) / ms / 1e3, 2),
                          "hit": round(hit, 3), "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
