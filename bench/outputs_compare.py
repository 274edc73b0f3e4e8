#!/usr/bin/env python3
"""outputs_compare.py A B: byte-compare two output trees of bench/outputs_identity.sh, with wall-clock timings
and the mission file's path blanked (a map's sections are compared one by one: its metadata holds the timings)."""
import os, re, struct, sys
TIMING = re.compile(rb'"(seconds|wall_s|real_time_factor)":\s*[-+0-9.eE]+')
MISSION = re.compile(rb'"mission":\s*"[^"]*"')
TOML_T = re.compile(rb'seconds = [-+0-9.eE]+')
def amap_sections(b):
    """The .amap's sections by kind, metadata with its timings blanked (CRCs and padding are not compared)."""
    count, = struct.unpack_from('<I', b, 40); table, = struct.unpack_from('<Q', b, 48)
    out = [b[:12]]
    for i in range(count):
        kind, es, off, ln = struct.unpack_from("<IIQQ", b, table + 32 * i)
        out.append(struct.pack("<II", kind, es))
        s = b[off:off + ln]
        out.append(TOML_T.sub(rb'seconds = 0', s))
    return b'|'.join(out)
def norm(b, name=''):
    if name.endswith('.amap'): return amap_sections(b)
    return MISSION.sub(b'"mission":""', TIMING.sub(rb'"\1":0', b))
a, b = sys.argv[1], sys.argv[2]
bad = 0
for root, _, files in os.walk(a):
    for f in files:
        pa = os.path.join(root, f); pb = os.path.join(b, os.path.relpath(pa, a))
        if not os.path.exists(pb): print("missing in B:", pb); bad += 1; continue
        if norm(open(pa, 'rb').read(), f) != norm(open(pb, 'rb').read(), f): print("DIFFERS:", os.path.relpath(pa, a)); bad += 1
for root, _, files in os.walk(b):
    for f in files:
        pb = os.path.join(root, f)
        if not os.path.exists(os.path.join(a, os.path.relpath(pb, b))): print("missing in A:", pb); bad += 1
print("IDENTICAL" if bad == 0 else f"{bad} differences"); sys.exit(1 if bad else 0)
