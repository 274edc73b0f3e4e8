//! The viewport's point layers of the document: one per scan file and one for the map, in the colour mode and
//! point size chosen, drawn relative to the document's view origin. They are derived data, kept beside the
//! document rather than in it: [`Layers::sync`] rebuilds a layer only when what it shows has changed (a file's or
//! the map's version, the colouring), so neither the panels nor the document build or recolour layers.

use aerie_pipeline::Cloud;

use super::document::Document;
use super::view::{ColorMode, PointLayer};

/// Slot of the map's layer in the viewport (the files' are their indices).
pub const SLOT_MAP: usize = 1000;

/// Colour of the points outlier removal would remove (magenta).
pub const REMOVED_COLOR: [u8; 3] = [255, 40, 200];

/// Colour of the points `filters.moving` would remove (white: no colour map of the viewport reaches it).
pub const MOVING_COLOR: [u8; 3] = [255, 255, 255];

/// The previews' colours and what they mean, for the viewport's legend.
pub const LEGEND: [([u8; 3], &str); 2] = [
    (REMOVED_COLOR, "outliers (would be removed)"),
    (MOVING_COLOR, "moving things (would be removed)"),
];

/// The entries of [`LEGEND`] that some file of `doc` shows now.
pub fn legend(doc: &Document) -> Vec<([u8; 3], &'static str)> {
    let outliers = doc.files().iter().any(|f| f.removed.is_some());
    let moving = doc.files().iter().any(|f| f.moving.is_some());
    LEGEND
        .iter()
        .zip([outliers, moving])
        .filter_map(|(e, shown)| shown.then_some(*e))
        .collect()
}

/// What a layer was built from: it is rebuilt when this changes.
#[derive(Clone, Copy, PartialEq)]
struct Key {
    version: u64,
    origin: [f64; 3],
    color: ColorMode,
    size_bits: u32,
}

/// The layers of the files and of the map.
#[derive(Default)]
pub struct Layers {
    files: Vec<(Key, PointLayer)>,
    map: Option<(Key, PointLayer)>,
}

impl Layers {
    /// Brings the layers in line with `doc`, coloured by `color`, points drawn `point_size_px` wide.
    pub fn sync(&mut self, doc: &Document, color: ColorMode, point_size_px: f32) {
        let key = |version| Key {
            version,
            origin: doc.origin(),
            color,
            size_bits: point_size_px.to_bits(),
        };
        let mut old = std::mem::take(&mut self.files);
        self.files = doc
            .files()
            .iter()
            .map(|f| {
                let k = key(f.version());
                match old.iter().position(|(o, _)| *o == k) {
                    Some(i) => old.swap_remove(i),
                    None => {
                        let masks: Vec<(&[bool], [u8; 3])> =
                            [(&f.removed, REMOVED_COLOR), (&f.moving, MOVING_COLOR)]
                                .into_iter()
                                .filter_map(|(m, c)| m.as_ref().map(|m| (m.as_slice(), c)))
                                .collect();
                        (k, build(&f.cloud, k, &masks))
                    }
                }
            })
            .collect();
        self.map = doc.map().map(|m| {
            let k = key(doc.map_version());
            match self.map.take() {
                Some((o, layer)) if o == k => (o, layer),
                _ => (k, build(&m.cloud, k, &[])),
            }
        });
    }

    /// The files' layers, in the order of the document's files.
    pub fn files(&self) -> impl Iterator<Item = &PointLayer> {
        self.files.iter().map(|(_, l)| l)
    }

    /// The map's layer.
    pub fn map(&self) -> Option<&PointLayer> {
        self.map.as_ref().map(|(_, l)| l)
    }
}

fn build(cloud: &Cloud, key: Key, masks: &[(&[bool], [u8; 3])]) -> PointLayer {
    let mut layer = PointLayer::from_cloud(cloud, key.origin, key.color, masks);
    layer.point_size_px = f32::from_bits(key.size_bits);
    layer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_is_rebuilt_only_when_what_it_shows_changes() {
        let mut doc = Document::default();
        let cloud = Cloud::from_positions([5.0, 0.0, 0.0], vec![[0.0; 3], [1.0, 0.0, 0.0]]);
        doc.add_scan("a.xyz".into(), cloud, String::new());
        let mut layers = Layers::default();
        layers.sync(&doc, ColorMode::Height, 2.0);
        let first = layers.files().next().unwrap().version;
        layers.sync(&doc, ColorMode::Height, 2.0);
        assert_eq!(layers.files().next().unwrap().version, first);
        doc.show_removed(vec![vec![true, false]]);
        layers.sync(&doc, ColorMode::Height, 2.0);
        let masked = layers.files().next().unwrap();
        assert_ne!(masked.version, first);
        let removed = [REMOVED_COLOR[0], REMOVED_COLOR[1], REMOVED_COLOR[2], 255];
        assert_eq!(
            masked.points.iter().filter(|p| p.color == removed).count(),
            1
        );
        assert_eq!(legend(&doc), [LEGEND[0]]);
        // Moving things in their own colour, beside the outliers.
        doc.show_moving(vec![vec![false, true]]);
        layers.sync(&doc, ColorMode::Height, 2.0);
        let colours: Vec<[u8; 4]> = layers
            .files()
            .next()
            .unwrap()
            .points
            .iter()
            .map(|p| p.color)
            .collect();
        let moving = [MOVING_COLOR[0], MOVING_COLOR[1], MOVING_COLOR[2], 255];
        assert!(
            colours.contains(&removed) && colours.contains(&moving),
            "{colours:?}"
        );
        assert_eq!(legend(&doc), LEGEND);
        layers.sync(&doc, ColorMode::Height, 3.0);
        assert_eq!(layers.files().next().unwrap().point_size_px, 3.0);
        doc.remove_file(0);
        layers.sync(&doc, ColorMode::Height, 3.0);
        assert_eq!(layers.files().count(), 0);
    }
}
