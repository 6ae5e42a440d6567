//! The timeline opens in a real browser: headless Chromium parses each
//! picture (every mark keeps its `<title>`, no XML error) and renders it to
//! a PNG that shows the marks in their colours.
//!
//! Chromium is `ENVAWARE_CHROMIUM`, else `chromium` on the path;
//! `cargo xtask test` installs it from the distribution's packages. Without
//! it the test is skipped, except under `cargo xtask test` and `CI=true`,
//! where it fails (`xtask::needs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

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
    let found = xtask::needs::tool("ENVAWARE_CHROMIUM", "chromium")
        .or_else(|e| xtask::needs::tool("ENVAWARE_CHROMIUM", "chromium-browser").map_err(|_| e));
    xtask::needs::or_skip(found)
}

/// Runs Chromium headless on `url` with `args`, bounded in time. The flags
/// keep it off the network (this machine has none) and out of any profile.
fn run_chromium(chromium: &Path, args: &[String], url: &str, profile: &Path) -> Output {
    let child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => out.expect("chromium's output"),
        Err(_) => {
            // Only the child this test started.
            let _ = Command::new("kill").arg(id.to_string()).status();
            panic!("chromium did not finish within 120 s");
        }
    }
}

/// Pixels of `rgb` (exactly) in an RGB or RGBA PNG.
fn count_colour(png_path: &Path, rgb: [u8; 3]) -> (u32, u32, usize, usize) {
    let decoder =
        png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_path).expect("the PNG")));
    let mut reader = decoder.read_info().expect("a valid PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    let pixels = buf[..info.buffer_size()].chunks(channels);
    let (mut matching, mut drawn) = (0, 0);
    for p in pixels {
        if p[..3] == rgb {
            matching += 1;
        }
        if p[..3] != [255, 255, 255] {
            drawn += 1;
        }
    }
    (info.width, info.height, matching, drawn)
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
        let dom = run_chromium(
            &chromium,
            &["--dump-dom".into()],
            &url,
            &tmp(&format!("profile-dom-{name}")),
        );
        assert!(
            dom.status.success(),
            "{name}: chromium --dump-dom failed: {}",
            String::from_utf8_lossy(&dom.stderr)
        );
        let dom = String::from_utf8_lossy(&dom.stdout);
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
        let shot = run_chromium(
            &chromium,
            &[
                format!("--screenshot={}", png_path.display()),
                format!("--window-size={},{}", SIZE.0, SIZE.1),
            ],
            &url,
            &tmp(&format!("profile-shot-{name}")),
        );
        assert!(
            shot.status.success(),
            "{name}: chromium --screenshot failed: {}",
            String::from_utf8_lossy(&shot.stderr)
        );
        for rgb in colours {
            let (width, height, matching, drawn) = count_colour(&png_path, rgb);
            assert_eq!((width, height), SIZE, "{name}: PNG size");
            assert!(drawn > 10_000, "{name}: the PNG is nearly blank ({drawn} drawn pixels)");
            assert!(matching >= 20, "{name}: only {matching} pixels of the mark colour {rgb:02x?}");
        }
    }
}
