//! The document the app edits: the scan files imported, the map (prepared or opened) and the view origin every
//! layer is drawn from, with the operations that change them. No egui here: the panels read a [`Document`] and
//! ask for changes as actions; the app applies them through these methods. Each file and the map carry a
//! version that changes with their contents, so that what is derived from them (the viewport's layers, the
//! map's histograms) is rebuilt when, and only when, they change.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aerie_pipeline::export::same_file;
use aerie_pipeline::map::PackedMap;
use aerie_pipeline::prepare::Recipe;
use aerie_pipeline::{Cloud, StageReport};

/// A scan file the user brought.
pub struct Imported {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its points, as read for a map.
    pub cloud: Arc<Cloud>,
    /// `aerie info`'s text for it.
    pub info: String,
    /// Points the outlier preview would remove.
    pub removed: Option<Arc<Vec<bool>>>,
    /// Points the preview of `filters.moving` would remove (what moved while the scans were taken).
    pub moving: Option<Arc<Vec<bool>>>,
    version: u64,
}

impl Imported {
    /// Changes whenever the file's points or their preview mask do.
    pub fn version(&self) -> u64 {
        self.version
    }
}

/// The prepared map.
pub struct MapDoc {
    /// The map as written to .amap.
    pub packed: Arc<PackedMap>,
    /// Its points, for the viewport and the histograms.
    pub cloud: Arc<Cloud>,
    /// The preparation's per-stage counts and times.
    pub reports: Vec<StageReport>,
    /// What the preparation warned about.
    pub warnings: Vec<String>,
    /// Points that went into the preparation.
    pub points_in: usize,
    /// The recipe it was prepared with.
    pub recipe: Recipe,
    /// Where it was saved or opened from.
    pub path: Option<PathBuf>,
    /// How long the preparation took.
    pub seconds: f64,
}

/// A line of the message log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Drawn in red: an error, or a warning the user must see.
    pub error: bool,
    /// The message.
    pub text: String,
}

impl LogLine {
    /// A message.
    pub fn info(text: impl Into<String>) -> LogLine {
        LogLine {
            error: false,
            text: text.into(),
        }
    }

    /// An error, or a warning the user must see.
    pub fn error(text: impl Into<String>) -> LogLine {
        LogLine {
            error: true,
            text: text.into(),
        }
    }
}

/// Beyond this distance from what is shown a file is most likely in another coordinate system (the merge's own
/// limit: `filters::merge`).
const FAR_KM: f64 = 16.0;

/// The files, the map and where they are drawn from.
#[derive(Default)]
pub struct Document {
    files: Vec<Imported>,
    map: Option<MapDoc>,
    map_version: u64,
    /// Every layer is drawn relative to this point (the first file's origin), so f32 keeps millimetres.
    view_origin: Option<[f64; 3]>,
    origin_epoch: u64,
    files_revision: u64,
    last_version: u64,
}

impl Document {
    /// The scan files, in the order they were imported.
    pub fn files(&self) -> &[Imported] {
        &self.files
    }

    /// The map, once prepared or opened.
    pub fn map(&self) -> Option<&MapDoc> {
        self.map.as_ref()
    }

    /// Changes whenever the map does.
    pub fn map_version(&self) -> u64 {
        self.map_version
    }

    /// Whether neither a file nor a map is open.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.map.is_none()
    }

    /// The point layers are drawn relative to, set by the first data loaded.
    pub fn view_origin(&self) -> Option<[f64; 3]> {
        self.view_origin
    }

    /// The view origin, or zero before any data.
    pub fn origin(&self) -> [f64; 3] {
        self.view_origin.unwrap_or_default()
    }

    /// Changes whenever the view origin is forgotten: view-local points kept from before (the points clicked for
    /// a flight) no longer mean anything.
    pub fn origin_epoch(&self) -> u64 {
        self.origin_epoch
    }

    /// Changes whenever a file is added or removed (not when its preview mask changes).
    pub fn files_revision(&self) -> u64 {
        self.files_revision
    }

    /// Points imported in all files.
    pub fn points_in_files(&self) -> usize {
        self.files.iter().map(|f| f.cloud.len()).sum()
    }

    fn next_version(&mut self) -> u64 {
        self.last_version += 1;
        self.last_version
    }

    /// The origin layers are drawn from; set by the first data loaded.
    fn origin_for(&mut self, cloud: &Cloud) -> [f64; 3] {
        *self.view_origin.get_or_insert(cloud.origin)
    }

    /// With nothing shown, the next file sets the origin layers are drawn from (a file far from the last one would
    /// otherwise be drawn to f32 rounding around that one's origin). The points clicked for a flight are relative
    /// to the old origin, so they go with it (see [`Document::origin_epoch`]).
    fn forget_origin_if_empty(&mut self) {
        if self.is_empty() {
            self.view_origin = None;
            self.origin_epoch += 1;
        }
    }

    /// A scan joins the files to clean, unless it is one of them already. Returns what to tell the user.
    pub fn add_scan(&mut self, path: PathBuf, cloud: Cloud, info: String) -> Vec<LogLine> {
        if let Some(twin) = self.files.iter().find(|f| same_file(&f.path, &path)) {
            return vec![LogLine::error(format!(
                "{} is already imported (as {}): its points would be merged twice",
                path.display(),
                twin.path.display()
            ))];
        }
        let mut log: Vec<LogLine> = self.far_warning(&path, &cloud).into_iter().collect();
        self.origin_for(&cloud);
        log.push(LogLine::info(format!(
            "imported {} ({} points)",
            path.display(),
            cloud.len()
        )));
        // After the import line, so that the status bar shows it: points may be missing.
        for w in &cloud.meta.read_warnings {
            log.push(LogLine::error(format!("warning: {w}")));
        }
        let version = self.next_version();
        self.files.push(Imported {
            path,
            cloud: Arc::new(cloud),
            info,
            removed: None,
            moving: None,
            version,
        });
        self.files_revision += 1;
        log
    }

    /// A warning when a scan lies so far from what is shown that it is most likely in another coordinate system.
    fn far_warning(&self, path: &Path, cloud: &Cloud) -> Option<LogLine> {
        let (o, (lo, hi)) = (self.view_origin()?, cloud.bounds()?);
        let centre: [f64; 3] = std::array::from_fn(|k| 0.5 * (lo[k] + hi[k]));
        let km = (0..3)
            .map(|k| (centre[k] - o[k]).powi(2))
            .sum::<f64>()
            .sqrt()
            / 1e3;
        (km > FAR_KM).then(|| {
            LogLine::error(format!(
                "warning: {} lies {km:.0} km from the files already shown: are they in one coordinate \
                 system? Cleaning will refuse to merge them",
                path.display()
            ))
        })
    }

    /// Removes the file at `index`; with nothing left open, the view origin goes with it.
    pub fn remove_file(&mut self, index: usize) -> Option<Imported> {
        if index >= self.files.len() {
            return None;
        }
        let f = self.files.remove(index);
        self.files_revision += 1;
        self.forget_origin_if_empty();
        Some(f)
    }

    /// The map (opened, or just prepared) replaces the one open.
    pub fn set_map(&mut self, map: MapDoc) {
        self.origin_for(&map.cloud);
        self.map = Some(map);
        self.map_version = self.next_version();
    }

    /// Closes the map; with no file left either, the view origin goes with it.
    pub fn close_map(&mut self) -> Option<MapDoc> {
        let map = self.map.take();
        self.map_version = self.next_version();
        self.forget_origin_if_empty();
        map
    }

    /// The map was saved to (and now belongs to) `path`.
    pub fn map_saved(&mut self, path: PathBuf) {
        if let Some(m) = &mut self.map {
            m.path = Some(path);
        }
    }

    /// Marks, file by file, the points a cleaning stage would remove.
    pub fn show_removed(&mut self, removed: Vec<Vec<bool>>) {
        for (i, mask) in removed.into_iter().enumerate() {
            let version = self.next_version();
            if let Some(f) = self.files.get_mut(i) {
                f.removed = Some(Arc::new(mask));
                f.version = version;
            }
        }
    }

    /// Marks, file by file, the points `filters.moving` would remove (drawn in a colour of their own).
    pub fn show_moving(&mut self, moving: Vec<Vec<bool>>) {
        for (i, mask) in moving.into_iter().enumerate() {
            let version = self.next_version();
            if let Some(f) = self.files.get_mut(i) {
                f.moving = Some(Arc::new(mask));
                f.version = version;
            }
        }
    }

    /// Clears every file's marks of removed points (outliers and moving things).
    pub fn clear_removed(&mut self) {
        for i in 0..self.files.len() {
            if self.files[i].removed.is_some() || self.files[i].moving.is_some() {
                let version = self.next_version();
                self.files[i].removed = None;
                self.files[i].moving = None;
                self.files[i].version = version;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloud(origin: [f64; 3]) -> Cloud {
        Cloud::from_positions(origin, vec![[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    }

    #[test]
    fn the_first_file_sets_the_origin_and_the_last_removed_forgets_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.xyz");
        std::fs::write(&a, "0 0 0\n").unwrap();
        let mut doc = Document::default();
        let log = doc.add_scan(a.clone(), cloud([10.0, 20.0, 0.0]), String::new());
        assert_eq!(
            log,
            [LogLine::info(format!(
                "imported {} (2 points)",
                a.display()
            ))]
        );
        assert_eq!(doc.view_origin(), Some([10.0, 20.0, 0.0]));
        // The same file by another name.
        let twin = doc.add_scan(
            dir.path().join(".").join("a.xyz"),
            cloud([0.0; 3]),
            String::new(),
        );
        assert!(twin[0].error && twin[0].text.contains("already imported"));
        assert_eq!(doc.files().len(), 1);
        // 50 km away: added, with a warning first.
        let far = doc.add_scan("b.xyz".into(), cloud([50_000.0, 0.0, 0.0]), String::new());
        assert!(
            far[0].error && far[0].text.contains("km from the files"),
            "{far:?}"
        );
        let epoch = doc.origin_epoch();
        doc.remove_file(0);
        assert!(doc.view_origin().is_some());
        doc.remove_file(0);
        assert_eq!((doc.view_origin(), doc.origin_epoch()), (None, epoch + 1));
    }

    #[test]
    fn a_preview_mask_changes_the_files_version() {
        let mut doc = Document::default();
        doc.add_scan("a.xyz".into(), cloud([0.0; 3]), String::new());
        let v = doc.files()[0].version();
        doc.show_removed(vec![vec![true, false]]);
        assert_ne!(doc.files()[0].version(), v);
        let v = doc.files()[0].version();
        doc.show_moving(vec![vec![false, true]]);
        assert_ne!(doc.files()[0].version(), v);
        let v = doc.files()[0].version();
        doc.clear_removed();
        let f = &doc.files()[0];
        assert!(f.removed.is_none() && f.moving.is_none() && f.version() != v);
    }
}
