//! The timeline opens in a real browser: headless Chromium parses each
//! picture (every mark keeps its `<title>`, no XML error) and renders it to
//! a PNG that shows the marks in their colours.
//!
//! Chromium is `ENVAWARE_CHROMIUM`, else `chromium` on the path;
//! `cargo xtask test` installs it from the distribution's packages. Without
//! it the test is skipped, except under `cargo xtask test` and `CI=true`,
//! where it fails (`xtask::needs`).

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/pixels.rs"]
mod pixels;
use pixels::count_colour;

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");
const SIZE: (u32, u32) = (1200, 860);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim lives in the workspace")
        .to_path_buf()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("envaware-browser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

/// Chromium, or `None` when the check skips without it.
fn chromium() -> Option<PathBuf> {
    xtask::needs::or_skip(xtask::chromium::find())
}

#[test]
fn chromium_renders_the_timeline_with_its_marks_and_titles() {
    let Some(chromium) = chromium() else { return };
    // Each sample and the colours its marks must show.
    let time = [0x1f, 0x77, 0xb4];
    let tasks = [0x2c, 0xa0, 0x2c];
    let context = [0xff, 0x7f, 0x0e];
    let tool_error = [0xd6, 0x27, 0x28];
    let fields = [0x94, 0x67, 0xbd];
    let compression = [0x8c, 0x56, 0x4b];
    let jump = [0xe3, 0x77, 0xc2];
    let dst = [0x17, 0xbe, 0xcf];
    let samples: [(&str, Vec<[u8; 3]>); 2] = [
        ("greenhouse", vec![time, tasks, context, tool_error, fields, compression]),
        ("clock", vec![time, tasks, jump, dst]),
    ];
    for (name, colours) in samples {
        let svg = tmp(&format!("{name}.svg"));
        let trace = format!("examples/{name}.trace.jsonl");
        let out = Command::new(SIM)
            .args(["replay", &trace, "--plot"])
            .arg(&svg)
            .current_dir(workspace())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&svg).unwrap();
        let url = format!("file://{}", svg.display());

        // The DOM the browser built: the document parsed, every title kept.
        let dom = xtask::chromium::run(
            &chromium,
            &["--dump-dom".into()],
            &url,
            &tmp(&format!("profile-dom-{name}")),
        )
        .unwrap_or_else(|e| panic!("{name}: chromium --dump-dom: {e}"));
        let dom = String::from_utf8_lossy(&dom);
        assert!(
            !dom.contains("parsererror"),
            "{name}: the browser could not parse the SVG:\n{dom}"
        );
        let circles = text.matches("<circle ").count();
        assert!(circles > 0);
        assert_eq!(
            dom.matches("<title>").count(),
            circles,
            "{name}: a title per mark in the browser's DOM"
        );

        // The picture: drawn, at its size, with each mark colour.
        let png_path = tmp(&format!("{name}.png"));
        xtask::chromium::run(
            &chromium,
            &[
                format!("--screenshot={}", png_path.display()),
                format!("--window-size={},{}", SIZE.0, SIZE.1),
            ],
            &url,
            &tmp(&format!("profile-shot-{name}")),
        )
        .unwrap_or_else(|e| panic!("{name}: chromium --screenshot: {e}"));
        for rgb in colours {
            let (width, height, matching, drawn) = count_colour(&png_path, rgb);
            assert_eq!((width, height), SIZE, "{name}: PNG size");
            assert!(drawn > 10_000, "{name}: the PNG is nearly blank ({drawn} drawn pixels)");
            assert!(matching >= 20, "{name}: only {matching} pixels of the mark colour {rgb:02x?}");
        }
    }
}
