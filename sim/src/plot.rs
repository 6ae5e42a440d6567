//! `replay --plot`: a session's timeline as SVG, drawn with plotters.
//!
//! The replay hands over one [`StepRecord`] per step; [`render`] draws three
//! panels over the same x axis (the steps, with the simulated clock along
//! the top):
//!
//! - one lane per dimension (time, tasks, context length, tool error), one
//!   for the extra and live fields a hint carried, and one for hints too
//!   long for the device's buffer, with a mark where each fired;
//! - the input tokens against the reminder threshold and the compression
//!   trigger, with compressions marked between the steps;
//! - the minutes since the time was last told against `time_interval`, with
//!   clock jumps and DST changes marked;
//! - with `injection_config.watch`, a lane for the watch and one panel per
//!   watched field: its reading at each step, the value the context told
//!   as a step line, and `above`/`below` with their hysteresis band. Each
//!   reading's mark says why: filled for a watch fired by value, filled in
//!   another colour for a heartbeat (`max_interval`), hollow in a third for
//!   a change `min_interval` held back, hollow for a quiet step; a legend
//!   above the panel explains the four.
//!
//! Every mark is an SVG circle, and only marks are: plotters cannot attach
//! a `<title>` (the tooltip a browser shows on hovering), so
//! [`attach_titles`] adds one to each circle afterwards, in drawing order.

use std::fmt::Write as _;

use chrono::{Offset, TimeZone};
use envaware::Timestamp;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::record::{format_instant, StepRecord, WatchRecord};

/// Built-in fields of a hint; any other `<key>value</key>` line is an
/// extra or live field.
const BUILTIN: &[&str] = &["current-time", "timezone", "tasks", "context-length", "tool-error"];

/// The extra and live fields in a hint: its `<key>value</key>` lines other
/// than the built-in ones.
pub fn fields_of(hint: &str) -> Vec<(&str, &str)> {
    hint.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix('<')?;
            let (key, rest) = rest.split_once('>')?;
            let value = rest.strip_suffix('>')?.strip_suffix(key)?.strip_suffix("</")?;
            let plain = !key.is_empty() && !key.contains(['<', '/', ' ']);
            (plain && !BUILTIN.contains(&key)).then_some((key, value))
        })
        .collect()
}

/// `c`, or what stands for it where XML 1.0 forbids it (not even as a
/// character reference): a control character below U+0020 other than tab,
/// newline and carriage return becomes its Control Pictures sign (U+0001
/// is U+2401 `␁`), U+FFFE and U+FFFF become U+FFFD.
fn xml_char(c: char) -> char {
    match c {
        '\t' | '\n' | '\r' => c,
        '\0'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\u{fffe}' | '\u{ffff}' => '\u{fffd}',
        c => c,
    }
}

/// Text that XML 1.0 allows, for plotters (which escapes markup but not
/// forbidden characters).
fn xml_text(text: &str) -> String {
    text.chars().map(xml_char).collect()
}

/// Escapes text for an SVG attribute or element.
pub(crate) fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(xml_char(c)),
        }
    }
    out
}

/// Gives the `i`-th `<circle .../>` of `svg` the `i`-th title, as a
/// `<title>` child: the tooltip a browser shows. Fails unless there is
/// exactly one title for each circle.
pub fn attach_titles(svg: &str, titles: &[String]) -> Result<String, String> {
    let mut out =
        String::with_capacity(svg.len() + titles.iter().map(|t| t.len() + 32).sum::<usize>());
    let mut rest = svg;
    let mut next = titles.iter();
    while let Some(start) = rest.find("<circle ") {
        let end = rest[start..]
            .find("/>")
            .map(|e| start + e)
            .ok_or("an unclosed <circle> in plotters' output")?;
        let title = next.next().ok_or("more circles than titles")?;
        out.push_str(&rest[..end]);
        let _ = write!(out, "><title>{}</title></circle>", xml_escape(title));
        rest = &rest[end + 2..];
    }
    if next.next().is_some() {
        return Err("more titles than circles".into());
    }
    out.push_str(rest);
    Ok(out)
}

/// Width and height of the picture, in pixels (without watches).
pub const SIZE: (u32, u32) = (1200, 860);
/// The height a watched field's panel adds.
const WATCH_PANEL: u32 = 240;
/// Watches and their readings.
pub const WATCH: RGBColor = RGBColor(0xbc, 0xbd, 0x22);
/// A watch fired by its heartbeat (`max_interval`).
pub const HEARTBEAT: RGBColor = RGBColor(0x3d, 0x5a, 0x80);
/// A watch's change held back by `min_interval`.
pub const THROTTLED: RGBColor = RGBColor(0xe6, 0x55, 0x0d);

/// Mark colours (the browser test looks for them in the rendered picture).
pub const TIME: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
/// Tasks.
pub const TASKS: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
/// Context length.
pub const CONTEXT: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
/// Tool error.
pub const TOOL_ERROR: RGBColor = RGBColor(0xd6, 0x27, 0x28);
/// Extra and live fields.
pub const FIELDS: RGBColor = RGBColor(0x94, 0x67, 0xbd);
/// Hints too long for the buffer.
pub const TOO_LONG: RGBColor = RGBColor(0x22, 0x22, 0x22);
/// Compressions.
pub const COMPRESSION: RGBColor = RGBColor(0x8c, 0x56, 0x4b);
/// Clock jumps.
pub const JUMP: RGBColor = RGBColor(0xe3, 0x77, 0xc2);
/// DST changes.
pub const DST: RGBColor = RGBColor(0x17, 0xbe, 0xcf);
const GREY: RGBColor = RGBColor(0x88, 0x88, 0x88);

const FONT: &str = "sans-serif";

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn clock_text(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "clock unset".into(), format_instant)
}

/// A mark: a circle at a point of a panel, with its tooltip.
struct Mark {
    at: (f64, f64),
    color: RGBColor,
    filled: bool,
    radius: u32,
    title: String,
}

/// The marks of one panel, drawn last so that nothing covers them.
fn draw_marks<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    marks: Vec<Mark>,
    titles: &mut Vec<String>,
) -> Result<(), String> {
    let mut circles = Vec::with_capacity(marks.len());
    for m in marks {
        let style = if m.filled { m.color.filled() } else { m.color.stroke_width(2) };
        circles.push(Circle::new(m.at, m.radius, style));
        titles.push(m.title);
    }
    chart.draw_series(circles).map_err(err)?;
    Ok(())
}

/// How many x labels to ask plotters for: one a step, up to 20.
fn x_labels(records: &[StepRecord]) -> usize {
    records.len().clamp(1, 20) + 1
}

/// Whether `x` is a whole number: plotters picks round label positions,
/// and only whole steps are labelled.
fn whole(x: f64) -> Option<i64> {
    ((x - x.round()).abs() < 1e-6).then_some(x.round() as i64)
}

/// The wall-clock offset of `zone` at `t`, in seconds; UTC for an unknown zone.
fn utc_offset(zone: &str, t: Timestamp) -> i32 {
    let Ok(tz) = zone.parse::<chrono_tz::Tz>() else { return 0 };
    chrono::DateTime::from_timestamp_micros(t.unix_micros())
        .map_or(0, |utc| tz.offset_from_utc_datetime(&utc.naive_utc()).fix().local_minus_utc())
}

/// A token count for people: `(0.8 - 0.2) * 128000` is 76800.00000000001.
fn tokens_text(v: f64) -> String {
    whole(v).map_or_else(|| format!("{v:.2}"), |n| n.to_string())
}

fn offset_text(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.unsigned_abs();
    format!("UTC{sign}{:02}:{:02}", s / 3600, s % 3600 / 60)
}

/// Renders the timeline of `records` as an SVG document.
///
/// # Errors
///
/// When plotters fails to draw, or the titles cannot be attached.
pub fn render(records: &[StepRecord], title: &str) -> Result<String, String> {
    let mut svg = String::new();
    let mut titles = Vec::new();
    let watched: Vec<String> = records
        .iter()
        .flat_map(|r| r.watches.iter().map(|w| w.field.clone()))
        .fold(Vec::new(), |mut v, f| {
            if !v.contains(&f) {
                v.push(f);
            }
            v
        });
    let size = (SIZE.0, SIZE.1 + WATCH_PANEL * watched.len() as u32);
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(&xml_text(title), (FONT, 20)).map_err(err)?;
        let (lanes, rest) = root.split_vertically(330);
        let (tokens, rest) = rest.split_vertically(240);
        // The watch panels below the elapsed one; none: the same picture as before.
        let elapsed_height =
            rest.dim_in_pixel().1.saturating_sub(WATCH_PANEL * watched.len() as u32);
        let (elapsed, mut rest) = rest.split_vertically(elapsed_height);
        draw_lanes(&lanes, records, &mut titles)?;
        draw_tokens(&tokens, records, &mut titles)?;
        draw_elapsed(&elapsed, records, &mut titles)?;
        for field in &watched {
            let (panel, below) = rest.split_vertically(WATCH_PANEL);
            draw_watch(&panel, records, field, &mut titles)?;
            rest = below;
        }
        root.present().map_err(err)?;
    }
    attach_titles(&svg, &titles)
}

fn step_head(kind: &str, r: &StepRecord) -> String {
    let at = if r.line == 0 { String::new() } else { format!(", line {}", r.line) };
    format!("{kind} at step {} ({}{at})", r.step, clock_text(r.clock))
}

fn with_hint(head: String, r: &StepRecord) -> String {
    match (&r.hint, r.too_long) {
        (Some(hint), None) => format!("{head}\n\n{hint}"),
        (Some(hint), Some((needed, capacity))) => {
            format!("{head}\n\nnot injected: the hint needs {needed} bytes, the buffer holds {capacity}\n\n{hint}")
        }
        (None, _) => head,
    }
}

fn x_range(records: &[StepRecord]) -> std::ops::Range<f64> {
    0.5..records.len().max(1) as f64 + 0.5
}

fn step_label(x: &f64) -> String {
    whole(*x).map_or(String::new(), |s| s.to_string())
}

/// The lanes `records` need, and which one is the watch's (with a watch).
fn lanes_of(records: &[StepRecord]) -> (Vec<(&'static str, RGBColor)>, Option<usize>) {
    let mut lanes = vec![
        ("time", TIME),
        ("tasks", TASKS),
        ("context length", CONTEXT),
        ("tool error", TOOL_ERROR),
        ("fields", FIELDS),
    ];
    if records.iter().any(|r| r.too_long.is_some()) {
        lanes.push(("hint too long", TOO_LONG));
    }
    let watch_lane = records.iter().any(|r| !r.watches.is_empty()).then(|| {
        lanes.push(("watch", WATCH));
        lanes.len() - 1
    });
    (lanes, watch_lane)
}

fn draw_lanes<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    records: &[StepRecord],
    titles: &mut Vec<String>,
) -> Result<(), String> {
    let (lanes, watch_lane) = lanes_of(records);
    let top = lanes.len() as f64 - 0.5;
    let y_of = |lane: usize| (lanes.len() - 1 - lane) as f64;
    let names: Vec<&str> = lanes.iter().map(|l| l.0).collect();
    let lane_label = move |y: &f64| {
        let i = whole(*y).and_then(|y| (names.len() as i64 - 1 - y).try_into().ok());
        i.and_then(|i: usize| names.get(i)).map_or(String::new(), |n| n.to_string())
    };
    let same_day = records
        .iter()
        .filter_map(|r| r.clock)
        .map(|t| t.unix_micros().div_euclid(86_400_000_000))
        .collect::<Vec<_>>();
    let same_day = same_day.windows(2).all(|w| w[0] == w[1]);
    let clocks: Vec<Option<Timestamp>> = records.iter().map(|r| r.clock).collect();
    let clock_label = move |x: &f64| {
        let Some(i) = whole(*x).and_then(|i| usize::try_from(i).ok()) else { return String::new() };
        match clocks
            .get(i.wrapping_sub(1))
            .copied()
            .flatten()
            .and_then(|t| chrono::DateTime::from_timestamp_micros(t.unix_micros()))
        {
            Some(t) if same_day => t.format("%H:%M:%S").to_string(),
            Some(t) => t.format("%m-%d %H:%M").to_string(),
            None if i >= 1 && i <= clocks.len() => "unset".into(),
            None => String::new(),
        }
    };
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .margin_right(30)
        .caption(
            "what fired at each step (top: the simulated clock, UTC; hover a mark for the hint)",
            (FONT, 15),
        )
        .x_label_area_size(28)
        .top_x_label_area_size(28)
        .y_label_area_size(110)
        .build_cartesian_2d(x_range(records), -0.5..top)
        .map_err(err)?
        .set_secondary_coord(x_range(records), -0.5..top);
    chart
        .configure_mesh()
        .x_labels(x_labels(records))
        .x_label_formatter(&step_label)
        .y_labels(2 * lanes.len())
        .y_label_formatter(&lane_label)
        .x_desc("step")
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    chart
        .configure_secondary_axes()
        .x_labels(x_labels(records))
        .x_label_formatter(&clock_label)
        .y_labels(0)
        .draw()
        .map_err(err)?;
    let mut marks = Vec::new();
    for r in records {
        let x = r.step as f64;
        let mut mark = |lane: usize, filled: bool, title: String| {
            marks.push(Mark {
                at: (x, y_of(lane)),
                color: lanes[lane].1,
                filled,
                radius: 7,
                title,
            });
        };
        if r.time {
            mark(0, true, with_hint(step_head("time", r), r));
        } else if r.time_skipped {
            mark(0, false, step_head("time skipped (clock unset)", r));
        }
        if let Some((pending, in_progress)) = r.tasks {
            mark(
                1,
                true,
                with_hint(
                    format!(
                        "{}: {pending} pending, {in_progress} in progress",
                        step_head("tasks", r)
                    ),
                    r,
                ),
            );
        }
        if r.context_length {
            let head = format!(
                "{}: {} tokens, reminder above {}",
                step_head("context length", r),
                r.input_tokens,
                tokens_text(r.reminder_tokens)
            );
            mark(2, true, with_hint(head, r));
        }
        if let Some(count) = r.tool_error {
            mark(
                3,
                true,
                with_hint(format!("{}: {count} failures in a row", step_head("tool error", r)), r),
            );
        }
        let fields = r.hint.as_deref().map(fields_of).unwrap_or_default();
        if !fields.is_empty() {
            let list =
                fields.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ");
            mark(4, true, with_hint(format!("{}: {list}", step_head("fields", r)), r));
        }
        if let Some((needed, capacity)) = r.too_long {
            mark(
                5,
                true,
                with_hint(
                    format!(
                        "{}: needs {needed} bytes, the buffer holds {capacity}",
                        step_head("hint too long", r)
                    ),
                    r,
                ),
            );
        }
        let fired: Vec<&WatchRecord> = r.watches.iter().filter(|w| w.fired).collect();
        if let (Some(lane), false) = (watch_lane, fired.is_empty()) {
            let list = fired
                .iter()
                .map(|w| {
                    let why = if w.heartbeat { " (heartbeat)" } else { "" };
                    format!("{} = {}{why}", w.field, w.reading)
                })
                .collect::<Vec<_>>()
                .join(", ");
            mark(lane, true, with_hint(format!("{}: {list}", step_head("watch", r)), r));
        }
    }
    draw_marks(&mut chart, marks, titles)
}

/// A watched field's panel: its readings, the told value as a step line,
/// and `above`/`below` with their hysteresis band (dashed).
fn draw_watch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    records: &[StepRecord],
    field: &str,
    titles: &mut Vec<String>,
) -> Result<(), String> {
    let (legend, area) = area.split_vertically(20);
    let area = &area;
    let of = |r: &StepRecord| r.watches.iter().find(|w| w.field == field).cloned();
    let points: Vec<(usize, WatchRecord)> =
        records.iter().enumerate().filter_map(|(i, r)| of(r).map(|w| (i, w))).collect();
    let mut values: Vec<f64> = Vec::new();
    for (_, w) in &points {
        values.extend([w.value, w.told, w.above, w.below].into_iter().flatten());
        values.extend(
            w.above.map(|a| a - w.hysteresis).into_iter().chain(w.below.map(|b| b + w.hysteresis)),
        );
    }
    let (low, high) = values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (low, high) = if low > high { (0.0, 1.0) } else { (low, high) };
    let pad = ((high - low) * 0.15).max(0.5);
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .margin_right(30)
        .caption(format!("watch {field}: readings, the value last told (step line), above/below and hysteresis (dashed)"), (FONT, 15))
        .x_label_area_size(28)
        .y_label_area_size(110)
        .build_cartesian_2d(x_range(records), (low - pad)..(high + pad))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels(x_labels(records))
        .x_label_formatter(&step_label)
        .y_desc(field)
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    let bound = |value: fn(&WatchRecord) -> Option<f64>| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter_map(|(i, w)| value(w).map(|v| (records[*i].step as f64, v)))
            .flat_map(|(x, v)| [(x - 0.5, v), (x + 0.5, v)])
            .collect()
    };
    for (line, color, dashed) in [
        (bound(|w| w.above), TOOL_ERROR, false),
        (bound(|w| w.above.map(|a| a - w.hysteresis)), TOOL_ERROR, true),
        (bound(|w| w.below), TIME, false),
        (bound(|w| w.below.map(|b| b + w.hysteresis)), TIME, true),
    ] {
        if line.is_empty() {
            continue;
        }
        if dashed {
            chart
                .draw_series(DashedLineSeries::new(line, 6, 6, color.stroke_width(1)))
                .map_err(err)?;
        } else {
            chart.draw_series(LineSeries::new(line, color.stroke_width(1))).map_err(err)?;
        }
    }
    // The told value: a flat segment over each step, broken where nothing was told.
    for (i, w) in &points {
        if let Some(t) = w.told {
            let x = records[*i].step as f64;
            chart
                .draw_series(LineSeries::new([(x - 0.5, t), (x + 0.5, t)], GREY.stroke_width(2)))
                .map_err(err)?;
        }
    }
    let mut marks = Vec::new();
    for (i, w) in &points {
        let r = &records[*i];
        let Some(v) = w.value else { continue };
        let told = w.told.map_or("nothing told".to_string(), |t| format!("told {t}"));
        let kind = WatchMark::of(w);
        let why = match kind {
            WatchMark::Value => ", fired by value".to_string(),
            WatchMark::Heartbeat => match w.max_interval {
                Some(max) => format!(", fired by heartbeat (max_interval {max} s)"),
                None => ", fired by heartbeat".to_string(),
            },
            WatchMark::Throttled => match w.min_interval {
                Some(min) => format!(", throttled: told less than min_interval {min} s ago"),
                None => ", throttled".to_string(),
            },
            WatchMark::Quiet => String::new(),
        };
        let title =
            format!("{}: {} ({told}){why}", step_head(&format!("watch {field}"), r), w.reading,);
        let (color, filled) = kind.style();
        marks.push(Mark { at: (r.step as f64, v), color, filled, radius: 5, title });
    }
    draw_marks(&mut chart, marks, titles)?;
    draw_watch_legend(&legend, titles)
}

/// How a watched field's reading is marked at a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WatchMark {
    /// The value rule fired.
    Value,
    /// `max_interval` fired it.
    Heartbeat,
    /// `min_interval` held its change back.
    Throttled,
    /// It did not fire.
    Quiet,
}

impl WatchMark {
    const ALL: [WatchMark; 4] =
        [WatchMark::Value, WatchMark::Heartbeat, WatchMark::Throttled, WatchMark::Quiet];

    fn of(w: &WatchRecord) -> WatchMark {
        match (w.fired, w.heartbeat, w.throttled) {
            (true, true, _) => WatchMark::Heartbeat,
            (true, false, _) => WatchMark::Value,
            (false, _, true) => WatchMark::Throttled,
            (false, _, false) => WatchMark::Quiet,
        }
    }

    /// Colour, and whether filled: fired marks are filled, the others hollow.
    fn style(self) -> (RGBColor, bool) {
        match self {
            WatchMark::Value => (WATCH, true),
            WatchMark::Heartbeat => (HEARTBEAT, true),
            WatchMark::Throttled => (THROTTLED, false),
            WatchMark::Quiet => (WATCH, false),
        }
    }

    /// The legend's label and its tooltip.
    fn legend(self) -> (&'static str, &'static str) {
        match self {
            WatchMark::Value => ("fired by value", "legend: fired by value (the reading moved from the value told, or nothing was told)"),
            WatchMark::Heartbeat => ("heartbeat (max_interval)", "legend: fired by heartbeat (the telling is max_interval old, or its age is unknown; the reading need not have moved)"),
            WatchMark::Throttled => ("throttled (min_interval)", "legend: throttled (the reading moved, but was told less than min_interval ago: held back, not fired)"),
            WatchMark::Quiet => ("quiet", "legend: quiet (the watch did not fire)"),
        }
    }
}

/// The legend of a watched field's panel: one mark of each kind, labelled.
fn draw_watch_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    titles: &mut Vec<String>,
) -> Result<(), String> {
    let width = i32::try_from(area.dim_in_pixel().0).unwrap_or(i32::MAX);
    let (step, y) = (200, 10);
    let mut x = width.saturating_sub(step * WatchMark::ALL.len() as i32 + 30).max(10);
    for kind in WatchMark::ALL {
        let (color, filled) = kind.style();
        let style = if filled { color.filled() } else { color.stroke_width(2) };
        let (label, title) = kind.legend();
        area.draw(&Circle::new((x, y), 5, style)).map_err(err)?;
        titles.push(title.to_string());
        area.draw(&Text::new(label, (x + 10, y - 7), (FONT, 13))).map_err(err)?;
        x += step;
    }
    Ok(())
}

/// Points of a line in chart coordinates.
type Polyline = Vec<(f64, f64)>;

/// A value per step drawn as a flat segment over the step's width: the
/// lines (a new one where the value changes), and where each begins
/// (record index, value).
fn segments(
    records: &[StepRecord],
    value: impl Fn(&StepRecord) -> f64,
) -> (Vec<Polyline>, Vec<(usize, f64)>) {
    let (mut lines, mut changes): (Vec<Polyline>, Vec<(usize, f64)>) = (Vec::new(), Vec::new());
    for (i, r) in records.iter().enumerate() {
        let (x, v) = (r.step as f64, value(r));
        if changes.last().is_none_or(|&(_, last)| last != v) {
            changes.push((i, v));
            lines.push(Vec::new());
        }
        if let Some(line) = lines.last_mut() {
            line.extend([(x - 0.5, v), (x + 0.5, v)]);
        }
    }
    (lines, changes)
}

fn draw_tokens<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    records: &[StepRecord],
    titles: &mut Vec<String>,
) -> Result<(), String> {
    let top = records
        .iter()
        .map(|r| (r.input_tokens as f64).max(r.trigger_tokens as f64).max(r.reminder_tokens))
        .fold(1.0, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .margin_right(30)
        .caption(
            "input tokens, the context-length reminder's threshold and the compression trigger",
            (FONT, 15),
        )
        .x_label_area_size(28)
        .y_label_area_size(110)
        .build_cartesian_2d(x_range(records), 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels(x_labels(records))
        .x_label_formatter(&step_label)
        .y_label_formatter(&|y: &f64| format!("{}", *y as i64))
        .y_desc("tokens")
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    let mut marks = Vec::new();
    let (reminder_lines, reminder_changes) = segments(records, |r| r.reminder_tokens);
    let (trigger_lines, trigger_changes) = segments(records, |r| r.trigger_tokens as f64);
    for line in reminder_lines {
        chart
            .draw_series(DashedLineSeries::new(line, 14, 8, CONTEXT.stroke_width(2)))
            .map_err(err)?;
    }
    for line in trigger_lines {
        chart.draw_series(LineSeries::new(line, TOOL_ERROR.stroke_width(2))).map_err(err)?;
    }
    for (i, v) in reminder_changes {
        let r = &records[i];
        let title =
            format!("reminder threshold from step {}: {} tokens (the context-length reminder fires above it)", r.step, tokens_text(v));
        marks.push(Mark {
            at: (r.step as f64 - 0.5, v),
            color: CONTEXT,
            filled: false,
            radius: 4,
            title,
        });
    }
    for (i, v) in trigger_changes {
        let r = &records[i];
        let title = format!("compression trigger from step {}: {v} tokens", r.step);
        marks.push(Mark {
            at: (r.step as f64 - 0.5, v),
            color: TOOL_ERROR,
            filled: false,
            radius: 4,
            title,
        });
    }
    let points: Vec<(f64, f64)> =
        records.iter().map(|r| (r.step as f64, r.input_tokens as f64)).collect();
    chart.draw_series(LineSeries::new(points.clone(), GREY.stroke_width(2))).map_err(err)?;
    for r in records {
        let title = format!(
            "{}: {} input tokens (reminder above {}, compression at {})",
            step_head("tokens", r),
            r.input_tokens,
            tokens_text(r.reminder_tokens),
            r.trigger_tokens
        );
        marks.push(Mark {
            at: (r.step as f64, r.input_tokens as f64),
            color: GREY,
            filled: true,
            radius: 4,
            title,
        });
    }
    for r in records {
        let x = r.step as f64 - 0.5;
        for (k, what) in r.compressions.iter().enumerate() {
            chart
                .draw_series(DashedLineSeries::new(
                    [(x, 0.0), (x, top)],
                    4,
                    4,
                    COMPRESSION.stroke_width(1),
                ))
                .map_err(err)?;
            let title = format!("compression before step {}: {what}", r.step);
            marks.push(Mark {
                at: (x, top * (0.93 - 0.07 * k as f64)),
                color: COMPRESSION,
                filled: true,
                radius: 6,
                title,
            });
        }
    }
    draw_marks(&mut chart, marks, titles)
}

/// A minutes label with as many decimals as the panel's `range` needs
/// (a 36-second interval would otherwise show only 0 and 1).
fn minutes_label(y: f64, range: f64) -> String {
    match range {
        r if r < 2.0 => format!("{y:.2}"),
        r if r < 20.0 => format!("{y:.1}"),
        _ => format!("{y:.0}"),
    }
}

/// Minutes since the time was told at `r`: real, and by the zone's wall
/// clocks (what Python subtracts when the recorded zone is the configured one).
fn since_told(r: &StepRecord) -> Option<(f64, f64)> {
    let (now, told) = (r.clock?, r.told_at?);
    // In floats: two far instants' difference overflows i64.
    let real = (now.unix_micros() as f64 - told.unix_micros() as f64) / 60e6;
    let shift = f64::from(utc_offset(&r.zone, now) - utc_offset(&r.zone, told)) / 60.0;
    Some((real, real + shift))
}

/// What happened to the clock between steps `p` and `r`: a jump (back, set
/// or lost) and a DST change of the zone, each with its title.
fn clock_events(p: &StepRecord, r: &StepRecord) -> Vec<(RGBColor, String)> {
    let mut events = Vec::new();
    let jump = match (p.clock, r.clock) {
        (Some(a), Some(b)) if b.unix_micros() < a.unix_micros() => Some(format!(
            "moved back {:.1} minutes: {} to {}",
            (a.unix_micros() as f64 - b.unix_micros() as f64) / 60e6,
            clock_text(p.clock),
            clock_text(r.clock)
        )),
        // A device re-sets its clock at every step: a forward set is a jump
        // only when it skips more than `time_interval`.
        (Some(a), Some(b))
            if r.clock_set
                && b.unix_micros() as f64 - a.unix_micros() as f64
                    > r.time_interval_hours * 3600e6 =>
        {
            Some(format!(
                "set forward beyond time_interval: {} to {}",
                clock_text(p.clock),
                clock_text(r.clock)
            ))
        }
        (None, Some(_)) => Some(format!("set: {}", clock_text(r.clock))),
        (Some(_), None) => Some("lost: the clock is unset".to_string()),
        _ => None,
    };
    if let Some(what) = jump {
        events.push((JUMP, format!("clock jump before step {}: {what}", r.step)));
    }
    if let (Some(a), Some(b)) = (p.clock, r.clock) {
        let (before, after) = (utc_offset(&r.zone, a), utc_offset(&r.zone, b));
        if before != after {
            let title = format!(
                "DST change before step {}: {} went from {} to {}",
                r.step,
                r.zone,
                offset_text(before),
                offset_text(after)
            );
            events.push((DST, title));
        }
    }
    events
}

/// The most minutes the elapsed panel shows: more than any two instants
/// of the clock lie apart (2^64 microseconds is about 3.1e11 minutes).
/// An interval beyond it (`"inf"`, `1.7e308` hours) is drawn at it, so that
/// the axis stays finite and plotters' label search ends.
const MINUTES_SHOWN: f64 = 1e12;

/// `time_interval` in minutes, as drawn.
fn interval_shown(r: &StepRecord) -> f64 {
    (r.time_interval_hours * 60.0).min(MINUTES_SHOWN)
}

fn draw_elapsed<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    records: &[StepRecord],
    titles: &mut Vec<String>,
) -> Result<(), String> {
    let since: Vec<Option<(f64, f64)>> = records.iter().map(since_told).collect();
    let values = since.iter().flatten().map(|s| s.0).chain(records.iter().map(interval_shown));
    let (low, high) = values.fold((0.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (low, top) = (if low < 0.0 { low * 1.15 } else { 0.0 }, high * 1.2);
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .margin_right(30)
        .caption("minutes since the time was last told, against time_interval; clock jumps and DST changes", (FONT, 15))
        .x_label_area_size(40)
        .y_label_area_size(110)
        .build_cartesian_2d(x_range(records), low..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels(x_labels(records))
        .x_label_formatter(&step_label)
        .y_label_formatter(&|y: &f64| minutes_label(*y, top - low))
        .x_desc("step")
        .y_desc("minutes")
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    let mut marks = Vec::new();
    let (interval_lines, interval_changes) = segments(records, interval_shown);
    for line in interval_lines {
        chart.draw_series(DashedLineSeries::new(line, 14, 8, TIME.stroke_width(2))).map_err(err)?;
    }
    for (i, v) in interval_changes {
        let r = &records[i];
        let minutes = r.time_interval_hours * 60.0;
        let shown = if minutes > v { format!(", drawn at {v} minutes") } else { String::new() };
        let title = format!(
            "time_interval from step {}: {minutes} minutes ({} h){shown}",
            r.step, r.time_interval_hours
        );
        marks.push(Mark {
            at: (r.step as f64 - 0.5, v),
            color: TIME,
            filled: false,
            radius: 4,
            title,
        });
    }
    // The line breaks where nothing told the time (before the first hint,
    // after a compression).
    let mut run: Vec<(f64, f64)> = Vec::new();
    for (r, s) in records.iter().zip(&since) {
        match s {
            Some((real, wall)) => {
                run.push((r.step as f64, *real));
                let mut title = format!(
                    "{}: {real:.1} minutes, interval {} minutes",
                    step_head("since told", r),
                    r.time_interval_hours * 60.0
                );
                if (wall - real).abs() > 1e-9 {
                    let _ = write!(title, "; by {}'s wall clocks {wall:.1} minutes (what Python subtracts in the same zone)", r.zone);
                }
                marks.push(Mark {
                    at: (r.step as f64, *real),
                    color: GREY,
                    filled: true,
                    radius: 4,
                    title,
                });
            }
            None => {
                if run.len() > 1 {
                    chart
                        .draw_series(LineSeries::new(
                            std::mem::take(&mut run),
                            GREY.stroke_width(2),
                        ))
                        .map_err(err)?;
                }
                run.clear();
            }
        }
    }
    if run.len() > 1 {
        chart.draw_series(LineSeries::new(run, GREY.stroke_width(2))).map_err(err)?;
    }
    let mut prev: Option<&StepRecord> = None;
    for r in records {
        let x = r.step as f64 - 0.5;
        let events = prev.map_or_else(Vec::new, |p| clock_events(p, r));
        for (k, (color, title)) in events.into_iter().enumerate() {
            chart
                .draw_series(DashedLineSeries::new(
                    [(x, low), (x, top)],
                    4,
                    4,
                    color.stroke_width(1),
                ))
                .map_err(err)?;
            marks.push(Mark {
                at: (x, top - (top - low) * (0.07 + 0.08 * k as f64)),
                color,
                filled: true,
                radius: 6,
                title,
            });
        }
        prev = Some(r);
    }
    draw_marks(&mut chart, marks, titles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_the_non_builtin_tag_lines() {
        let hint = "<system-reminder>x:\n<current-time>t</current-time>\n<robot>rover-7</robot>\n<temperature>25.5 °C</temperature>\n<tasks>..</tasks>\n</system-reminder>";
        assert_eq!(fields_of(hint), [("robot", "rover-7"), ("temperature", "25.5 °C")]);
    }

    #[test]
    fn titles_go_to_the_circles_in_order_and_must_match_in_number() {
        let svg = "<svg>\n<circle cx=\"1\" r=\"2\"/>\n<rect/>\n<circle cx=\"3\" r=\"2\"/>\n</svg>";
        let titled = attach_titles(svg, &["a <b> & \"c\"".into(), "d".into()]).unwrap();
        assert_eq!(
            titled,
            "<svg>\n<circle cx=\"1\" r=\"2\"><title>a &lt;b&gt; &amp; &quot;c&quot;</title></circle>\n<rect/>\n<circle cx=\"3\" r=\"2\"><title>d</title></circle>\n</svg>"
        );
        assert!(attach_titles(svg, &["a".into()]).is_err());
        assert!(attach_titles(svg, &["a".into(), "b".into(), "c".into()]).is_err());
    }
}
