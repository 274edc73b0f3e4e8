//! rosbag2's `metadata.yaml`: what makes a folder holding an MCAP a bag that `ros2 bag info`, `ros2 bag play`
//! and rosbags open. Written in the layout of version 5 (ROS 2 Humble), which every later rosbag2 reads; the MCAP
//! keeps its own chunk compression, which rosbag2 does not list (its `compression_format` is for whole files or
//! messages compressed by rosbag2 itself).

/// One topic of the bag.
pub(super) struct Topic<'a> {
    /// The topic, e.g. `/uav/imu`.
    pub name: &'a str,
    /// Its ROS 2 type, e.g. `sensor_msgs/msg/Imu`.
    pub type_name: &'a str,
    /// The publisher's QoS as rosbag2 writes it (YAML text, stored as a string).
    pub qos: String,
    /// Messages recorded on it.
    pub messages: u64,
}

/// The metadata of a bag of one MCAP file named `file` (beside the YAML), whose messages span `span_ns` (first
/// and last log time, nanoseconds).
pub(super) fn metadata_yaml(file: &str, span_ns: (u64, u64), topics: &[Topic<'_>]) -> String {
    let (start, end) = span_ns;
    let duration = end.saturating_sub(start);
    let total: u64 = topics.iter().map(|t| t.messages).sum();
    let mut y = String::from("rosbag2_bagfile_information:\n");
    y += "  version: 5\n  storage_identifier: mcap\n";
    y += &format!("  duration:\n    nanoseconds: {duration}\n");
    y += &format!("  starting_time:\n    nanoseconds_since_epoch: {start}\n");
    y += &format!("  message_count: {total}\n  topics_with_message_count:\n");
    for t in topics {
        y += &format!(
            "    - topic_metadata:\n        name: {}\n        type: {}\n        serialization_format: cdr\n        \
             offered_qos_profiles: {}\n      message_count: {}\n",
            t.name,
            t.type_name,
            quoted(&t.qos),
            t.messages
        );
    }
    y += "  compression_format: \"\"\n  compression_mode: \"\"\n";
    y += &format!("  relative_file_paths:\n    - {file}\n");
    y += &format!(
        "  files:\n    - path: {file}\n      starting_time:\n        nanoseconds_since_epoch: {start}\n      \
         duration:\n        nanoseconds: {duration}\n      message_count: {total}\n"
    );
    y
}

/// `s` as a double-quoted YAML scalar.
fn quoted(s: &str) -> String {
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q += "\\\"",
            '\\' => q += "\\\\",
            '\n' => q += "\\n",
            c => q.push(c),
        }
    }
    q + "\""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_lists_the_file_and_each_topic_with_its_count() {
        let topics = [
            Topic {
                name: "/tf_static",
                type_name: "tf2_msgs/msg/TFMessage",
                qos: "- history: 3\n  depth: 0".into(),
                messages: 1,
            },
            Topic {
                name: "/uav/imu",
                type_name: "sensor_msgs/msg/Imu",
                qos: String::new(),
                messages: 200,
            },
        ];
        let y = metadata_yaml("flight.mcap", (0, 999_000_000), &topics);
        for line in [
            "  version: 5\n",
            "  storage_identifier: mcap\n",
            "    nanoseconds: 999000000\n",
            "  message_count: 201\n",
            "        name: /uav/imu\n        type: sensor_msgs/msg/Imu\n",
            "        offered_qos_profiles: \"- history: 3\\n  depth: 0\"\n      message_count: 1\n",
            "  relative_file_paths:\n    - flight.mcap\n",
        ] {
            assert!(y.contains(line), "{line:?} not in\n{y}");
        }
    }
}
