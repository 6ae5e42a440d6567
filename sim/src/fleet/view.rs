//! `fleet --plot`: the fleet view, drawn from the store as SVG. One band per
//! device, over the fleet's time (UTC): a mark for each dimension a hint
//! told, in the timeline's colours (`replay --plot`), and each watched
//! reading as a grey line (scaled per field over the whole fleet, so that
//! the bands compare) with the watch's `above` dashed. Each hint is a group
//! of marks with one `<title>` (the tooltip a browser shows on hovering):
//! device, item, instant, and the hint's text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use plotters::style::RGBColor;

use crate::plot;
use crate::record::format_instant;
use envaware_sim::fleet_store::{self as store, StepRow};

/// The picture's width, in pixels.
pub const WIDTH: u32 = 1200;
const LEFT: f64 = 120.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 84.0;
const BOTTOM: f64 = 44.0;

/// The dimensions a hint tells, in lane order: name and colour (the
/// timeline's).
pub const DIMENSIONS: [(&str, RGBColor); 5] = [
    ("time", plot::TIME),
    ("tasks", plot::TASKS),
    ("context length", plot::CONTEXT),
    ("tool error", plot::TOOL_ERROR),
    ("watch", plot::WATCH),
];

/// A colour as SVG's hex digits, without the `#`.
pub fn hex(c: RGBColor) -> String {
    format!("{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The reading lines' colour.
const READING: &str = "#7f7f7f";

/// Which of [`DIMENSIONS`] a step's hint told.
pub fn told(row: &StepRow) -> [bool; 5] {
    [row.time, row.tasks, row.context_length, row.tool_error, row.watch]
}

/// What the view drew.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drawn {
    /// Devices (bands).
    pub devices: usize,
    /// Hints (groups with a title).
    pub hints: usize,
    /// Marks (one per dimension a hint told).
    pub marks: usize,
    /// Steps left out: their clock was unknown.
    pub no_clock: usize,
}

/// The fleet view of the store at `store`, titled `title`.
///
/// # Errors
///
/// The store cannot be read.
pub fn render_store(store: &Path, title: &str) -> Result<(String, Drawn), String> {
    let mut fleet = Vec::new();
    for device in store::devices(store).map_err(|e| e.to_string())? {
        let rows = store::read_device(store, &device).map_err(|e| e.to_string())?;
        fleet.push((device, rows));
    }
    Ok(render(&fleet, title))
}

/// The fleet view of `fleet` (each device's rows, in order).
pub fn render(fleet: &[(String, Vec<StepRow>)], title: &str) -> (String, Drawn) {
    let mut drawn = Drawn { devices: fleet.len(), ..Drawn::default() };
    let instants = fleet.iter().flat_map(|(_, rows)| rows.iter().filter_map(|r| r.instant));
    let (t0, t1) = instants.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let (t0, t1) = if t0 > t1 { (0, 1) } else { (t0, t1.max(t0 + 1)) };
    let band = (560.0 / fleet.len().max(1) as f64).clamp(10.0, 48.0);
    let height = TOP + band * fleet.len() as f64 + BOTTOM;
    let x = |t: i64| LEFT + (t - t0) as f64 / (t1 - t0) as f64 * (f64::from(WIDTH) - LEFT - RIGHT);
    // Each watched field's range over the whole fleet.
    let mut ranges: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for reading in fleet.iter().flat_map(|(_, rows)| rows.iter().flat_map(|r| &r.readings)) {
        if let (Some(v), "read") = (reading.value, reading.kind) {
            let range = ranges.entry(&reading.field).or_insert((v, v));
            *range = (range.0.min(v), range.1.max(v));
        }
    }

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let span = format!(
        "{} to {} (UTC)",
        format_instant(envaware::Timestamp::from_unix_micros(t0)),
        format_instant(envaware::Timestamp::from_unix_micros(t1))
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="22" font-size="16" font-weight="bold">{}</text>"#,
        plot::xml_escape(title)
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="40" font-size="12" fill="{READING}">{}</text>"#,
        plot::xml_escape(&span)
    );
    // The legend.
    let mut lx = LEFT;
    for (name, colour) in DIMENSIONS {
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="54" width="10" height="10" fill="#{colour}"/><text x="{:.1}" y="63" font-size="12">{name}</text>"##,
            lx,
            lx + 14.0,
            colour = hex(colour)
        );
        lx += 28.0 + 7.0 * name.len() as f64;
    }
    let _ = writeln!(
        svg,
        r#"<line x1="{lx:.1}" y1="59" x2="{:.1}" y2="59" stroke="{READING}" stroke-width="1.5"/><text x="{:.1}" y="63" font-size="12">watched reading (scaled per field)</text>"#,
        lx + 18.0,
        lx + 22.0
    );
    lx += 250.0;
    let _ = writeln!(
        svg,
        r##"<line x1="{lx:.1}" y1="59" x2="{:.1}" y2="59" stroke="#{}" stroke-dasharray="4 3"/><text x="{:.1}" y="63" font-size="12">above</text>"##,
        lx + 18.0,
        hex(plot::TOOL_ERROR),
        lx + 22.0
    );

    let lane = band / DIMENSIONS.len() as f64;
    let radius = (lane * 0.45).clamp(1.5, 4.0);
    for (i, (device, rows)) in fleet.iter().enumerate() {
        let y0 = TOP + band * i as f64;
        let shade = if i % 2 == 0 { "#f4f4f4" } else { "#ffffff" };
        let _ = writeln!(
            svg,
            r#"<rect x="{LEFT}" y="{y0:.1}" width="{:.1}" height="{band:.1}" fill="{shade}"/>"#,
            f64::from(WIDTH) - LEFT - RIGHT
        );
        let font = (band - 2.0).min(12.0);
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="{font:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            y0 + band / 2.0 + font / 3.0,
            plot::xml_escape(device)
        );
        // Each watched field's line, and its `above`.
        for (field, (lo, hi)) in &ranges {
            let y = |v: f64| y0 + band - 2.0 - (v - lo) / (hi - lo).max(1e-9) * (band - 4.0);
            let points: Vec<String> = rows
                .iter()
                .filter_map(|r| {
                    let read = r.readings.iter().find(|x| x.kind == "read" && x.field == *field)?;
                    Some(format!("{:.1},{:.1}", x(r.instant?), y(read.value?)))
                })
                .collect();
            if points.len() > 1 {
                let _ = writeln!(
                    svg,
                    r#"<polyline points="{}" fill="none" stroke="{READING}" stroke-width="1"/>"#,
                    points.join(" ")
                );
            }
            let above = rows
                .iter()
                .flat_map(|r| &r.readings)
                .find(|x| x.field == *field)
                .and_then(|x| x.above);
            if let Some(above) = above.filter(|a| (*lo..=*hi).contains(a)) {
                let _ = writeln!(
                    svg,
                    r##"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#{}" stroke-dasharray="4 3" stroke-opacity="0.6"/>"##,
                    y(above),
                    f64::from(WIDTH) - RIGHT,
                    y(above),
                    hex(plot::TOOL_ERROR)
                );
            }
        }
        for row in rows {
            let Some(t) = row.instant else {
                drawn.no_clock += 1;
                continue;
            };
            let Some(hint) = &row.hint else { continue };
            let cx = x(t);
            let when = format_instant(envaware::Timestamp::from_unix_micros(t));
            let _ = write!(
                svg,
                "<g><title>{}</title>",
                plot::xml_escape(&format!("{device} item {} at {when}\n{hint}", row.number))
            );
            for (k, (_, colour)) in DIMENSIONS.iter().enumerate().filter(|(k, _)| told(row)[*k]) {
                let cy = y0 + lane * (k as f64 + 0.5);
                let _ = write!(
                    svg,
                    r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="{radius:.1}" fill="#{}"/>"##,
                    hex(*colour)
                );
                drawn.marks += 1;
            }
            svg.push_str("</g>\n");
            drawn.hints += 1;
        }
    }
    // The time axis.
    let axis = TOP + band * fleet.len() as f64;
    let _ = writeln!(
        svg,
        r#"<line x1="{LEFT}" y1="{axis:.1}" x2="{:.1}" y2="{axis:.1}" stroke="black"/>"#,
        f64::from(WIDTH) - RIGHT
    );
    for k in 0..=5 {
        let t = t0 + (t1 - t0) / 5 * k;
        let label = chrono::DateTime::from_timestamp_micros(t)
            .map_or_else(String::new, |d| d.format("%H:%M:%S").to_string());
        let _ = writeln!(
            svg,
            r#"<line x1="{0:.1}" y1="{axis:.1}" x2="{0:.1}" y2="{1:.1}" stroke="black"/><text x="{0:.1}" y="{2:.1}" font-size="11" text-anchor="middle">{label}</text>"#,
            x(t),
            axis + 5.0,
            axis + 18.0
        );
    }
    if drawn.no_clock > 0 {
        let _ = writeln!(
            svg,
            r#"<text x="{LEFT}" y="{:.1}" font-size="11" fill="{READING}">{} steps without a clock are not drawn</text>"#,
            axis + 34.0,
            drawn.no_clock
        );
    }
    svg.push_str("</svg>\n");
    (svg, drawn)
}
