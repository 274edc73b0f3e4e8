#!/usr/bin/env python3
"""Whether `beamcmp.py`'s missed beams are missing returns or its ring bins (docs/accuracy.md, section 3).

beamcmp.py bins beams on 64 evenly spaced nominal rings. A sensor whose rings are uneven (a measured ring table),
simulated faithfully, can put a beam's point on the other side of a bin boundary from the real one. This prints,
for SIM against REAL (both in the sensor frame, as beamcmp.py reads them):
- the real points in bins with no simulated point, and how far they sit from their nominal ring (a bin's edge is
  half the ring spacing, 0.72 deg), against all real points;
- the share of real points with a simulated point within 0.2 and 0.4 deg of their direction (binning aside);
- beamcmp's hit with its ring grid moved by a quarter to a half of the ring spacing.

    python3 bench/beamcmp_bins.py sim.pcd ../shared/data/pcd/os0_hall_scan_full40.pcd [--tools ../shared/tools]
"""
import argparse
import os
import sys

import numpy as np
from scipy.spatial import cKDTree

RINGS = (-45.46, 45.85, 64)  # beamcmp.py's nominal rings
W = 1024  # beamcmp.py's default columns


def directions(p):
    r = np.linalg.norm(p, axis=1)
    keep = (r > 0.3) & np.isfinite(r)
    return p[keep] / r[keep][:, None]


def ring_offset(u, el_nom):
    """Per point, beamcmp.beams' bin key (its ring and column rule, which it keeps to itself) and the distance
    from the nominal ring, degrees."""
    el = np.degrees(np.arcsin(np.clip(u[:, 2], -1, 1)))
    ring = np.clip(np.searchsorted(el_nom, el), 1, len(el_nom) - 1)
    ring -= (el - el_nom[ring - 1]) < (el_nom[ring] - el)
    az = np.degrees(np.arctan2(u[:, 1], u[:, 0])) % 360.0
    col = np.round(az / (360.0 / W)).astype(np.int64) % W
    return ring * W + col, np.abs(el - el_nom[ring])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sim")
    ap.add_argument("real")
    ap.add_argument("--tools", default=os.path.join(here, "..", "..", "shared", "tools"), help="beamcmp.py's folder")
    a = ap.parse_args()
    sys.path.insert(0, a.tools)
    import beamcmp
    import cloudio

    sim = cloudio.xyz(cloudio.read(a.sim))
    real = cloudio.xyz(cloudio.read(a.real))
    el_nom = np.linspace(*RINGS)
    su, ru = directions(sim), directions(real)
    skey, _ = ring_offset(su, el_nom)
    rkey, roff = ring_offset(ru, el_nom)
    missed = ~np.isin(rkey, skey)
    print(f"real points in bins without a simulated point: {missed.sum()} of {len(ru)}; from their nominal ring: "
          f"median {np.median(roff[missed]):.2f} deg, {np.mean(roff[missed] > 0.5):.0%} beyond 0.5 deg "
          f"(all real points: {np.median(roff):.2f} deg, {np.mean(roff > 0.5):.0%})")
    d = cKDTree(su).query(ru)[0]
    ang = np.degrees(2 * np.arcsin(np.clip(d / 2, 0, 1)))
    print(f"real points with a simulated point within 0.2 deg: {np.mean(ang < 0.2):.4f}, within 0.4 deg: "
          f"{np.mean(ang < 0.4):.4f}; for those in missed bins, median {np.median(ang[missed]):.2f} deg")
    hits = []
    for shift in (0.0, 0.18, 0.36, 0.54, 0.72):
        bs, _ = beamcmp.beams(sim, W, el_nom + shift)
        br, _ = beamcmp.beams(real, W, el_nom + shift)
        hits.append(f"{shift:.2f} deg: {sum(k in bs for k in br) / max(1, len(br)):.4f}")
    print("beamcmp hit with its ring grid moved by " + ", ".join(hits))


if __name__ == "__main__":
    main()
