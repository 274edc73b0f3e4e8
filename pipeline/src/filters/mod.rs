//! Stages that remove or move points: crop, transform, merge, outlier removal, downsampling.
