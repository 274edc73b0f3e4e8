"""Reads a COPC file (.copc.laz) as web viewers and GIS tools do: laspy's CopcReader (with lazrs) and copclib.

usage: check_copc.py FILE.copc.laz POINTS.xyz
  POINTS.xyz holds the map's points (x y z per line, as `aerie export MAP POINTS.xyz` writes them). Checks that
  - a query of everything returns every point of the map exactly once (at the file's scale);
  - a spatial query over a box returns exactly the map's points in that box;
  - a query at each level's resolution returns the points of levels 0..k, and level k's points cover every cell
    of that level's spacing that holds a map point (a uniform subsample);
  - copclib opens it, its hierarchy's nodes and pages match laspy's, every node's points lie in the node's
    bounds (ValidateSpatialBounds), and its points are the same;
  prints one JSON line of figures.
"""

import json
import math
import sys

import copclib
import laspy
import numpy as np


def load_xyz(path):
    rows = [line.split()[:3] for line in open(path) if line.strip() and line[0] not in "#/"]
    return np.array(rows, dtype=np.float64)


def as_ints(xyz, scales, offsets):
    return np.round((xyz - offsets) / scales).astype(np.int64)


def sorted_rows(a):
    return a[np.lexsort(a.T[::-1])]


def points_of(record):
    return np.stack([np.asarray(record.X), np.asarray(record.Y), np.asarray(record.Z)], axis=1).astype(np.int64)


def fail(message):
    sys.exit(message)


def check_all(reader, expected):
    got = sorted_rows(points_of(reader.query()))
    if got.shape != expected.shape or not np.array_equal(got, expected):
        fail(f"query of everything: {len(got)} points, the map has {len(expected)}, or they differ")
    if len(np.unique(got, axis=0)) != len(np.unique(expected, axis=0)):
        fail("a point is written twice")
    return len(got)


def check_box(reader, expected, scales, offsets):
    lo, hi = expected.min(axis=0), expected.max(axis=0)
    box_lo = lo + (hi - lo) * 0.2
    box_hi = lo + (hi - lo) * 0.6
    mins = box_lo * scales + offsets
    maxs = box_hi * scales + offsets
    # Box corners on the file's grid, so that the reader's rounding and ours agree.
    b_lo, b_hi = as_ints(mins, scales, offsets), as_ints(maxs, scales, offsets)
    inside = np.all((expected >= b_lo) & (expected <= b_hi), axis=1)
    got = sorted_rows(points_of(reader.query(bounds=laspy.Bounds(mins, maxs))))
    want = sorted_rows(expected[inside])
    if not np.array_equal(got, want):
        fail(f"box query: {len(got)} points, the map has {len(want)} in the box, or they differ")
    return len(want)


def check_levels(reader, expected, scales):
    info = reader.copc_info
    center = np.array(info.center)
    offsets = np.array(reader.header.offsets)
    cube_min = (center - info.halfsize - offsets) / scales
    depth = max(node.key.level for node in reader.root_page.entries.values())
    counts = []
    previous = 0
    for k in range(depth + 1):
        resolution = info.spacing / 2**k
        got = points_of(reader.query(resolution=resolution))
        direct = points_of(reader.query(level=range(0, k + 1)))
        if not np.array_equal(sorted_rows(got), sorted_rows(direct)):
            fail(f"resolution {resolution}: not the points of levels 0..{k}")
        if len(got) < previous:
            fail(f"levels 0..{k} hold fewer points than levels 0..{k - 1}")
        previous = len(got)
        counts.append(len(got))
        cell = info.spacing / 2**k / scales
        # The cells per axis at level k; a point on the cube's upper face is in the last cell.
        last = round(2 * info.halfsize / info.spacing) * 2**k - 1
        cells = lambda pts: {tuple(c) for c in np.minimum(np.floor((pts - cube_min) / cell), last).astype(np.int64)}
        missing = cells(expected) - cells(got)
        if missing:
            fail(f"levels 0..{k} leave {len(missing)} cells of {info.spacing / 2**k:.4f} m with map points empty")
    if counts[-1] != len(expected):
        fail(f"all levels hold {counts[-1]} points, the map {len(expected)}")
    return counts


def check_copclib(path, reader, expected):
    f = copclib.FileReader(path)
    nodes = f.GetAllNodes()
    laspy_nodes = [n for n in reader.root_page.entries.values() if n.point_count >= 0]
    if len(nodes) != len(laspy_nodes):
        fail(f"copclib sees {len(nodes)} nodes, laspy {len(laspy_nodes)}")
    pages = f.GetPageList()
    if len(pages) < 1:
        fail("copclib finds no hierarchy page")
    if sum(n.point_count for n in nodes) != len(expected):
        fail("copclib's nodes do not hold every point")
    if not f.ValidateSpatialBounds(True):
        fail("copclib: a node's points lie outside its bounds")
    header = f.copc_config.las_header
    if header.point_count != len(expected) or header.point_format_id not in (6, 7, 8):
        fail(f"copclib reads {header.point_count} points of format {header.point_format_id}")
    pts = f.GetAllPoints()
    xyz = np.stack([np.array(pts.x), np.array(pts.y), np.array(pts.z)], axis=1)
    got = sorted_rows(as_ints(xyz, np.array(reader.header.scales), np.array(reader.header.offsets)))
    if not np.array_equal(got, expected):
        fail("copclib's points differ from the map's")
    return len(nodes), len(pages)


def main(argv):
    path = argv[1]
    with laspy.CopcReader.open(path) as reader:
        scales = np.array(reader.header.scales)
        offsets = np.array(reader.header.offsets)
        expected = sorted_rows(as_ints(load_xyz(argv[2]), scales, offsets))
        total = check_all(reader, expected)
        in_box = check_box(reader, expected, scales, offsets)
        levels = check_levels(reader, expected, scales)
        nodes, pages = check_copclib(path, reader, expected)
    print(json.dumps({"points": total, "in_box": in_box, "points_to_level": levels, "nodes": nodes,
                      "pages": pages, "point_format": reader.header.point_format.id}))


if __name__ == "__main__":
    main(sys.argv)
