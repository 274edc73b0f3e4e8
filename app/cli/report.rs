//! Printing preparation reports as a table.

use aerie_pipeline::StageReport;

/// A table of stages: points in and out, share removed, time, the stage's figures; then the warnings.
pub fn print(reports: &[StageReport]) {
    println!(
        "{:<20} {:>10} {:>10} {:>8} {:>8}  figures",
        "stage", "in", "out", "removed", "seconds"
    );
    for r in reports {
        let removed = if r.points_in > 0 {
            format!(
                "{:.1}%",
                100.0 * (r.points_in.saturating_sub(r.points_out)) as f64 / r.points_in as f64
            )
        } else {
            "-".to_string()
        };
        let figures: Vec<String> = r
            .figures
            .iter()
            .map(|(k, v)| {
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    format!("{k}={v}")
                } else {
                    format!("{k}={v:.4}")
                }
            })
            .collect();
        println!(
            "{:<20} {:>10} {:>10} {:>8} {:>8.2}  {}",
            r.stage,
            r.points_in,
            r.points_out,
            removed,
            r.seconds,
            figures.join(" ")
        );
        for (why, n) in &r.removed {
            println!("{:<20} removed {n}: {why}", "");
        }
    }
    for r in reports {
        for w in &r.warnings {
            println!("warning: {w}");
        }
    }
}
