"""Reads an OctoMap tree (.bt) with pyoctomap, OctoMap's Python binding, as a planner would load it.

usage: check_octomap.py TREE.bt POINTS.xyz SX SY SZ
  checks that every point of POINTS.xyz (the map's points, x y z per line) lies in an occupied voxel, and
  that the voxels along the ray from the scanner (SX, SY, SZ) to each point, from 10% to 80% of the way,
  are known and free; prints one JSON line of figures.
usage: check_octomap.py --refuses TREE.bt
  checks that pyoctomap refuses the file (a truncated tree) and prints "refused".
"""

import json
import sys

import pyoctomap


def load(path):
    tree = pyoctomap.OcTree(0.1)
    ok = tree.readBinary(path)
    return tree, bool(ok)


def main(argv):
    if argv[1] == "--refuses":
        tree, ok = load(argv[2])
        if ok:
            sys.exit(f"pyoctomap read the truncated {argv[2]} ({tree.size()} nodes)")
        print("refused")
        return
    tree, ok = load(argv[1])
    if not ok:
        sys.exit(f"pyoctomap could not read {argv[1]}")
    points = [list(map(float, line.split()[:3])) for line in open(argv[2]) if line.strip() and line[0] not in "#/"]
    scanner = [float(v) for v in argv[3:6]]
    occupied = 0
    for p in points:
        node = tree.search(p)
        if node is None or not tree.isNodeOccupied(node):
            sys.exit(f"the map's point {p} is not in an occupied voxel")
        occupied += 1
    free = 0
    for p in points:
        for t in (0.1, 0.3, 0.5, 0.8):
            q = [s + t * (c - s) for s, c in zip(scanner, p)]
            node = tree.search(q)
            if node is None:
                sys.exit(f"{q}, on the ray from the scanner to {p}, is unknown")
            if tree.isNodeOccupied(node):
                sys.exit(f"{q}, on the ray from the scanner to {p}, is occupied")
            free += 1
    print(json.dumps({"resolution": tree.getResolution(), "nodes": tree.size(), "leaves": tree.getNumLeafNodes(),
                      "occupied_points": occupied, "free_ray_points": free}))


if __name__ == "__main__":
    main(sys.argv)
