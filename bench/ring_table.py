#!/usr/bin/env python3
"""Measure a spinning LiDAR's ring elevations, and the sensor's motion during the sweep, from one of its scans.

Usage: python3 bench/ring_table.py SCAN.pcd [--height-mm H] [--offset-mm N] [--motion]
                                   [--tum OUT.tum --pose x,y,z,roll,pitch,yaw] [--rate-hz 10]

Prints, for rays assumed to start H mm above the scan's origin from a beam origin N mm out from the axis along the
column's azimuth (Ouster's beam-origin offset), the elevation of each ring (the median elevation of the points
within 0.3 deg of it, refined from the 64-ring table published with the shared data) as a TOML array for a sensor
preset's `elevations_deg`, and how sharp the rings are (median |elevation - ring|).

A scan taken while the sensor moved and deskewed afterwards (points moved into the sensor frame at one instant,
as LiDAR-inertial front-ends publish them) has blurred rings when seen from one origin: each column was fired
from another place. `--motion` fits that motion, assuming the points are given in the sensor frame at the end of
the sweep (FAST-LIO's convention) and that the sensor moved at a constant velocity v and turned at a constant
rate (its roll and pitch rates; the yaw rate does not move elevations and is not measured) during one
revolution, the columns fired in Ouster's order (from 180 deg azimuth, clockwise). The fit minimises the
elevations' distance to the nearest ring (robust loss) while the table is refined. Where the rings become sharp
the motion is the capture's; `--tum` then writes the sensor's trajectory over the sweep in the map frame, given
the scan's pose there (`--pose`, as `aerie scan --pose` takes it), for `aerie scan --trajectory OUT.tum
--points-in end` (docs/accuracy.md, section 3).
"""
import argparse
import numpy as np
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

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


class Sweep:
    """The scan's points with the sweep phase f (0 at the first column, 1 at the last) of each."""

    def __init__(self, xyz, height_m, offset_m):
        keep = np.linalg.norm(xyz, axis=1) > 0.3
        self.xyz = xyz[keep]
        az = np.degrees(np.arctan2(self.xyz[:, 1], self.xyz[:, 0]))
        self.f = ((180.0 - az) % 360.0) / 360.0
        self.height = height_m
        self.offset = offset_m

    def sensor_at(self, motion):
        """Rotation and origin of the sensor frame at each point's phase, in the scan frame (end of sweep)."""
        v, w = motion[:3], np.r_[motion[3:5], 0.0]
        back = (self.f - 1.0)[:, None]
        return Rotation.from_rotvec(back * w[None, :]), back * v[None, :]

    def elevations(self, motion):
        rot, origin = self.sensor_at(motion)
        q = rot.inv().apply(self.xyz - origin)
        return np.degrees(np.arctan2(q[:, 2] - self.height, np.hypot(q[:, 0], q[:, 1]) - self.offset))


def residuals(el, table):
    ring = np.abs(el[:, None] - table[None, :]).argmin(1)
    return el - table[ring], ring


def refine(el, table, window=0.3):
    res, ring = residuals(el, table)
    near = np.abs(res) < window
    return np.array([np.median(el[near & (ring == k)]) if np.any(near & (ring == k)) else table[k]
                     for k in range(len(table))])


def fit(sweep, table, motion, rounds):
    for _ in range(rounds):
        cost = lambda m: np.clip(residuals(sweep.elevations(m), table)[0], -0.5, 0.5)
        motion = least_squares(cost, motion, loss="soft_l1", f_scale=0.05,
                               x_scale=np.r_[[0.05] * 3, [0.005] * 2], diff_step=1e-4).x
        table = refine(sweep.elevations(motion), table)
    return table, motion


def sharpness(sweep, table, motion):
    res = np.abs(residuals(sweep.elevations(motion), table)[0])
    return np.median(res), (res < 0.1).mean()


def write_tum(path, pose, motion, rate_hz, knots=11):
    """The trajectory of the scan's frame (the sensor frame, its lidar origin --height-mm up) over one sweep in
    the map frame: the end pose `pose`, earlier poses moved back by the motion; times from 0 at the first column
    to 1/rate_hz at the last."""
    x, y, z, roll, pitch, yaw = pose
    world_from_scan = Rotation.from_euler("ZYX", [yaw, pitch, roll])
    v, w = motion[:3], np.r_[motion[3:5], 0.0]
    with open(path, "w") as out:
        for i in range(knots):
            f = i / (knots - 1)
            rot = world_from_scan * Rotation.from_rotvec((f - 1.0) * w)
            t = world_from_scan.apply((f - 1.0) * v) + np.array([x, y, z])
            q = rot.as_quat()
            out.write(f"{f / rate_hz:.6f} {t[0]:.9f} {t[1]:.9f} {t[2]:.9f} "
                      f"{q[0]:.12f} {q[1]:.12f} {q[2]:.12f} {q[3]:.12f}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scan")
    ap.add_argument("--height-mm", type=float, default=0.0)
    ap.add_argument("--offset-mm", type=float, default=0.0)
    ap.add_argument("--motion", action="store_true")
    ap.add_argument("--tum")
    ap.add_argument("--pose", type=lambda s: [float(v) for v in s.split(",")])
    ap.add_argument("--rate-hz", type=float, default=10.0)
    a = ap.parse_args()
    if a.tum and not (a.motion and a.pose and len(a.pose) == 6):
        ap.error("--tum needs --motion and --pose x,y,z,roll,pitch,yaw")
    sweep = Sweep(read_pcd_xyz(a.scan), a.height_mm * 1e-3, a.offset_mm * 1e-3)
    still = np.zeros(5)
    table = np.array(SOURCES_TABLE.split(), dtype=float)
    for _ in range(4):
        table = refine(sweep.elevations(still), table, 0.4)
    med, share = sharpness(sweep, table, still)
    print(f"# rays from {a.height_mm} mm above the origin, {a.offset_mm} mm out, sensor still: "
          f"median |elevation - ring| {med:.3f} deg, {share:.1%} of points within 0.1 deg")
    motion = still
    if a.motion:
        table, motion = fit(sweep, table, still, 5)
        med, share = sharpness(sweep, table, motion)
        print(f"# moving, points in the sensor frame at the end of the sweep: median |elevation - ring| {med:.3f} "
              f"deg, {share:.1%} of points within 0.1 deg")
        print(f"# velocity (m per sweep, scan frame) {np.round(motion[:3], 4).tolist()}, "
              f"roll and pitch turned (deg per sweep) {np.round(np.degrees(motion[3:5]), 3).tolist()}")
    print("elevations_deg = [")
    for i in range(0, len(table), 8):
        print("    " + ", ".join(f"{v:.2f}" for v in table[i:i + 8]) + ",")
    print("]")
    if a.tum:
        write_tum(a.tum, a.pose, motion, a.rate_hz)
        print(f"# wrote {a.tum}")


if __name__ == "__main__":
    main()
