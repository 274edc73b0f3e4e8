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
//! Files are written through a temporary file and renamed by [`Recorder::finish`]; nothing in them depends on
//! the wall clock, so the same flight gives byte-identical files.

pub(crate) mod cdr;
pub mod plot;
pub mod ros2;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use nalgebra::Isometry3;

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

/// An MCAP file being written.
pub struct Recorder {
    path: PathBuf,
    tmp: PathBuf,
    /// Lists `tmp` for removal should the process end on a signal.
    _pending: aerie_pipeline::io::atomic::Pending,
    writer: Option<mcap::Writer<BufWriter<File>>>,
    channels: BTreeMap<String, u16>,
    sequence: u32,
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    path.with_file_name(format!(".{name}.partial"))
}

impl Recorder {
    /// Starts writing `path` (through a temporary file beside it).
    pub fn create(path: &Path) -> Result<Recorder, RecordError> {
        let tmp = temp_path(path);
        let file = File::create(&tmp).map_err(|e| RecordError::write(path, &e))?;
        let pending = aerie_pipeline::io::atomic::Pending::new(&tmp);
        let opts = mcap::WriteOptions::new()
            .profile("ros2")
            .library("aerie")
            .compression(None);
        let writer = opts.create(BufWriter::new(file)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RecordError::write(path, &e)
        })?;
        Ok(Recorder {
            path: path.to_path_buf(),
            tmp,
            _pending: pending,
            writer: Some(writer),
            channels: BTreeMap::new(),
            sequence: 0,
        })
    }

    fn err(&self, e: &(dyn std::error::Error + 'static)) -> RecordError {
        RecordError::write(&self.path, e)
    }

    fn channel(&mut self, topic: &str, type_name: &str) -> Result<u16, RecordError> {
        if let Some(id) = self.channels.get(topic) {
            return Ok(*id);
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
        let id = r.map_err(|e| self.err(&e))?;
        self.channels.insert(topic.to_string(), id);
        Ok(id)
    }

    /// Writes one CDR message on `topic` at simulation time `t` (log and publish time).
    pub fn write(
        &mut self,
        topic: &str,
        type_name: &str,
        t: f64,
        data: &[u8],
    ) -> Result<(), RecordError> {
        let channel_id = self.channel(topic, type_name)?;
        self.sequence += 1;
        let ns = (t.max(0.0) * 1e9).round() as u64;
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

    /// Writes the summary and renames the file into place; on failure the temporary file is removed.
    pub fn finish(mut self) -> Result<(), RecordError> {
        let finished = match self.writer.take() {
            Some(mut w) => w.finish().map(drop).map_err(|e| self.err(&e)),
            None => Ok(()),
        };
        let renamed = finished
            .and_then(|()| std::fs::rename(&self.tmp, &self.path).map_err(|e| self.err(&e)));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        renamed
    }
}

impl Drop for Recorder {
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
