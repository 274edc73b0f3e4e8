#!/usr/bin/env python3
"""Decodes every message of an Aerie flight recording the way ROS tools would, with two independent decoders:
the `mcap` reader with `mcap-ros2-support` (which parses the ros2msg schemas in the file), and `rosbags`'
ROS 2 Humble typestore (which ignores them and uses the official message definitions). Prints one JSON line with
the count per topic and exits non-zero on any failure.

Given a folder, reads it as a rosbag2 bag (metadata.yaml beside the MCAP, `aerie fly --rosbag2`) with rosbags'
Reader, deserialises every message and checks the counts against the metadata.

usage: check_mcap.py FLIGHT.mcap | BAG_FOLDER
"""
import json
import os
import sys

from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rosbags.interfaces import QosDurability, QosReliability
from rosbags.rosbag2.metadata import parse_qos
from rosbags.typesys import Stores, get_typestore

LAYOUTS = [
    ["x", "y", "z", "intensity", "t", "ring"],  # ouster-ros
    ["x", "y", "z", "intensity", "ring", "time"],  # velodyne_pointcloud
    ["x", "y", "z", "intensity", "tag", "line", "timestamp"],  # livox_ros_driver2
]


def check_bag(folder):
    from rosbags.rosbag2 import Reader

    store = get_typestore(Stores.ROS2_HUMBLE)
    counts = {}
    with Reader(folder) as reader:
        for connection, _, raw in reader.messages():
            store.deserialize_cdr(raw, connection.msgtype)
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
        listed = {c.topic: c.msgcount for c in reader.connections}
        assert counts == listed, (counts, listed)
        assert reader.message_count == sum(counts.values())
    print(json.dumps({"messages": sum(counts.values()), "topics": counts}))
    return 0 if counts else 1


def main(path):
    if os.path.isdir(path):
        return check_bag(path)
    store = get_typestore(Stores.ROS2_HUMBLE)
    counts, checked = {}, 0
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            # The QoS rosbag2 replays with, parsed as rosbags parses it: /tf_static latched, the rest volatile.
            (qos,) = parse_qos(channel.metadata["offered_qos_profiles"])
            latched = channel.topic == "/tf_static"
            assert qos.durability == (QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE), qos
            assert qos.reliability == QosReliability.RELIABLE, qos
            other = store.deserialize_cdr(message.data, schema.name)
            if schema.name == "sensor_msgs/msg/PointCloud2":
                names = [fld.name for fld in decoded.fields]
                # One of the drivers' layouts (the sensor's `point_fields`).
                assert names in LAYOUTS, names
                assert decoded.width * decoded.point_step == len(decoded.data) == len(other.data)
                assert other.header.frame_id == decoded.header.frame_id
            elif schema.name == "sensor_msgs/msg/Imu":
                az = decoded.linear_acceleration.z
                assert abs(az - other.linear_acceleration.z) < 1e-12
                assert -50 < az < 50, az
            elif schema.name == "nav_msgs/msg/Odometry":
                assert decoded.child_frame_id == other.child_frame_id
                q = decoded.pose.pose.orientation
                assert abs(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w - 1) < 1e-6
            elif schema.name == "tf2_msgs/msg/TFMessage":
                assert len(decoded.transforms) == len(other.transforms) > 0
            else:
                raise AssertionError("unexpected schema " + schema.name)
            checked += 1
    print(json.dumps({"messages": checked, "topics": counts}))
    return 0 if checked > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
