#!/usr/bin/env python3
"""Runs KISS-ICP, a real LiDAR odometry, on the scans of a recorded Aerie flight and reports its trajectory error
against the ground truth.

usage: kiss_icp_flight.py RUN_DIR [--vehicle uav] [--sensor os0] [--mount x,y,z]

Reads RUN_DIR/flight.mcap (sensor_msgs/PointCloud2 with per-point times in any of the drivers' layouts) and RUN_DIR/<vehicle>.tum
(body ground truth). KISS-ICP gets each frame's points and per-point times (it deskews with them). Its poses are
of the sensor relative to the first frame; the ground truth is moved to the sensor by the mounting (a pure
translation in the examples) and to the first frame, then both are compared at the frame stamps.
ATE = RMS of the position differences after a rigid (rotation + translation, no scale) alignment (Umeyama),
reported in metres and as a share of the ground-truth path length. Needs: pip install kiss-icp mcap mcap-ros2-support.
"""
import argparse
import json

import numpy as np
from kiss_icp.config import KISSConfig
from kiss_icp.kiss_icp import KissICP
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory


# PointField datatypes -> numpy, and each driver layout's time field: (name, seconds per unit, since the stamp).
DTYPES = {2: "u1", 4: "<u2", 6: "<u4", 7: "<f4", 8: "<f8"}
TIMES = [("t", 1e-9, True), ("time", 1.0, True), ("timestamp", 1e-9, False)]


def frames(path, topic):
    """Each frame's stamp, points and per-point times since the stamp, read by the message's own field table (the
    sensor's `point_fields`: ouster-ros `t`, velodyne_pointcloud `time`, livox_ros_driver2 `timestamp`)."""
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, _, _, msg in reader.iter_decoded_messages(topics=[topic]):
            dtype = np.dtype({"names": [fl.name for fl in msg.fields],
                              "formats": [DTYPES[fl.datatype] for fl in msg.fields],
                              "offsets": [fl.offset for fl in msg.fields], "itemsize": msg.point_step})
            raw = np.frombuffer(bytes(msg.data), dtype=dtype)
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            xyz = np.stack([raw["x"], raw["y"], raw["z"]], 1).astype(np.float64)
            name, unit, relative = next(tm for tm in TIMES if tm[0] in dtype.names)
            t = raw[name].astype(np.float64) * unit - (0.0 if relative else stamp)
            yield stamp, xyz, t


def quat_to_rot(q):
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def umeyama(a, b):
    """R, t minimising |R a + t - b| (rows are points)."""
    ma, mb = a.mean(0), b.mean(0)
    u, _, vt = np.linalg.svd((b - mb).T @ (a - ma))
    d = np.diag([1, 1, np.sign(np.linalg.det(u @ vt))])
    r = u @ d @ vt
    return r, mb - r @ ma


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--vehicle", default="uav")
    ap.add_argument("--sensor", default="os0")
    ap.add_argument("--mount", default="0,0,0.1")
    a = ap.parse_args()
    mount = np.array([float(v) for v in a.mount.split(",")])
    gt = np.loadtxt(f"{a.run}/{a.vehicle}.tum")
    cfg = KISSConfig()
    cfg.data.deskew = True
    cfg.data.max_range = 60.0
    cfg.mapping.voxel_size = cfg.data.max_range / 100.0  # what KISS-ICP derives by default
    cfg.data.min_range = 0.3
    odom = KissICP(cfg)
    est, ref = [], []
    for stamp, xyz, t in frames(f"{a.run}/flight.mcap", f"/{a.vehicle}/{a.sensor}/points"):
        if len(xyz) < 100:
            continue
        # KISS-ICP wants per-point times normalised to the frame: 0..1.
        odom.register_frame(xyz, t / max(t.max(), 1e-9))
        est.append(odom.last_pose[:3, 3].copy())
        # Ground truth of the sensor at the frame's end (KISS-ICP's pose is at the end of the deskewed frame).
        end = stamp + t.max()
        k = min(np.searchsorted(gt[:, 0], end), len(gt) - 1)
        r = quat_to_rot(gt[k, 4:8])
        ref.append(gt[k, 1:4] + r @ mount)
    est, ref = np.array(est), np.array(ref)
    r, tr = umeyama(est, ref)
    err = np.linalg.norm((est @ r.T + tr) - ref, axis=1)
    length = np.linalg.norm(np.diff(gt[:, 1:4], axis=0), axis=1).sum()
    ate = float(np.sqrt((err ** 2).mean()))
    print(json.dumps({"frames": len(est), "path_length_m": round(length, 3), "ate_rmse_m": round(ate, 4),
                      "ate_share_of_path": round(ate / length, 5), "max_error_m": round(float(err.max()), 4),
                      "final_error_m": round(float(err[-1]), 4)}))


if __name__ == "__main__":
    main()
