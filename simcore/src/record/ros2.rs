//! The ROS 2 messages a flight records, as plain structs, their CDR encoding and their `ros2msg` schemas (each
//! definition followed by its dependencies, separated the way rosbag2 writes them).

use nalgebra::{Isometry3, UnitQuaternion, Vector3};

use super::cdr::Cdr;
use crate::render::ScanPoint;
use crate::sensor::PointFields;

/// ROS 2 message type names, as they appear in the MCAP schema records; this one the LiDAR frames'
/// (`/<vehicle>/<sensor>/points`).
pub const POINT_CLOUD2: &str = "sensor_msgs/msg/PointCloud2";
/// The IMU samples' type (`/<vehicle>/imu`).
pub const IMU: &str = "sensor_msgs/msg/Imu";
/// The ground-truth odometry's type (`/<vehicle>/odom`).
pub const ODOMETRY: &str = "nav_msgs/msg/Odometry";
/// The type of `/tf` and `/tf_static`.
pub const TF_MESSAGE: &str = "tf2_msgs/msg/TFMessage";

const SEP: &str =
    "================================================================================\n";

const HEADER: &str = "builtin_interfaces/Time stamp\nstring frame_id\n";
const TIME: &str = "int32 sec\nuint32 nanosec\n";
const POINT_FIELD: &str = "uint8 INT8=1\nuint8 UINT8=2\nuint8 INT16=3\nuint8 UINT16=4\nuint8 INT32=5\nuint8 UINT32=6\nuint8 FLOAT32=7\nuint8 FLOAT64=8\nstring name\nuint32 offset\nuint8 datatype\nuint32 count\n";
const QUATERNION: &str = "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n";
const VECTOR3: &str = "float64 x\nfloat64 y\nfloat64 z\n";
const POINT: &str = "float64 x\nfloat64 y\nfloat64 z\n";

fn with_deps(main: &str, deps: &[(&str, &str)]) -> String {
    let mut s = main.to_string();
    for (name, def) in deps {
        s.push_str(SEP);
        s.push_str(&format!("MSG: {name}\n"));
        s.push_str(def);
    }
    s
}

/// The `ros2msg` schema text of a message type.
pub fn schema(type_name: &str) -> String {
    let header = ("std_msgs/Header", HEADER);
    let time = ("builtin_interfaces/Time", TIME);
    match type_name {
        POINT_CLOUD2 => with_deps(
            "std_msgs/Header header\nuint32 height\nuint32 width\nsensor_msgs/PointField[] fields\nbool is_bigendian\nuint32 point_step\nuint32 row_step\nuint8[] data\nbool is_dense\n",
            &[header, time, ("sensor_msgs/PointField", POINT_FIELD)],
        ),
        IMU => with_deps(
            "std_msgs/Header header\ngeometry_msgs/Quaternion orientation\nfloat64[9] orientation_covariance\ngeometry_msgs/Vector3 angular_velocity\nfloat64[9] angular_velocity_covariance\ngeometry_msgs/Vector3 linear_acceleration\nfloat64[9] linear_acceleration_covariance\n",
            &[
                header,
                time,
                ("geometry_msgs/Quaternion", QUATERNION),
                ("geometry_msgs/Vector3", VECTOR3),
            ],
        ),
        ODOMETRY => with_deps(
            "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist\n",
            &[
                header,
                time,
                (
                    "geometry_msgs/PoseWithCovariance",
                    "geometry_msgs/Pose pose\nfloat64[36] covariance\n",
                ),
                (
                    "geometry_msgs/Pose",
                    "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n",
                ),
                ("geometry_msgs/Point", POINT),
                ("geometry_msgs/Quaternion", QUATERNION),
                (
                    "geometry_msgs/TwistWithCovariance",
                    "geometry_msgs/Twist twist\nfloat64[36] covariance\n",
                ),
                (
                    "geometry_msgs/Twist",
                    "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n",
                ),
                ("geometry_msgs/Vector3", VECTOR3),
            ],
        ),
        TF_MESSAGE => with_deps(
            "geometry_msgs/TransformStamped[] transforms\n",
            &[
                (
                    "geometry_msgs/TransformStamped",
                    "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/Transform transform\n",
                ),
                header,
                time,
                (
                    "geometry_msgs/Transform",
                    "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation\n",
                ),
                ("geometry_msgs/Vector3", VECTOR3),
                ("geometry_msgs/Quaternion", QUATERNION),
            ],
        ),
        _ => String::new(),
    }
}

/// Seconds to (sec, nanosec), rounding to the nanosecond.
pub fn stamp(t: f64) -> (i32, u32) {
    let ns = (t * 1e9).round() as i64;
    (
        ns.div_euclid(1_000_000_000) as i32,
        ns.rem_euclid(1_000_000_000) as u32,
    )
}

fn header(c: &mut Cdr, t: f64, frame: &str) {
    let (s, ns) = stamp(t);
    c.i32(s);
    c.u32(ns);
    c.string(frame);
}

fn vector3(c: &mut Cdr, v: &Vector3<f64>) {
    c.f64(v.x);
    c.f64(v.y);
    c.f64(v.z);
}

fn quaternion(c: &mut Cdr, q: &UnitQuaternion<f64>) {
    c.f64(q.i);
    c.f64(q.j);
    c.f64(q.k);
    c.f64(q.w);
}

/// PointField datatypes (sensor_msgs/PointField's constants).
const UINT8: u8 = 2;
const UINT16: u8 = 4;
const UINT32: u8 = 6;
const FLOAT32: u8 = 7;
const FLOAT64: u8 = 8;

/// The fields every layout starts with, as (name, byte offset, datatype).
const XYZI: [(&str, u32, u8); 4] = [
    ("x", 0, FLOAT32),
    ("y", 4, FLOAT32),
    ("z", 8, FLOAT32),
    ("intensity", 12, FLOAT32),
];

/// A layout's fields after [`XYZI`] and its bytes per point, as the vendor's driver lays them out: ouster-ros
/// pads to 4 bytes, velodyne_pointcloud and livox_ros_driver2 pack the fields.
fn layout(fields: PointFields) -> (&'static [(&'static str, u32, u8)], u32) {
    match fields {
        PointFields::Ouster => (&[("t", 16, UINT32), ("ring", 20, UINT16)], 24),
        PointFields::Velodyne => (&[("ring", 16, UINT16), ("time", 18, FLOAT32)], 22),
        PointFields::Livox => (
            &[
                ("tag", 16, UINT8),
                ("line", 17, UINT8),
                ("timestamp", 18, FLOAT64),
            ],
            26,
        ),
    }
}

/// A `sensor_msgs/PointCloud2` of a scan in the point layout of the sensor's driver ([`PointFields`]), one
/// row, stamped at the frame start; each point's time is its firing time, in the layout's unit and origin.
pub fn point_cloud2(
    stamp_s: f64,
    frame: &str,
    points: &[ScanPoint],
    point_fields: PointFields,
) -> Vec<u8> {
    let (tail, step) = layout(point_fields);
    let fields: Vec<_> = XYZI.iter().chain(tail).collect();
    let mut c = Cdr::new();
    header(&mut c, stamp_s, frame);
    c.u32(1);
    c.u32(points.len() as u32);
    c.u32(fields.len() as u32);
    for &&(name, offset, datatype) in &fields {
        c.string(name);
        c.u32(offset);
        c.u8(datatype);
        c.u32(1);
    }
    c.bool(false);
    c.u32(step);
    c.u32(step * points.len() as u32);
    let mut data = Vec::with_capacity(points.len() * step as usize);
    for p in points {
        for v in p.xyz {
            data.extend_from_slice(&v.to_le_bytes());
        }
        data.extend_from_slice(&p.intensity.to_le_bytes());
        match point_fields {
            PointFields::Ouster => {
                let t_ns = (f64::from(p.time_s) * 1e9).round().max(0.0) as u32;
                data.extend_from_slice(&t_ns.to_le_bytes());
                data.extend_from_slice(&p.ring.to_le_bytes());
                data.extend_from_slice(&[0, 0]);
            }
            PointFields::Velodyne => {
                data.extend_from_slice(&p.ring.to_le_bytes());
                data.extend_from_slice(&p.time_s.to_le_bytes());
            }
            PointFields::Livox => {
                let line = u8::try_from(p.ring).unwrap_or(u8::MAX);
                let ns = ((stamp_s + f64::from(p.time_s)) * 1e9).round();
                data.extend_from_slice(&[0, line]);
                data.extend_from_slice(&ns.to_le_bytes());
            }
        }
    }
    debug_assert_eq!(data.len(), points.len() * step as usize);
    c.bytes(&data);
    c.bool(true);
    c.finish()
}

/// A `sensor_msgs/Imu` without orientation (`covariance[0] = -1`, as REP 145 says), with diagonal covariances
/// from the noise densities.
pub fn imu(
    stamp_s: f64,
    frame: &str,
    angular_velocity: &Vector3<f64>,
    linear_acceleration: &Vector3<f64>,
    gyro_var: f64,
    accel_var: f64,
) -> Vec<u8> {
    let mut c = Cdr::new();
    header(&mut c, stamp_s, frame);
    quaternion(&mut c, &UnitQuaternion::identity());
    let diag = |c: &mut Cdr, v: f64| {
        for i in 0..9 {
            c.f64(if i % 4 == 0 { v } else { 0.0 });
        }
    };
    c.f64(-1.0);
    for _ in 1..9 {
        c.f64(0.0);
    }
    vector3(&mut c, angular_velocity);
    diag(&mut c, gyro_var);
    vector3(&mut c, linear_acceleration);
    diag(&mut c, accel_var);
    c.finish()
}

/// A `nav_msgs/Odometry` of the ground truth: pose in `frame` (the map), twist in the child (body) frame.
pub fn odometry(
    stamp_s: f64,
    frame: &str,
    child: &str,
    frame_from_child: &Isometry3<f64>,
    linear_body: &Vector3<f64>,
    angular_body: &Vector3<f64>,
) -> Vec<u8> {
    let mut c = Cdr::new();
    header(&mut c, stamp_s, frame);
    c.string(child);
    vector3(&mut c, &frame_from_child.translation.vector);
    quaternion(&mut c, &frame_from_child.rotation);
    for _ in 0..36 {
        c.f64(0.0);
    }
    vector3(&mut c, linear_body);
    vector3(&mut c, angular_body);
    for _ in 0..36 {
        c.f64(0.0);
    }
    c.finish()
}

/// A `tf2_msgs/TFMessage` of (parent, child, parent_from_child) transforms.
pub fn tf_message(stamp_s: f64, transforms: &[(&str, &str, Isometry3<f64>)]) -> Vec<u8> {
    let mut c = Cdr::new();
    c.u32(transforms.len() as u32);
    for (parent, child, t) in transforms {
        header(&mut c, stamp_s, parent);
        c.string(child);
        vector3(&mut c, &t.translation.vector);
        quaternion(&mut c, &t.rotation);
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(time_s: f32, ring: u16) -> ScanPoint {
        ScanPoint {
            xyz: [1.5, -2.0, 0.25],
            range_m: 2.5,
            intensity: 0.4,
            time_s,
            ring,
            beam: 0,
        }
    }

    /// Each layout's fields lie inside its point, in order, without overlap, and the bytes of every point
    /// decode by the field table to the point's values, in the layout's unit of time.
    #[test]
    fn each_layout_writes_what_its_fields_say() {
        let stamp = 1_700_000_000.25;
        let points = [point(0.0, 3), point(0.0625, 15)];
        for kind in [
            PointFields::Ouster,
            PointFields::Velodyne,
            PointFields::Livox,
        ] {
            let (tail, step) = layout(kind);
            let fields: Vec<_> = XYZI.iter().chain(tail).copied().collect();
            let size = |d: u8| match d {
                UINT8 => 1,
                UINT16 => 2,
                UINT32 | FLOAT32 => 4,
                _ => 8,
            };
            for w in fields.windows(2) {
                assert!(w[0].1 + size(w[0].2) <= w[1].1, "{kind:?}: {w:?} overlap");
            }
            let (_, last, d) = fields[fields.len() - 1];
            assert!(last + size(d) <= step, "{kind:?}");
            let msg = point_cloud2(stamp, "uav/lidar", &points, kind);
            // The data block ends the message, followed by `is_dense` (one byte, no alignment).
            let n = step as usize * points.len();
            let data = &msg[msg.len() - 1 - n..msg.len() - 1];
            for (p, bytes) in points.iter().zip(data.chunks(step as usize)) {
                let at = |name: &str| {
                    let &(_, o, d) = fields.iter().find(|f| f.0 == name).unwrap();
                    let b = &bytes[o as usize..(o + size(d)) as usize];
                    match d {
                        UINT8 => f64::from(b[0]),
                        UINT16 => f64::from(u16::from_le_bytes(b.try_into().unwrap())),
                        UINT32 => f64::from(u32::from_le_bytes(b.try_into().unwrap())),
                        FLOAT32 => f64::from(f32::from_le_bytes(b.try_into().unwrap())),
                        _ => f64::from_le_bytes(b.try_into().unwrap()),
                    }
                };
                assert_eq!(
                    [at("x"), at("y"), at("z")],
                    p.xyz.map(f64::from),
                    "{kind:?}"
                );
                assert_eq!(at("intensity"), f64::from(p.intensity));
                let t = f64::from(p.time_s);
                match kind {
                    PointFields::Ouster => {
                        assert_eq!(at("t"), (t * 1e9).round());
                        assert_eq!(at("ring"), f64::from(p.ring));
                    }
                    PointFields::Velodyne => {
                        assert_eq!(at("time"), t);
                        assert_eq!(at("ring"), f64::from(p.ring));
                    }
                    PointFields::Livox => {
                        assert_eq!(at("timestamp"), ((stamp + t) * 1e9).round());
                        assert_eq!(at("line"), f64::from(p.ring));
                        assert_eq!(at("tag"), 0.0);
                    }
                }
            }
        }
    }
}
