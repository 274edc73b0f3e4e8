#!/usr/bin/env python3
"""How smoothly a recorded Aerie flight reached its goals, from its output folder (`aerie fly -o RUN_DIR`):
the share of flight time below 0.1 m/s between take-off and the last goal reached before landing, and, for
each `goal` (planned) leg, the path flown against the planner's shortest collision-free path
(`planned_path_m` of its goal_reached event). Speeds are central differences of the ground truth (<vehicle>.tum,
100 Hz). Prints one JSON object.

usage: flight_smoothness.py RUN_DIR [--vehicle uav]
"""
import argparse
import json
import math
import os


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--vehicle", default="uav")
    a = ap.parse_args()
    events = [json.loads(l) for l in open(os.path.join(a.run, "events.jsonl")) if l.strip()]
    events = [e for e in events if e.get("vehicle") == a.vehicle]
    track = [list(map(float, l.split()[:4])) for l in open(os.path.join(a.run, a.vehicle + ".tum")) if l.strip()]
    takeoff = next(e["time_s"] for e in events if e["event"] == "takeoff")
    reached = [e for e in events if e["event"] == "goal_reached" and e["kind"] != "land"]
    if not reached:
        raise SystemExit("no goal reached before landing")
    end = reached[-1]["time_s"]

    def speed(i):
        j, k = max(i - 1, 0), min(i + 1, len(track) - 1)
        dt = track[k][0] - track[j][0]
        return math.dist(track[k][1:], track[j][1:]) / dt if dt > 0 else 0.0

    def span(t0, t1):
        idx = [i for i, p in enumerate(track) if t0 <= p[0] <= t1]
        slow = sum(1 for i in idx if speed(i) < 0.1)
        length = sum(math.dist(track[i][1:], track[i + 1][1:]) for i in idx[:-1])
        return len(idx), slow, length

    n, slow, flown = span(takeoff, end)
    legs = []
    previous = takeoff
    for e in [x for x in events if x["event"] == "goal_reached"]:
        if e["kind"] == "goal" and e.get("planned_path_m"):
            m, s, length = span(previous, e["time_s"])
            legs.append({
                "goal": e["goal"],
                "flown_m": round(length, 2),
                "planned_m": round(e["planned_path_m"], 2),
                "ratio": round(length / e["planned_path_m"], 3),
                "below_0_1_share": round(s / max(m, 1), 4),
            })
        previous = e["time_s"]
    collisions = sum(1 for e in events if e["event"] == "collision")
    print(json.dumps({
        "run": a.run,
        "takeoff_s": takeoff,
        "last_goal_s": end,
        "flown_m": round(flown, 2),
        "below_0_1_share": round(slow / max(n, 1), 4),
        "goal_legs": legs,
        "collisions": collisions,
    }))


if __name__ == "__main__":
    main()
