#!/usr/bin/env python3
"""Measure a spinning LiDAR's ring elevations from one of its scans.

Usage: python3 bench/ring_table.py SCAN.pcd [--height-mm H] [--offset-mm N]

Prints, for rays assumed to start H mm above the scan's origin (default 0: the frame origin is the optical
centre) from a beam origin N mm out from the axis along the column's azimuth (Ouster's beam-origin offset,
default 0), the elevation of each ring (the median elevation of the points within 0.4 deg of it, refined four
times from the 64-ring table in ../shared/data/SOURCES.md) as a TOML array for a sensor preset's
`elevations_deg`, and how sharp the rings are from there. On a deskewed scan the rings are blurred and the
sharpness hardly depends on H; which height the points are given from is better judged beam by beam
(docs/accuracy.md, section 3).
"""
import argparse
import numpy as np

SOURCES_TABLE = """-45.33 -43.59 -42.27 -40.57 -39.27 -37.60 -36.29 -34.66 -33.34 -31.75 -30.42 -28.86 -27.52 -25.99 -24.63
-23.14 -21.78 -20.30 -18.91 -17.48 -16.06 -14.65 -13.23 -11.84 -10.41 -9.05 -7.59 -6.24 -4.75 -3.44 -1.94 -0.64
0.87 2.14 3.68 4.95 6.48 7.73 9.31 10.52 12.12 13.34 14.96 16.16 17.83 19.02 20.68 21.86 23.55 24.72 26.44 27.59
29.34 30.49 32.27 33.42 35.21 36.38 38.19 39.34 41.16 42.31 44.16 45.30"""


def read_pcd_xyz(path):
    raw = open(path, "rb").read()
    head, body = raw.split(b"DATA binary\n", 1)
    fields = dict(l.split(" ", 1) for l in head.decode().splitlines() if l and not l.startswith("#"))
    n = int(fields["POINTS"])
    width = len(fields["FIELDS"].split())
    return np.frombuffer(body[: n * width * 4], dtype="<f4").reshape(n, width)[:, :3].astype(np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scan")
    ap.add_argument("--height-mm", type=float, default=0.0)
    ap.add_argument("--offset-mm", type=float, default=0.0)
    a = ap.parse_args()
    xyz = read_pcd_xyz(a.scan)
    rho = np.hypot(xyz[:, 0], xyz[:, 1])
    z = xyz[:, 2]
    r = np.sqrt(rho**2 + z**2)
    keep = r > 0.3
    rho, z, r = rho[keep], z[keep], r[keep]
    el = np.degrees(np.arctan2(z - a.height_mm * 1e-3, rho - a.offset_mm * 1e-3))
    table = np.array(SOURCES_TABLE.split(), dtype=float)
    for _ in range(4):
        ring = np.abs(el[:, None] - table[None, :]).argmin(1)
        near_ring = np.abs(el - table[ring]) < 0.4
        table = np.array([np.median(el[near_ring & (ring == k)]) if np.any(near_ring & (ring == k)) else table[k]
                          for k in range(len(table))])
    res = el - table[ring]
    print(f"# rays from {a.height_mm} mm above the origin, {a.offset_mm} mm out: median |elevation - ring| {np.median(np.abs(res[near_ring])):.3f} deg "
          f"over the {near_ring.mean():.1%} of points within 0.4 deg of a ring")
    print("elevations_deg = [")
    for i in range(0, len(table), 8):
        print("    " + ", ".join(f"{v:.2f}" for v in table[i:i + 8]) + ",")
    print("]")


if __name__ == "__main__":
    main()
