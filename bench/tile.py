#!/usr/bin/env python3
"""Tile a point cloud N x N in the horizontal plane (copies offset by the cloud's extent) for the scan benchmark.

Input: an x y z text file (`aerie convert lone_star_tls.laz lone.xyz --fields ""`). Output: binary little-endian
PLY (float64 x y z), to be prepared with `aerie prepare tiled.ply -o tiled.amap --resolution 0.05`.

    python3 bench/tile.py lone.xyz tiled.ply --n 4
"""
import argparse

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--n", type=int, default=4, help="copies per axis (default 4)")
    ap.add_argument("--limit", type=int, default=0, help="keep only the first N points (e.g. exactly 10 million)")
    a = ap.parse_args()
    p = np.loadtxt(a.input, comments="//", dtype=np.float64)[:, :3]
    # Shift to the cloud's minimum corner so that float32 map coordinates keep millimetres.
    p -= p.min(axis=0)
    ext = p.max(axis=0) - p.min(axis=0)
    tiles = [p + np.array([i * ext[0], j * ext[1], 0.0]) for i in range(a.n) for j in range(a.n)]
    out = np.concatenate(tiles)
    if a.limit:
        out = out[: a.limit]
    out = np.ascontiguousarray(out)
    header = (
        "ply\nformat binary_little_endian 1.0\n"
        f"element vertex {len(out)}\n"
        "property double x\nproperty double y\nproperty double z\nend_header\n"
    )
    with open(a.output, "wb") as f:
        f.write(header.encode())
        f.write(out.astype("<f8").tobytes())
    print(f"{len(p)} points, extent {ext.round(2).tolist()} m -> {len(out)} points in {a.output}")


if __name__ == "__main__":
    main()
