//! `aerie sensors`: list the sensor presets, or print one as TOML to copy and edit.

use aerie_simcore::sensor::{Pattern, SensorModel};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print this preset's TOML (copy it, edit it, load it with `aerie scan --sensor my.toml`).
    #[arg(long)]
    show: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(name) = args.show {
        let model = SensorModel::preset(&name).map_err(|e| super::BadInput(e.to_string()))?;
        print!("{}", model.to_toml());
        return Ok(());
    }
    println!(
        "{:<12} {:<9} {:>9} {:>7} {:>13} {:>9}  description",
        "name", "kind", "beams", "rate", "range m", "fov v deg"
    );
    for name in SensorModel::preset_names() {
        let m = SensorModel::preset(name)?;
        let kind = match m.pattern {
            Pattern::Spinning(_) => "spinning",
            Pattern::Rosette(_) => "rosette",
            Pattern::Sweep(_) => "sweep",
            Pattern::Pinhole(_) => "depth",
        };
        let fov = m.fov();
        println!(
            "{:<12} {:<9} {:>9} {:>5}Hz {:>5}..{:<6.0} {:>4.0}..{:<4.0} {}",
            name,
            kind,
            m.beams_per_frame(),
            m.rate_hz,
            // The shortest decimal that reads back as the value (0.05, not 0.1).
            format!("{}", m.physics.min_range_m),
            m.physics.max_range_m,
            fov.elevation_min_rad.to_degrees(),
            fov.elevation_max_rad.to_degrees(),
            m.description
        );
    }
    Ok(())
}
