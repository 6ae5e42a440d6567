//! `envaware-sim replay --plot`: the picture holds what the replay decided.
//!
//! Each sample is replayed twice, as the readable report and as a picture;
//! the picture's titled marks must match the report's `fires:` lines one to
//! one, each at its step's x and on its dimension's lane, with the reminder
//! threshold and the compression trigger at the configured token counts,
//! and one mark per compression. The committed docs/sim.md picture must equal a
//! fresh render.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{samples, workspace};

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("envaware-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn sim(args: &[&str]) -> String {
    let out =
        Command::new(SIM).args(args).current_dir(workspace()).output().expect("run envaware-sim");
    assert!(
        out.status.success(),
        "envaware-sim {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// A titled mark of the picture.
#[derive(Debug, Clone)]
struct Mark {
    cx: f64,
    cy: f64,
    fill: String,
    title: String,
}

fn attr(tag: &str, name: &str) -> String {
    let key = format!(" {name}=\"");
    let start = tag.find(&key).unwrap_or_else(|| panic!("no {name} in {tag}")) + key.len();
    tag[start..].split('"').next().expect("closing quote").to_string()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

fn marks(svg: &str) -> Vec<Mark> {
    let mut out = Vec::new();
    for chunk in svg.split("<circle ").skip(1) {
        let (tag, rest) = chunk.split_once('>').expect("circle tag");
        let tag = &format!(" {tag}");
        assert!(!tag.ends_with('/'), "a circle without a title: <circle {tag}>");
        let title = rest
            .strip_prefix("<title>")
            .and_then(|r| r.split_once("</title></circle>"))
            .expect("a <title> in each circle")
            .0;
        out.push(Mark {
            cx: attr(tag, "cx").parse().unwrap(),
            cy: attr(tag, "cy").parse().unwrap(),
            // A hollow mark (the time skipped) has its colour on the stroke.
            fill: Some(attr(tag, "fill"))
                .filter(|f| f != "none")
                .unwrap_or_else(|| attr(tag, "stroke")),
            title: unescape(title),
        });
    }
    out
}

/// The report's `fires:` lines: the dimensions of each step.
fn fired(report: &str) -> BTreeSet<(String, usize)> {
    let mut out = BTreeSet::new();
    let mut step = 0;
    for line in report.lines() {
        if let Some(rest) = line.strip_prefix("step ") {
            step = rest.split(' ').next().unwrap().parse().unwrap();
        } else if let Some(list) =
            line.strip_prefix("  fires: ").or_else(|| line.strip_prefix("  no hint "))
        {
            for dim in list.split(';').next().unwrap().split(", ") {
                let dim = match dim.split(" x").next().unwrap() {
                    "context-length" => "context length",
                    "tool-error" => "tool error",
                    "(time skipped: clock unset)" => "time skipped (clock unset)",
                    // One lane for every watched field.
                    watch if watch.starts_with("watch ") => "watch",
                    other => other,
                };
                out.insert((dim.to_string(), step));
            }
        }
    }
    out
}

const LANES: &[&str] =
    &["time", "time skipped (clock unset)", "tasks", "context length", "tool error", "watch"];

/// The lane marks: (dimension, step) → mark.
fn lane_marks(marks: &[Mark]) -> BTreeMap<(String, usize), Mark> {
    let mut out = BTreeMap::new();
    for m in marks {
        let Some((kind, rest)) = m.title.split_once(" at step ") else { continue };
        if !LANES.contains(&kind) {
            continue;
        }
        let step: usize = rest.split(' ').next().unwrap().parse().unwrap();
        assert!(
            out.insert((kind.to_string(), step), m.clone()).is_none(),
            "two {kind} marks at step {step}"
        );
    }
    out
}

#[test]
fn each_fired_dimension_is_one_mark_at_its_step_on_its_lane() {
    for (sample, extra) in samples() {
        let name = sample.file_name().unwrap().to_str().unwrap().to_string();
        let svg_path = tmp(&format!("{name}.svg"));
        let mut args =
            vec!["replay", sample.to_str().unwrap(), "--plot", svg_path.to_str().unwrap()];
        args.extend_from_slice(&extra);
        let report = sim(&args);
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        let all = marks(&svg);
        let lanes = lane_marks(&all);
        let expected = fired(&report);
        assert!(!expected.is_empty(), "{name}: nothing fired");
        assert_eq!(
            lanes.keys().cloned().collect::<BTreeSet<_>>(),
            expected,
            "{name}: lane marks against the report"
        );

        // x: one position per step, evenly spaced, for every kind of mark.
        let mut x_of: BTreeMap<usize, f64> = BTreeMap::new();
        for m in &all {
            if let Some(rest) = m.title.split_once(" at step ").map(|p| p.1) {
                let step: usize = rest.split(' ').next().unwrap().parse().unwrap();
                let x = *x_of.entry(step).or_insert(m.cx);
                assert!(
                    (x - m.cx).abs() <= 1.0,
                    "{name}: marks of step {step} at x {x} and {}: {}",
                    m.cx,
                    m.title
                );
            }
        }
        let xs: Vec<(usize, f64)> = x_of.into_iter().collect();
        if let (Some(&(s0, x0)), Some(&(s1, x1)), true) = (xs.first(), xs.last(), xs.len() > 1) {
            let dx = (x1 - x0) / (s1 - s0) as f64;
            assert!(dx > 0.0, "{name}: x grows with the step");
            for (s, x) in &xs {
                assert!(
                    (x0 + dx * (s - s0) as f64 - x).abs() <= 1.5,
                    "{name}: step {s} at x {x}, expected {}",
                    x0 + dx * (s - s0) as f64
                );
            }
        }
        // y: one lane per dimension, each with its own colour.
        let mut lane_y: BTreeMap<&str, (f64, &str)> = BTreeMap::new();
        for ((kind, step), m) in &lanes {
            let kind = if kind.starts_with("time") { "time" } else { kind.as_str() };
            let (y, fill) = *lane_y.entry(kind).or_insert((m.cy, m.fill.as_str()));
            assert_eq!(
                (y, fill),
                (m.cy, m.fill.as_str()),
                "{name}: {kind} at step {step} off its lane"
            );
        }
        let ys: BTreeSet<i64> = lane_y.values().map(|(y, _)| *y as i64).collect();
        assert_eq!(ys.len(), lane_y.len(), "{name}: two dimensions share a lane");

        // One mark per compression.
        let text = std::fs::read_to_string(&sample).unwrap();
        let compressions = text.lines().filter(|l| l.contains("\"compress\"")).count();
        let marked = all.iter().filter(|m| m.title.starts_with("compression before step ")).count();
        assert_eq!(marked, compressions, "{name}: compression marks");
    }
}

/// The linear map from tokens to pixels, read off two token marks.
fn token_scale(all: &[Mark]) -> impl Fn(f64) -> f64 {
    let points: Vec<(f64, f64)> = all
        .iter()
        .filter(|m| m.title.starts_with("tokens at step "))
        .map(|m| {
            let tokens: f64 =
                m.title.split("): ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
            (tokens, m.cy)
        })
        .collect();
    let (a, b) = (
        points.iter().min_by(|p, q| p.0.total_cmp(&q.0)).unwrap(),
        points.iter().max_by(|p, q| p.0.total_cmp(&q.0)).unwrap(),
    );
    assert!(b.0 > a.0, "two different token counts to scale by");
    let (a, b) = (*a, *b);
    move |tokens| a.1 + (tokens - a.0) * (b.1 - a.1) / (b.0 - a.0)
}

#[test]
fn the_threshold_and_trigger_lines_sit_at_the_configured_token_counts() {
    let svg_path = tmp("greenhouse-lines.svg");
    sim(&["replay", "examples/greenhouse.trace.jsonl", "--plot", svg_path.to_str().unwrap()]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let all = marks(&svg);
    let y = token_scale(&all);
    // context_size 128000, trigger 0.8, buffer 0.2 (AgentScope's defaults).
    for (title, tokens, stroke) in [
        ("reminder threshold from step 1: 76800 tokens", 76_800.0, "#FF7F0E"),
        ("compression trigger from step 1: 102400 tokens", 102_400.0, "#D62728"),
    ] {
        let mark = all
            .iter()
            .find(|m| m.title.starts_with(title))
            .unwrap_or_else(|| panic!("no mark {title:?}"));
        assert!(
            (mark.cy - y(tokens)).abs() <= 1.5,
            "{title}: at y {}, {tokens} tokens is y {}",
            mark.cy,
            y(tokens)
        );
        // The line itself: polylines of its colour at that height.
        let on_line = svg
            .split("<polyline ")
            .skip(1)
            .filter(|p| p.contains(&format!("stroke=\"{stroke}\"")))
            .flat_map(|p| {
                attr(&format!(" {}", p.split('>').next().unwrap()), "points")
                    .split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .filter(|pt| {
                pt.split(',')
                    .nth(1)
                    .is_some_and(|py| (py.parse::<f64>().unwrap() - mark.cy).abs() <= 1.0)
            })
            .count();
        assert!(on_line >= 10, "{title}: {on_line} line points at y {}", mark.cy);
    }
    let compression = all
        .iter()
        .find(|m| m.title.starts_with("compression before step 8: "))
        .expect("the compression before step 8");
    let steps: Vec<f64> = ["tokens at step 7 ", "tokens at step 8 "]
        .iter()
        .map(|p| all.iter().find(|m| m.title.starts_with(p)).unwrap().cx)
        .collect();
    assert!(
        (compression.cx - (steps[0] + steps[1]) / 2.0).abs() <= 1.0,
        "the compression is drawn between steps 7 and 8"
    );
}

#[test]
fn clock_jumps_and_dst_changes_are_marked() {
    let svg_path = tmp("clock.svg");
    sim(&["replay", "examples/clock.trace.jsonl", "--plot", svg_path.to_str().unwrap()]);
    let all = marks(&std::fs::read_to_string(&svg_path).unwrap());
    let titles: Vec<&str> = all.iter().map(|m| m.title.as_str()).collect();
    let dst: Vec<&&str> =
        titles.iter().filter(|t| t.starts_with("DST change before step ")).collect();
    // Berlin springs forward between steps 3 and 4; the clock jumps back
    // across the change between steps 5 and 6.
    assert_eq!(dst.len(), 2, "{dst:?}");
    assert!(
        dst[0].starts_with(
            "DST change before step 4: Europe/Berlin went from UTC+01:00 to UTC+02:00"
        ),
        "{}",
        dst[0]
    );
    assert!(
        dst[1].starts_with(
            "DST change before step 6: Europe/Berlin went from UTC+02:00 to UTC+01:00"
        ),
        "{}",
        dst[1]
    );
    let jumps: Vec<&&str> =
        titles.iter().filter(|t| t.starts_with("clock jump before step ")).collect();
    assert!(jumps.iter().any(|t| t.contains("moved back 30.0 minutes")), "{jumps:?}");
    assert!(jumps.iter().any(|t| t.contains("set: 2026-03-29T00:50:00Z")), "{jumps:?}");
    assert!(jumps.iter().any(|t| t.contains("lost: the clock is unset")), "{jumps:?}");
    // Across the DST change Python subtracts Berlin's wall clocks: 70 minutes, not 10.
    assert!(
        titles.iter().any(|t| t.starts_with("since told at step 4 ")
            && t.contains(": 10.0 minutes")
            && t.contains("wall clocks 70.0 minutes")),
        "{titles:#?}"
    );
}

#[test]
fn the_readme_picture_is_what_the_command_draws() {
    let committed = workspace().join("docs/greenhouse-timeline.svg");
    let fresh = tmp("greenhouse-timeline.svg");
    sim(&["replay", "examples/greenhouse.trace.jsonl", "--plot", fresh.to_str().unwrap()]);
    let (committed_svg, fresh_svg) = (
        std::fs::read_to_string(&committed).expect("docs/greenhouse-timeline.svg"),
        std::fs::read_to_string(&fresh).unwrap(),
    );
    assert!(
        committed_svg == fresh_svg,
        "docs/greenhouse-timeline.svg is stale: run `cargo run -p envaware-sim -- replay examples/greenhouse.trace.jsonl --plot docs/greenhouse-timeline.svg`"
    );
    assert!(
        committed_svg.len() < 100_000,
        "the docs/sim.md picture is {} bytes",
        committed_svg.len()
    );
}

/// Replays `trace` (written to a file named `name`) with `--plot`; fails
/// rather than hangs when the replay does not end within a minute.
fn plot_of(name: &str, trace: &str) -> String {
    let (path, svg) = (tmp(name), tmp(&format!("{name}.svg")));
    std::fs::write(&path, trace).unwrap();
    let mut child = Command::new(SIM)
        .args(["replay", "--json", "--plot", svg.to_str().unwrap(), path.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run envaware-sim");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("replay --plot of {name} did not end");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "{name}: {status}");
    std::fs::read_to_string(svg).unwrap()
}

/// Every `time_interval` `eval` accepts ends, up to infinity (the axis
/// once looped forever on a non-finite range).
#[test]
fn the_plot_ends_for_any_interval_eval_accepts() {
    for interval in ["\"inf\"", "1.7e308", "1e300", "0", "1e-300"] {
        let trace = format!(
            "{{\"config\": {{\"injection_config\": {{\"time_interval\": {interval}}}}}}}\n{{\"set_clock\": \"2026-07-22T02:00:00Z\"}}\n\
             {{\"user\": \"hi\"}}\n{{\"step\": {{}}}}\n{{\"advance\": \"1h\"}}\n{{\"step\": {{}}}}"
        );
        let svg = plot_of("interval.trace.jsonl", &trace);
        roxmltree::Document::parse(&svg)
            .unwrap_or_else(|e| panic!("time_interval {interval}: not XML: {e}"));
        let interval_mark = marks(&svg)
            .into_iter()
            .find(|m| m.title.starts_with("time_interval from step 1: "))
            .expect("the interval's mark");
        assert!(interval_mark.cy.is_finite(), "{interval}: {interval_mark:?}");
    }
}

/// An extra field's value and the file's name may hold characters XML
/// forbids even as references: the picture still parses, each shown by a
/// visible stand-in.
#[test]
fn characters_xml_forbids_are_replaced_and_the_picture_parses() {
    let value = "a\u{1}b\u{b}c\u{1f}d\u{fffe}e\u{ffff}<&>\"'\t";
    let trace = format!(
        "{}\n{{\"set_clock\": \"2026-07-22T02:00:00Z\"}}\n{{\"user\": \"hi\"}}\n{{\"step\": {{}}}}",
        serde_json::json!({"config": {"injection_config": {"extra_fields": {"robot": value}}}})
    );
    let svg = plot_of("ctrl\u{7}name.trace.jsonl", &trace);
    let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("not XML: {e}"));
    let titles: Vec<&str> =
        doc.descendants().filter(|n| n.has_tag_name("title")).filter_map(|n| n.text()).collect();
    let fields =
        titles.iter().find(|t| t.starts_with("fields at step 1")).expect("the fields mark");
    assert!(
        fields.contains("robot = a\u{2401}b\u{240b}c\u{241f}d\u{fffd}e\u{fffd}<&>\"'\t"),
        "{fields}"
    );
    let texts: String =
        doc.descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect();
    assert!(texts.contains("ctrl\u{2407}name.trace.jsonl"), "the picture's title");
}

/// A watch with time rules: a change held back by `min_interval`, told
/// once it has passed, a quiet step, then a heartbeat of `max_interval`.
const TIMED: &str = r#"{"config": {"injection_config": {"time_interval": 24, "watch": {"temperature": {"change": 1, "min_interval": 600, "max_interval": "3600"}}}}}
{"set_clock": "2026-07-22T02:00:00Z"}
{"user": "go"}
{"read": {"temperature": "20.0 °C"}}
{"step": {}}
{"advance": 300}
{"read": {"temperature": "25.0 °C"}}
{"step": {}}
{"advance": 300}
{"step": {}}
{"advance": 1200}
{"step": {}}
{"advance": 3600}
{"step": {}}
"#;

#[test]
fn the_watch_panel_marks_value_fires_heartbeats_throttled_and_quiet_steps_apart_with_a_legend() {
    let (path, svg_path) = (tmp("timed.trace.jsonl"), tmp("timed.svg"));
    std::fs::write(&path, TIMED).unwrap();
    let report = sim(&["replay", path.to_str().unwrap(), "--plot", svg_path.to_str().unwrap()]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let all = marks(&svg);
    // The lanes still match the report (a throttled step fired nothing).
    assert_eq!(
        lane_marks(&all).keys().cloned().collect::<BTreeSet<_>>(),
        fired(&report),
        "{report}"
    );
    assert!(report.contains("  watch temperature throttled: "), "{report}");
    assert!(report.contains("  fires: watch temperature (heartbeat)"), "{report}");

    // The panel: each step's mark by why, its colour and fill its own.
    let panel = |step: usize| {
        let head = format!("watch temperature at step {step} ");
        let found: Vec<&Mark> = all.iter().filter(|m| m.title.starts_with(&head)).collect();
        assert_eq!(found.len(), 1, "one mark for step {step}: {found:?}");
        let m = found[0];
        let hollow = svg.split("<circle ").skip(1).any(|c| {
            c.contains(&format!("cx=\"{}\" cy=\"{}\"", m.cx, m.cy)) && c.contains("fill=\"none\"")
        });
        (m.fill.clone(), !hollow, m.title.clone())
    };
    let (value, heartbeat, throttled, quiet) = (
        ("#BCBD22", true, "fired by value"),
        ("#3D5A80", true, "fired by heartbeat (max_interval 3600 s)"),
        ("#E6550D", false, "throttled: told less than min_interval 600 s ago"),
        ("#BCBD22", false, "(told 25)"),
    );
    for (step, (fill, filled, says)) in
        [(1, value), (2, throttled), (3, value), (4, quiet), (5, heartbeat)]
    {
        let (got_fill, got_filled, title) = panel(step);
        assert_eq!((got_fill.as_str(), got_filled), (fill, filled), "step {step}: {title}");
        assert!(title.ends_with(says), "step {step}: {title}");
    }

    // The legend: one mark of each kind, styled as in the panel, explained.
    for (start, (fill, _, _)) in [
        ("legend: fired by value (", value),
        ("legend: fired by heartbeat (", heartbeat),
        ("legend: throttled (", throttled),
        ("legend: quiet (", quiet),
    ] {
        let found: Vec<&Mark> = all.iter().filter(|m| m.title.starts_with(start)).collect();
        assert_eq!(found.len(), 1, "{start}: {found:?}");
        assert_eq!(found[0].fill, fill, "{start}");
    }
    // Each with its label beside it (plotters writes a text's content on a
    // line of its own).
    for label in ["fired by value", "heartbeat (max_interval)", "throttled (min_interval)", "quiet"]
    {
        assert!(svg.contains(&format!(">\n{label}\n</text>")), "legend label {label:?}");
    }
}
