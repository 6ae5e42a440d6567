//! `cargo xtask demo`'s options, checked before anything is built or run
//! against what the firmware accepts ([`limits`], the firmware's own
//! constants): a value the firmware would ignore, or a temperature the
//! TMP105 cannot report, is an error naming the option and the range.

use std::fmt;

/// The firmware's step count and sensor range (`firmware/src/limits.rs`).
#[path = "../../firmware/src/limits.rs"]
mod limits;

/// The steps and the sensor's range the firmware has.
pub use limits::{SENSOR_SIXTEENTHS, STEPS};

/// The demo's options, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoOptions {
    /// One temperature per step in milli-°C (at least one, at most
    /// [`STEPS`]; the last repeats), each a multiple of 1/16 °C.
    pub temperatures_milli: Vec<i32>,
    /// Reset the MCU after this step (`0..STEPS - 1`).
    pub reset_after: Option<usize>,
    /// `(before step, milli-°C)`: the environment's temperature in the
    /// idle time before that step (`1..STEPS`).
    pub environment_milli: Vec<(usize, i32)>,
    /// `--otlp URL`: export the session to this OpenTelemetry collector
    /// while the board runs (`envaware-sim export --follow`).
    pub otlp: Option<String>,
    /// `--stream`: the board asks its model for streamed replies
    /// (server-sent events in HTTP chunks).
    pub stream: bool,
}

/// Why the demo's options were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemoArgError {
    /// An option without its value.
    MissingValue {
        /// The option.
        option: &'static str,
        /// What its value looks like.
        example: &'static str,
    },
    /// An argument that is no option of the demo.
    Unknown(String),
    /// `--reset-after N` with `N` not a step after which a reset leaves
    /// steps to run.
    ResetAfter(String),
    /// More temperatures than steps, or none.
    TemperatureCount(usize),
    /// Not a number.
    NotATemperature {
        /// The option.
        option: &'static str,
        /// The text given.
        text: String,
    },
    /// Outside the TMP105's range: the firmware would read `unavailable`.
    TemperatureOutOfRange {
        /// The option.
        option: &'static str,
        /// The text given.
        text: String,
    },
    /// Not a multiple of 1/16 °C: the sensor would report another value.
    TemperatureNotExact {
        /// The option.
        option: &'static str,
        /// The text given.
        text: String,
        /// The nearest values it can report, below and above, in 1/16 °C.
        nearest: (i32, i32),
    },
    /// `--environment` item not `STEP:TEMPERATURE`, or its step is not one
    /// whose idle time the firmware has.
    EnvironmentStep(String),
    /// `--otlp` not a plain `http://HOST:PORT` URL.
    Otlp(String),
}

/// `sixteenths` as exact decimal degrees: `21.5`, `-4.25`, `0.0625`.
fn degrees(sixteenths: i32) -> String {
    let sign = if sixteenths < 0 { "-" } else { "" };
    let magnitude = sixteenths.unsigned_abs();
    let mut fraction = (magnitude % 16) * 625;
    let mut digits = 4;
    while digits > 1 && fraction.is_multiple_of(10) {
        fraction /= 10;
        digits -= 1;
    }
    format!("{sign}{}.{fraction:0digits$}", magnitude / 16)
}

fn sensor_range() -> String {
    let (lo, hi) = (i32::from(*SENSOR_SIXTEENTHS.start()), i32::from(*SENSOR_SIXTEENTHS.end()));
    format!("{}..={} °C", degrees(lo), degrees(hi))
}

impl fmt::Display for DemoArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemoArgError::MissingValue { option, example } => {
                write!(f, "{option} needs a value, e.g. {option} {example}")
            }
            DemoArgError::Unknown(arg) => write!(
                f,
                "unknown argument {arg:?}; usage: cargo xtask demo [--temperatures 21.5,30,-4.25] \
                 [--environment 7:33|none] [--reset-after N] [--otlp http://HOST:PORT] [--stream] [--host]"
            ),
            DemoArgError::ResetAfter(n) => write!(
                f,
                "--reset-after {n}: expected a step in 0..={} (the demo has {STEPS} steps, 0 to {}; \
                 a reset after the last would leave none to run)",
                STEPS - 2,
                STEPS - 1
            ),
            DemoArgError::TemperatureCount(n) => write!(
                f,
                "--temperatures: {n} temperatures given, expected 1 to {STEPS} (one per step of \
                 the demo's {STEPS}, the last repeating)"
            ),
            DemoArgError::NotATemperature { option, text } => {
                write!(f, "{option} {text}: not a temperature in °C (e.g. 21.5)")
            }
            DemoArgError::TemperatureOutOfRange { option, text } => write!(
                f,
                "{option} {text}: expected a temperature in {} (the TMP105's range; the firmware \
                 reads anything else as unavailable)",
                sensor_range()
            ),
            DemoArgError::TemperatureNotExact { option, text, nearest: (below, above) } => write!(
                f,
                "{option} {text}: the TMP105 reports steps of 0.0625 °C and would not report \
                 {text} °C; give {} or {}",
                degrees(*below),
                degrees(*above)
            ),
            DemoArgError::EnvironmentStep(item) => write!(
                f,
                "--environment {item}: expected STEP:TEMPERATURE with a step in 1..={} (the idle \
                 time before that step; the demo has {STEPS} steps), or none",
                STEPS - 1
            ),
            DemoArgError::Otlp(url) => write!(
                f,
                "--otlp {url}: expected http://HOST:PORT, an OpenTelemetry collector or trace UI \
                 on plain HTTP (Phoenix: http://127.0.0.1:6006)"
            ),
        }
    }
}

impl std::error::Error for DemoArgError {}

impl From<DemoArgError> for String {
    fn from(e: DemoArgError) -> String {
        e.to_string()
    }
}

/// One temperature in milli-°C, if the TMP105 reports it exactly: within
/// its range and a multiple of 1/16 °C (so the hint carries the value
/// given; QEMU's model keeps 1/256 °C and the sensor 1/16).
pub fn temperature(option: &'static str, text: &str) -> Result<i32, DemoArgError> {
    let t = text.trim();
    let value: f64 = t
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| DemoArgError::NotATemperature { option, text: t.to_string() })?;
    // Exact: |value| is small, and times 16 is a power of two.
    let sixteenths = value * 16.0;
    let (lo, hi) = (f64::from(*SENSOR_SIXTEENTHS.start()), f64::from(*SENSOR_SIXTEENTHS.end()));
    if !(lo..=hi).contains(&sixteenths) {
        return Err(DemoArgError::TemperatureOutOfRange { option, text: t.to_string() });
    }
    if sixteenths.fract() != 0.0 {
        let below = sixteenths.floor() as i32;
        return Err(DemoArgError::TemperatureNotExact {
            option,
            text: t.to_string(),
            nearest: (below, below + 1),
        });
    }
    // Half a milli-degree away from zero: QEMU's `milli * 256 / 1000`
    // (truncating) then gives the sixteenths exactly.
    Ok((value * 1000.0).round() as i32)
}

/// `--temperatures 21.5,30,-4.25`.
pub fn temperatures(text: &str) -> Result<Vec<i32>, DemoArgError> {
    let list =
        text.split(',').map(|t| temperature("--temperatures", t)).collect::<Result<Vec<_>, _>>()?;
    if list.len() > STEPS {
        return Err(DemoArgError::TemperatureCount(list.len()));
    }
    Ok(list)
}

/// `--reset-after N`.
pub fn reset_after(text: &str) -> Result<usize, DemoArgError> {
    text.trim()
        .parse()
        .ok()
        .filter(|n| *n < STEPS - 1)
        .ok_or_else(|| DemoArgError::ResetAfter(text.to_string()))
}

/// `--environment 7:33,3:-4.5` or `none`.
pub fn environment(text: &str) -> Result<Vec<(usize, i32)>, DemoArgError> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    let mut pairs: Vec<(usize, i32)> = Vec::new();
    for item in text.split(',') {
        let bad = || DemoArgError::EnvironmentStep(item.to_string());
        let (step, t) = item.split_once(':').ok_or_else(bad)?;
        let step: usize =
            step.trim().parse().ok().filter(|s| (1..STEPS).contains(s)).ok_or_else(bad)?;
        // Two for one idle time: only the first would be set.
        if pairs.iter().any(|(s, _)| *s == step) {
            return Err(bad());
        }
        pairs.push((step, temperature("--environment", t)?));
    }
    Ok(pairs)
}

impl DemoOptions {
    /// Parses the demo's arguments (`--host` is the caller's), with the
    /// defaults for those not given.
    pub fn parse(
        args: &[String],
        default_temperatures: &str,
        default_environment: &str,
    ) -> Result<DemoOptions, DemoArgError> {
        let mut temperatures_text = default_temperatures.to_string();
        let mut environment_text = default_environment.to_string();
        let mut reset = None;
        let mut otlp = None;
        let mut stream = false;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |option: &'static str, example: &'static str| {
                it.next().cloned().ok_or(DemoArgError::MissingValue { option, example })
            };
            match arg.as_str() {
                "--temperatures" => temperatures_text = value("--temperatures", "21.5,30,-4.25")?,
                "--environment" => environment_text = value("--environment", "7:33")?,
                "--reset-after" => reset = Some(reset_after(&value("--reset-after", "4")?)?),
                "--stream" => stream = true,
                "--otlp" => {
                    let url = value("--otlp", "http://127.0.0.1:6006")?;
                    let host = url.strip_prefix("http://").and_then(|r| r.split('/').next());
                    if host.is_none_or(str::is_empty) {
                        return Err(DemoArgError::Otlp(url));
                    }
                    otlp = Some(url);
                }
                other => match other.strip_prefix("--temperatures=") {
                    Some(list) => temperatures_text = list.to_string(),
                    None => return Err(DemoArgError::Unknown(other.to_string())),
                },
            }
        }
        Ok(DemoOptions {
            temperatures_milli: temperatures(&temperatures_text)?,
            reset_after: reset,
            environment_milli: environment(&environment_text)?,
            otlp,
            stream,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<DemoOptions, DemoArgError> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        DemoOptions::parse(&args, "21.5,22.25", "7:33")
    }

    fn error(args: &[&str]) -> String {
        parse(args).unwrap_err().to_string()
    }

    #[test]
    fn the_limits_are_the_firmwares() {
        assert_eq!(STEPS, 10);
        assert_eq!(SENSOR_SIXTEENTHS, -880..=2000);
        assert_eq!(sensor_range(), "-55.0..=125.0 °C");
    }

    #[test]
    fn defaults_and_valid_options_parse() {
        let d = parse(&[]).unwrap();
        assert_eq!(d.temperatures_milli, [21_500, 22_250]);
        assert_eq!((d.reset_after, d.environment_milli), (None, vec![(7, 33_000)]));
        let o = parse(&[
            "--temperatures",
            "-55,125,0.0625,-4.3125",
            "--reset-after",
            "8",
            "--environment",
            "1:-4.25,9:30",
        ])
        .unwrap();
        // Rounded away from zero: QEMU's truncating `milli * 256 / 1000` gives the sixteenths.
        assert_eq!(o.temperatures_milli, [-55_000, 125_000, 63, -4_313]);
        assert_eq!(o.reset_after, Some(8));
        assert_eq!(o.environment_milli, [(1, -4_250), (9, 30_000)]);
        assert_eq!(parse(&["--reset-after", "0"]).unwrap().reset_after, Some(0));
        assert_eq!(parse(&["--environment", "none"]).unwrap().environment_milli, []);
        let ten = ["21.5"; 10].join(",");
        assert_eq!(parse(&["--temperatures", &ten]).unwrap().temperatures_milli.len(), 10);
        assert_eq!(parse(&["--temperatures=30"]).unwrap().temperatures_milli, [30_000]);
    }

    #[test]
    fn a_reset_after_a_step_the_demo_does_not_have_is_refused() {
        let expected = |n: &str| {
            format!(
                "--reset-after {n}: expected a step in 0..=8 (the demo has 10 steps, 0 to 9; a \
                 reset after the last would leave none to run)"
            )
        };
        for n in ["9", "10", "4294967296", "99999999999999999999999", "-1", "four", ""] {
            assert_eq!(error(&["--reset-after", n]), expected(n));
        }
        assert_eq!(error(&["--reset-after"]), "--reset-after needs a value, e.g. --reset-after 4");
    }

    #[test]
    fn a_temperature_outside_the_sensors_range_is_refused() {
        for t in ["127.99", "125.0625", "-55.0625", "-128", "1e9"] {
            assert_eq!(
                error(&["--temperatures", &format!("21.5,{t}")]),
                format!(
                    "--temperatures {t}: expected a temperature in -55.0..=125.0 °C (the TMP105's \
                     range; the firmware reads anything else as unavailable)"
                )
            );
        }
        assert!(error(&["--environment", "7:126"]).starts_with("--environment 126: expected"));
        for t in ["NaN", "inf", "warm", ""] {
            assert_eq!(
                error(&["--temperatures", t]),
                format!("--temperatures {t}: not a temperature in °C (e.g. 21.5)")
            );
        }
    }

    #[test]
    fn a_temperature_the_sensor_would_round_is_refused_with_the_nearest_it_reports() {
        assert_eq!(
            error(&["--temperatures", "21.51"]),
            "--temperatures 21.51: the TMP105 reports steps of 0.0625 °C and would not report \
             21.51 °C; give 21.5 or 21.5625"
        );
        assert!(
            error(&["--temperatures", "-4.3"]).ends_with("give -4.3125 or -4.25"),
            "{}",
            error(&["--temperatures", "-4.3"])
        );
    }

    #[test]
    fn more_temperatures_than_steps_are_refused() {
        let many = ["21.5"; 1000].join(",");
        assert_eq!(
            error(&["--temperatures", &many]),
            "--temperatures: 1000 temperatures given, expected 1 to 10 (one per step of the \
             demo's 10, the last repeating)"
        );
        assert!(error(&["--temperatures", &["21.5"; 11].join(",")]).contains(": 11 temperatures"));
    }

    #[test]
    fn an_environment_step_without_an_idle_time_is_refused() {
        for item in ["0:33", "10:33", "4294967296:33", "7", "7:33,7:30"] {
            let first_bad = item.split(',').next_back().unwrap_or(item);
            let shown = if item == "7:33,7:30" { "7:30" } else { first_bad };
            assert_eq!(
                error(&["--environment", item]),
                format!(
                    "--environment {shown}: expected STEP:TEMPERATURE with a step in 1..=9 (the \
                     idle time before that step; the demo has 10 steps), or none"
                )
            );
        }
    }

    #[test]
    fn an_unknown_argument_is_named() {
        assert!(error(&["--reset"]).starts_with("unknown argument \"--reset\"; usage:"));
    }

    #[test]
    fn otlp_takes_a_plain_http_url_and_names_any_other() {
        assert_eq!(
            parse(&["--otlp", "http://127.0.0.1:6006"]).unwrap().otlp.as_deref(),
            Some("http://127.0.0.1:6006")
        );
        assert_eq!(parse(&[]).unwrap().otlp, None);
        for url in ["https://h:4318", "127.0.0.1:6006", "http://"] {
            assert!(
                error(&["--otlp", url])
                    .starts_with(&format!("--otlp {url}: expected http://HOST:PORT")),
                "{url}"
            );
        }
        assert_eq!(error(&["--otlp"]), "--otlp needs a value, e.g. --otlp http://127.0.0.1:6006");
    }

    #[test]
    fn stream_is_a_flag_off_by_default() {
        assert!(parse(&["--stream"]).unwrap().stream);
        assert!(!parse(&["--otlp", "http://127.0.0.1:6006"]).unwrap().stream);
    }

    #[test]
    fn degrees_are_exact() {
        assert_eq!(degrees(344), "21.5");
        assert_eq!(degrees(-69), "-4.3125");
        assert_eq!(degrees(1), "0.0625");
        assert_eq!(degrees(0), "0.0");
    }
}
