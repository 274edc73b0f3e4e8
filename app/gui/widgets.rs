//! Small widgets the panels share.

use eframe::egui;

/// Whether a path field's dialog opens an existing file or chooses where to write one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Dialog {
    Open,
    Save,
    /// A folder to write into (a Gazebo model): new, or empty.
    Folder,
}

/// A path typed in, or chosen with the desktop's file dialog (`…`): `default_name` is the hint and the
/// dialog's suggestion, `ext` its filter.
pub fn path_field(
    ui: &mut egui::Ui,
    path: &mut String,
    default_name: &str,
    ext: &str,
    dialog: Dialog,
) {
    ui.add(
        egui::TextEdit::singleline(path)
            .hint_text(default_name)
            .desired_width(180.0),
    );
    let tip = match dialog {
        Dialog::Open => "Choose a file",
        Dialog::Save => "Choose where to write",
        Dialog::Folder => "Choose the folder to write (new or empty)",
    };
    if ui.button("…").on_hover_text(tip).clicked() {
        let d = rfd::FileDialog::new().add_filter(ext, &[ext]);
        let chosen = match dialog {
            Dialog::Open => d.pick_file(),
            Dialog::Save => d.set_file_name(default_name).save_file(),
            Dialog::Folder => rfd::FileDialog::new().pick_folder(),
        };
        if let Some(p) = chosen {
            *path = p.display().to_string();
        }
    }
}

/// A small square of `rgb`, the colour the viewport paints a preview's points in, for the line that counts them.
pub fn swatch(ui: &mut egui::Ui, rgb: [u8; 3]) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(10.0, 10.0), egui::Sense::hover());
    ui.painter()
        .rect_filled(rect, 1.0, egui::Color32::from_rgb(rgb[0], rgb[1], rgb[2]));
}
