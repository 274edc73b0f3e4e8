#!/usr/bin/env python3
"""Read speed of several Aerie builds on the same files, alternating builds round by round.

Usage: python3 bench/read_builds.py BUILD,BUILD[,...] FILE... (a BUILD is the path of an `aerie` binary)
Environment: ROUNDS (default 5) rounds; REPEAT (default 15) timed reads per file and round, after a warm-up.

Each round runs `aerie bench read --json --repeat REPEAT FILE...` once per build, in turn, so that the load of
a shared machine falls on every build alike. Per file and build it prints the median of the round medians, the
lowest round median and every round's, and the load average before each round.
"""
import json, os, statistics, subprocess, sys

def main():
    rounds = int(os.environ.get("ROUNDS", "5"))
    repeat = os.environ.get("REPEAT", "15")
    builds = sys.argv[1].split(",")
    files = sys.argv[2:]
    res = {b: {f: [] for f in files} for b in builds}
    load = []
    for _ in range(rounds):
        load.append(open("/proc/loadavg").read().split()[0])
        for b in builds:
            out = subprocess.run([b, "bench", "read", "--json", "--repeat", repeat] + files,
                                 check=True, capture_output=True, text=True).stdout
            for f, line in zip(files, out.strip().splitlines()):
                res[b][f].append(json.loads(line)["median_s"] * 1e3)
    print("load before each round:", " ".join(load))
    for f in files:
        print(os.path.basename(f))
        for b in builds:
            v = res[b][f]
            print(f"   {b:<28} median {statistics.median(v):8.2f} ms  min {min(v):8.2f}  rounds "
                  + " ".join(f"{x:.2f}" for x in v))

if __name__ == "__main__":
    main()
