//! Recording a flight: MCAP with ROS 2 messages (what `ros2 bag play`, Foxglove and offline SLAM read) and
//! ground-truth trajectories in TUM format (what evo reads).
//!
//! Topics and frames (documented for users in docs/user-guide.md):
//!
//! | topic | type | frame |
//! |---|---|---|
//! | `/<vehicle>/<sensor>/points` | sensor_msgs/PointCloud2 in the point layout of the sensor's driver ([`crate::sensor::PointFields`]: Ouster x y z intensity t ring, Velodyne x y z intensity ring time, Livox x y z intensity tag line timestamp) | `<vehicle>/<sensor>`, stamped at the frame start |
//! | `/<vehicle>/imu` | sensor_msgs/Imu | `<vehicle>/base_link` |
//! | `/<vehicle>/odom` | nav_msgs/Odometry (ground truth) | `map` -> `<vehicle>/base_link` |
//! | `/tf` | tf2_msgs/TFMessage | `map` -> `<vehicle>/base_link` (with the odometry) |
//! | `/tf_static` | tf2_msgs/TFMessage | `<vehicle>/base_link` -> `<vehicle>/<sensor>` (once) |
//!
//! Chunks are compressed with zstd by default ([`Compression`]), as `ros2 bag record` users and Foxglove's
//! writer do; every MCAP reader (rosbag2's storage plugin, Foxglove, the `mcap` and `rosbags` Python packages)
//! reads zstd and lz4 chunks. [`RecordOptions::rosbag2`] adds the `metadata.yaml` that makes the folder a rosbag2
//! bag (`ros2 bag info DIR`, `ros2 bag play DIR`).
//!
//! Files are written through a temporary file and renamed by [`Recorder::finish`]; nothing in them depends on
//! the wall clock, so the same flight gives byte-identical files.

pub(crate) mod cdr;
pub mod ros2;
mod rosbag2;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use nalgebra::Isometry3;

use crate::render::ScanPoint;
use crate::sensor::PointFields;

/// Ground truth of a vehicle at one instant: time (s), world_from_body, velocity (world, m/s).
pub type TrackSample = (f64, Isometry3<f64>, nalgebra::Vector3<f64>);

/// Errors of writing a recording; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Creating, writing or renaming the MCAP file failed, or a write came after [`Recorder::finish`].
    #[error("{path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong, with the operating system's reason.
        message: String,
        /// Whether the path the user gave is the cause (a directory in the way, no permission), not the machine.
        bad_path: bool,
    },
    /// Writing a file of the recording through [`aerie_pipeline::io::atomic`] failed.
    #[error(transparent)]
    Output(#[from] aerie_pipeline::Error),
}

impl RecordError {
    /// A [`RecordError::Write`] for `path`: the message is `e` and its causes (the MCAP writer's own message,
    /// "I/O error from writing", says nothing without the operating system's "No space left on device").
    fn write(path: &Path, e: &(dyn std::error::Error + 'static)) -> RecordError {
        let mut message = e.to_string();
        let mut bad_path = false;
        let mut cause = Some(e);
        while let Some(c) = cause {
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                bad_path |= aerie_pipeline::is_bad_path(io);
            }
            let text = c.to_string();
            if !message.contains(&text) {
                message = format!("{message}: {text}");
            }
            cause = c.source();
        }
        RecordError::Write {
            path: path.to_path_buf(),
            message,
            bad_path,
        }
    }

    /// True when the user's output path is the cause rather than the machine (the CLI exits 2 for these).
    pub fn is_bad_input(&self) -> bool {
        match self {
            RecordError::Write { bad_path, .. } => *bad_path,
            RecordError::Output(e) => e.is_bad_input(),
        }
    }
}

/// How the MCAP's chunks are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// zstd at its default level 3: the hall loop's OS0-64 recording shrinks to 0.675 of its size, at about
    /// 220 MB/s on one core (docs/benchmarks.md; LiDAR points are float32 with noise in their low bits).
    #[default]
    Zstd,
    /// lz4: faster than zstd, larger files.
    Lz4,
    /// Uncompressed chunks (what every MCAP reader, even one without codecs, can read).
    None,
}

impl Compression {
    /// Every choice, in the order of [`Compression::NAMES`].
    pub const ALL: [Compression; 3] = [Compression::Zstd, Compression::Lz4, Compression::None];
    /// The choices' names, as the CLI and the mission file spell them.
    pub const NAMES: [&'static str; 3] = ["zstd", "lz4", "none"];

    /// The codec's name, as the CLI and the mission file spell it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
            Compression::None => "none",
        }
    }

    fn codec(self) -> Option<mcap::Compression> {
        match self {
            Compression::Zstd => Some(mcap::Compression::Zstd),
            Compression::Lz4 => Some(mcap::Compression::Lz4),
            Compression::None => None,
        }
    }
}

impl std::str::FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Compression, String> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown compression {s:?}: use one of {}",
                    Compression::NAMES.join(", ")
                )
            })
    }
}

/// How a recording is written: the `[recording]` table of a mission, which `aerie fly --compression` and
/// `--rosbag2` override.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordOptions {
    /// Chunk compression. By default, zstd.
    #[serde(default)]
    pub compression: Compression,
    /// Also write `metadata.yaml` beside the MCAP, so that its folder is a rosbag2 bag (`ros2 bag info` and
    /// `ros2 bag play` take the folder). By default, false.
    #[serde(default)]
    pub rosbag2: bool,
}

/// A topic of the recording: its channel, type, and messages so far (for rosbag2's metadata).
#[derive(Clone, Debug)]
struct Topic {
    name: String,
    channel_id: u16,
    type_name: &'static str,
    messages: u64,
}

/// An MCAP file being written, on a thread of its own: the flight hands each message over and goes on while the
/// thread encodes and compresses it (zstd's 4-6 s of CPU in the 85 s hall loop run beside the flight's work
/// instead of in it). One thread in message order, so the bytes are the same on every run.
pub struct Recorder {
    path: PathBuf,
    /// Messages to the writer; `None` once finished or after the writer failed.
    to_writer: Option<SyncSender<Message>>,
    /// The writer thread; it hands the file back when the messages end.
    writer: Option<JoinHandle<Result<McapFile, RecordError>>>,
}

/// One message for the writer thread.
struct Message {
    topic: String,
    type_name: &'static str,
    t: f64,
    payload: Payload,
}

/// What a message holds: CDR bytes, or a LiDAR frame the writer thread encodes itself (the largest messages by
/// far, so their encoding too runs beside the flight).
enum Payload {
    Cdr(Vec<u8>),
    Cloud {
        stamp_s: f64,
        frame_id: String,
        points: Vec<ScanPoint>,
        fields: PointFields,
    },
}

impl Payload {
    fn into_cdr(self) -> Vec<u8> {
        match self {
            Payload::Cdr(data) => data,
            Payload::Cloud {
                stamp_s,
                frame_id,
                points,
                fields,
            } => ros2::point_cloud2(stamp_s, &frame_id, &points, fields),
        }
    }
}

/// Messages that may wait for the writer thread: about two seconds of one vehicle's IMU, odometry and /tf, with
/// its LiDAR frames among them (a couple of dozen frames at most, since every vehicle also sends 400 small
/// messages a second), so that the flight does not wait while a frame is being compressed, and memory stays
/// bounded when the disk is slow.
const QUEUE: usize = 1024;

impl Recorder {
    /// Starts writing `path` (through a temporary file beside it), as `options` say.
    pub fn create(path: &Path, options: RecordOptions) -> Result<Recorder, RecordError> {
        let mut file = McapFile::create(path, options)?;
        let (to_writer, messages) = sync_channel::<Message>(QUEUE);
        let writer = std::thread::Builder::new()
            .name("aerie-recorder".into())
            .spawn(move || {
                for m in messages {
                    file.write(&m.topic, m.type_name, m.t, &m.payload.into_cdr())?;
                }
                Ok(file)
            })
            .map_err(|e| RecordError::write(path, &e))?;
        Ok(Recorder {
            path: path.to_path_buf(),
            to_writer: Some(to_writer),
            writer: Some(writer),
        })
    }

    /// Writes one CDR message on `topic` at simulation time `t` (log and publish time). An error of the writer
    /// (a full disk) comes back from the next call.
    pub fn write(
        &mut self,
        topic: &str,
        type_name: &'static str,
        t: f64,
        data: Vec<u8>,
    ) -> Result<(), RecordError> {
        self.send(Message {
            topic: topic.to_string(),
            type_name,
            t,
            payload: Payload::Cdr(data),
        })
    }

    /// Writes a LiDAR frame's `points` as a `sensor_msgs/PointCloud2` ([`ros2::point_cloud2`]) on `topic` at
    /// simulation time `t`, stamped `stamp_s` in `frame_id`, in the driver's layout `fields`.
    pub fn write_cloud(
        &mut self,
        (topic, t): (&str, f64),
        (stamp_s, frame_id): (f64, &str),
        points: Vec<ScanPoint>,
        fields: PointFields,
    ) -> Result<(), RecordError> {
        self.send(Message {
            topic: topic.to_string(),
            type_name: ros2::POINT_CLOUD2,
            t,
            payload: Payload::Cloud {
                stamp_s,
                frame_id: frame_id.to_string(),
                points,
                fields,
            },
        })
    }

    fn send(&mut self, message: Message) -> Result<(), RecordError> {
        let sent = match &self.to_writer {
            Some(tx) => tx.send(message).is_ok(),
            None => return Err(self.finished()),
        };
        if sent {
            return Ok(());
        }
        // The writer stopped on an error: hand it on.
        self.to_writer = None;
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err(self.finished()),
        }
    }

    fn finished(&self) -> RecordError {
        RecordError::Write {
            path: self.path.clone(),
            message: "already finished".into(),
            bad_path: false,
        }
    }

    /// Waits for the writer thread and takes the file back.
    fn join(&mut self) -> Result<McapFile, RecordError> {
        let Some(handle) = self.writer.take() else {
            return Err(self.finished());
        };
        handle.join().unwrap_or_else(|_| {
            Err(RecordError::Write {
                path: self.path.clone(),
                message: "the recorder's thread stopped on an internal error".into(),
                bad_path: false,
            })
        })
    }

    /// Writes what is queued and the summary, renames the file into place, then, if asked, writes rosbag2's
    /// `metadata.yaml` beside it; on failure the temporary file is removed.
    pub fn finish(mut self) -> Result<(), RecordError> {
        self.to_writer = None;
        self.join()?.finish()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // Abandoned (an error or a cancel): the thread ends with the queue, and the file removes itself.
        self.to_writer = None;
        let _ = self.join();
    }
}

/// The MCAP file the writer thread writes.
struct McapFile {
    path: PathBuf,
    tmp: PathBuf,
    /// Lists `tmp` for removal should the process end on a signal.
    _pending: aerie_pipeline::io::atomic::Pending,
    writer: Option<mcap::Writer<BufWriter<File>>>,
    /// Topic name -> its index in `topics`.
    channels: BTreeMap<String, usize>,
    options: RecordOptions,
    /// The topics, in the order of first use.
    topics: Vec<Topic>,
    /// Earliest and latest log time, nanoseconds.
    span_ns: Option<(u64, u64)>,
    sequence: u32,
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    path.with_file_name(format!(".{name}.partial"))
}

impl McapFile {
    fn create(path: &Path, options: RecordOptions) -> Result<McapFile, RecordError> {
        let tmp = temp_path(path);
        let file = File::create(&tmp).map_err(|e| RecordError::write(path, &e))?;
        let pending = aerie_pipeline::io::atomic::Pending::new(&tmp);
        // zstd compresses on the recorder's own thread (no workers of its own): the bytes must not depend on how
        // many cores the machine has, and the flight's work keeps the other cores busy.
        let opts = mcap::WriteOptions::new()
            .profile("ros2")
            .library("aerie")
            .compression(options.compression.codec())
            .compression_threads(0);
        let writer = opts.create(BufWriter::new(file)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RecordError::write(path, &e)
        })?;
        Ok(McapFile {
            path: path.to_path_buf(),
            tmp,
            _pending: pending,
            writer: Some(writer),
            channels: BTreeMap::new(),
            options,
            topics: Vec::new(),
            span_ns: None,
            sequence: 0,
        })
    }

    fn err(&self, e: &(dyn std::error::Error + 'static)) -> RecordError {
        RecordError::write(&self.path, e)
    }

    /// The index in `topics` of `topic`, its channel added on first use.
    fn channel(&mut self, topic: &str, type_name: &'static str) -> Result<usize, RecordError> {
        if let Some(i) = self.channels.get(topic) {
            return Ok(*i);
        }
        let schema = ros2::schema(type_name);
        let w = self.writer.as_mut().ok_or_else(|| RecordError::Write {
            path: self.path.clone(),
            message: "already finished".into(),
            bad_path: false,
        })?;
        let r = w
            .add_schema(type_name, "ros2msg", schema.as_bytes())
            .and_then(|s| w.add_channel(s, topic, "cdr", &qos_metadata(topic)));
        let channel_id = r.map_err(|e| self.err(&e))?;
        self.channels.insert(topic.to_string(), self.topics.len());
        self.topics.push(Topic {
            name: topic.to_string(),
            channel_id,
            type_name,
            messages: 0,
        });
        Ok(self.topics.len() - 1)
    }

    /// Writes one CDR message on `topic` at simulation time `t` (log and publish time).
    fn write(
        &mut self,
        topic: &str,
        type_name: &'static str,
        t: f64,
        data: &[u8],
    ) -> Result<(), RecordError> {
        let index = self.channel(topic, type_name)?;
        let channel_id = self.topics[index].channel_id;
        self.topics[index].messages += 1;
        self.sequence += 1;
        let ns = (t.max(0.0) * 1e9).round() as u64;
        self.span_ns = Some(
            self.span_ns
                .map_or((ns, ns), |(a, b)| (a.min(ns), b.max(ns))),
        );
        let header = mcap::records::MessageHeader {
            channel_id,
            sequence: self.sequence,
            log_time: ns,
            publish_time: ns,
        };
        let r = match self.writer.as_mut() {
            Some(w) => w.write_to_known_channel(&header, data),
            None => return Ok(()),
        };
        r.map_err(|e| self.err(&e))
    }

    /// Writes the summary and renames the file into place, then, if asked, rosbag2's `metadata.yaml` beside
    /// it; on failure the temporary file is removed.
    fn finish(mut self) -> Result<(), RecordError> {
        let finished = match self.writer.take() {
            Some(mut w) => w.finish().map(drop).map_err(|e| self.err(&e)),
            None => Ok(()),
        };
        let renamed = finished
            .and_then(|()| std::fs::rename(&self.tmp, &self.path).map_err(|e| self.err(&e)));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        renamed?;
        if self.options.rosbag2 {
            self.write_rosbag2_metadata()?;
        } else {
            self.remove_stale_rosbag2_metadata()?;
        }
        Ok(())
    }

    /// A `metadata.yaml` beside the MCAP from an earlier recording made with `rosbag2` that lists this file: its
    /// counts are no longer true, and `ros2 bag play` would trust them, so it goes.
    fn remove_stale_rosbag2_metadata(&self) -> Result<(), RecordError> {
        let path = self.path.with_file_name("metadata.yaml");
        let name = self.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let lists_this = std::fs::read_to_string(&path).is_ok_and(|text| {
            text.starts_with("rosbag2_bagfile_information:")
                && text.contains(&format!("relative_file_paths:\n    - {name}\n"))
        });
        if lists_this {
            std::fs::remove_file(&path).map_err(|e| RecordError::write(&path, &e))?;
        }
        Ok(())
    }

    /// rosbag2's `metadata.yaml` in the MCAP's folder, listing the MCAP and its topics.
    fn write_rosbag2_metadata(&self) -> Result<(), RecordError> {
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("flight.mcap");
        let topics: Vec<rosbag2::Topic<'_>> = self
            .topics
            .iter()
            .map(|t| rosbag2::Topic {
                name: &t.name,
                type_name: t.type_name,
                qos: qos_metadata(&t.name)["offered_qos_profiles"].clone(),
                messages: t.messages,
            })
            .collect();
        let yaml = rosbag2::metadata_yaml(name, self.span_ns.unwrap_or((0, 0)), &topics);
        let path = self.path.with_file_name("metadata.yaml");
        aerie_pipeline::io::atomic::write_atomic(&path, |f| {
            f.write_all(yaml.as_bytes())
                .map_err(aerie_pipeline::io::atomic::io_err(&path))
        })?;
        Ok(())
    }
}

impl Drop for McapFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            // Abandoned (an error or a cancel): leave no partial file.
            if let Some(w) = self.writer.take() {
                std::mem::forget(w);
            }
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes a trajectory in TUM format (`t x y z qx qy qz qw`, one pose per line) through a temporary file.
pub fn write_tum(path: &Path, poses: &[(f64, Isometry3<f64>)]) -> Result<(), RecordError> {
    aerie_pipeline::io::atomic::write_atomic_buffered(path, |w| {
        for (t, p) in poses {
            let (v, q) = (p.translation.vector, p.rotation);
            writeln!(
                w,
                "{t:.6} {:.6} {:.6} {:.6} {:.9} {:.9} {:.9} {:.9}",
                v.x, v.y, v.z, q.i, q.j, q.k, q.w
            )
            .map_err(aerie_pipeline::io::atomic::io_err(path))?;
        }
        Ok(())
    })?;
    Ok(())
}

/// The channel metadata rosbag2 writes: the publisher's QoS as YAML (`offered_qos_profiles`, the ROS 2 profile of
/// MCAP), in the integer form of Humble, which later distributions still read. Reliable for every topic;
/// `/tf_static` transient local (latched), as `static_transform_publisher` offers it, so that `ros2 bag play`
/// replays it to subscribers that join late (rviz, a SLAM node); the others volatile. Without it, playback
/// offers every topic volatile and a late subscriber never gets the static transforms.
fn qos_metadata(topic: &str) -> BTreeMap<String, String> {
    let durability = if topic == "/tf_static" { 1 } else { 2 };
    let never = "sec: 9223372036\n    nsec: 854775807";
    let yaml = format!(
        "- history: 3\n  depth: 0\n  reliability: 1\n  durability: {durability}\n  deadline:\n    {never}\n  \
         lifespan:\n    {never}\n  liveliness: 1\n  liveliness_lease_duration:\n    {never}\n  \
         avoid_ros_namespace_conventions: false"
    );
    BTreeMap::from([("offered_qos_profiles".to_string(), yaml)])
}
