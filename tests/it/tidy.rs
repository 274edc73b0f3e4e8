//! Rules about the code base itself that a reviewer would otherwise have to remember (in the spirit of
//! rust-analyzer's tidy tests): docs/architecture.md states them as invariants, and these tests keep them true.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (this package's folder).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends with one of `exts`, skipping build outputs.
fn files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(path);
                }
            } else if exts.iter().any(|e| name.ends_with(e)) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The folders that hold the project's own sources, tests, docs and data.
const SOURCE_DIRS: [&str; 9] = [
    "app", "pipeline", "simcore", "tests", "docs", "bench", "examples", "maps", "fuzz",
];

/// No source file grows past about 900 lines: a longer one holds more than one layer and is split on its seams
/// (a test module may move to a sibling `tests.rs`).
#[test]
fn no_source_file_is_over_900_lines() {
    let mut long = Vec::new();
    for dir in ["app", "pipeline", "simcore", "tests", "fuzz"] {
        for f in files(&root().join(dir), &[".rs"]) {
            let lines = fs::read_to_string(&f).unwrap().lines().count();
            if lines > 900 {
                long.push(format!("{} ({lines} lines)", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these files on their seams: {long:#?}"
    );
}

/// The desktop app calls the libraries, never the command line module (which is private to the command line).
#[test]
fn the_gui_never_imports_the_cli() {
    for f in files(&root().join("app/gui"), &[".rs"]) {
        let text = fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            assert!(
                !code.contains("cli::"),
                "{}:{}: the app imports the CLI: {line}",
                f.display(),
                i + 1
            );
        }
    }
}

/// Panels depend on the document and their own types: no module of app/gui but the app itself, the gui's
/// `mod.rs` (which starts it) and the whole app's workflow tests names the app module, so the panels and the app
/// import no loop.
#[test]
fn no_panel_imports_the_app() {
    for f in files(&root().join("app/gui"), &[".rs"]) {
        let name = f.file_name().unwrap().to_string_lossy();
        if f.parent().unwrap().ends_with("app/gui")
            && ["app.rs", "mod.rs", "tests.rs"].contains(&name.as_ref())
        {
            continue;
        }
        let text = fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            let names_app = code.contains("super::app") || code.contains("gui::app");
            assert!(
                !names_app,
                "{}:{}: a panel imports the app: {line}",
                f.display(),
                i + 1
            );
        }
    }
}

/// simcore draws no pictures: no image, font or plotting crate among its dependencies.
#[test]
fn simcore_draws_no_pictures() {
    let manifest = fs::read_to_string(root().join("simcore/Cargo.toml")).unwrap();
    let deps: BTreeSet<&str> = manifest
        .split("\n[")
        .filter(|section| section.starts_with("dependencies]"))
        .flat_map(|section| section.lines().skip(1))
        .filter_map(|line| line.split(['=', '.']).next())
        .map(str::trim)
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .collect();
    assert!(
        deps.contains("aerie-pipeline"),
        "read no dependencies: {deps:?}"
    );
    for picture in ["png", "font8x8", "image", "plotters", "tiny-skia"] {
        assert!(!deps.contains(picture), "simcore depends on {picture}");
    }
}

/// Nothing in the repository cites a document outside it; every "docs/algorithms.md, section N" names a section
/// that exists.
#[test]
fn documents_cited_are_in_the_repository() {
    let algorithms = fs::read_to_string(root().join("docs/algorithms.md")).unwrap();
    let sections: BTreeSet<u32> = algorithms
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|l| l.split('.').next()?.parse().ok())
        .collect();
    assert!(
        sections.len() > 20,
        "docs/algorithms.md has no numbered sections"
    );
    let outside = [
        "ALGORITHMS.md",
        "SENSORS.md",
        "DESIGN.md",
        "STYLE.md",
        "SOURCES.md",
        "shared/design",
    ];
    for dir in SOURCE_DIRS {
        for f in files(&root().join(dir), &[".rs", ".md", ".toml", ".py"]) {
            if f.ends_with("tests/it/tidy.rs") {
                continue; // names them in order to look for them
            }
            let text = fs::read_to_string(&f).unwrap();
            for doc in outside {
                assert!(
                    !text.contains(doc),
                    "{} cites {doc}, outside the repository",
                    f.display()
                );
            }
            for cited in cited_sections(&text) {
                assert!(
                    sections.contains(&cited),
                    "{} cites docs/algorithms.md section {cited}, which does not exist",
                    f.display()
                );
            }
        }
    }
}

/// The section numbers after each "docs/algorithms.md, section N" or "sections N to M" in `text`.
fn cited_sections(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for (_, rest) in text
        .match_indices("docs/algorithms.md")
        .map(|(i, m)| (i, &text[i + m.len()..]))
    {
        let rest = rest.trim_start_matches([',', ' ', '\n', '/']);
        let Some(rest) = rest.strip_prefix("section") else {
            continue;
        };
        let rest = rest.trim_start_matches('s').trim_start();
        let numbers: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || " to,and".contains(*c))
            .collect();
        out.extend(
            numbers
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse::<u32>().ok()),
        );
    }
    out
}

#[test]
fn cited_sections_are_read_as_written() {
    let text = "(docs/algorithms.md, sections 7 to 9); see docs/algorithms.md section 16, and docs/algorithms.md.";
    assert_eq!(cited_sections(text), [7, 9, 16]);
}
