//! The fleet store: Parquet files that any engine reads, partitioned the
//! Hive way so that the partitions are columns (DuckDB, Spark, Trino,
//! ClickHouse):
//!
//! ```text
//! STORE/items/<device>.log          the device's items as received (envaware_host::FileLog)
//! STORE/items/<device>.first        the first item's number
//! STORE/steps/device=<device>/day=<YYYY-MM-DD>/<first>-<last>.parquet     one row per step
//! STORE/readings/device=<device>/day=<YYYY-MM-DD>/<first>-<last>.parquet  one row per reading
//! ```
//!
//! `device` and `day` (the step's UTC date; `__HIVE_DEFAULT_PARTITION__`,
//! Hive's null, for a step whose clock was unknown) live in the path only,
//! as Hive writes partitions. A file holds consecutive steps of one device
//! and one day, named by the first and last item numbers of its rows (ten
//! digits each). Files are written whole (a temporary name, synced, then
//! renamed), in the order of their numbers, readings before steps: the
//! highest number a device's steps files name is the last step stored,
//! and everything after it is written again from the device's items
//! ([`Committed`]).

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, RecordBatch, StringArray,
    TimestampMicrosecondArray, UInt32Array, UInt64Array,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// The partition value Hive writes for a null: a step with no clock.
pub const NULL_DAY: &str = "__HIVE_DEFAULT_PARTITION__";

/// One step of one device: a row of `steps`, with its `readings`.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// The step item's number in the device's log.
    pub number: u32,
    /// The step's clock, microseconds since the Unix epoch (UTC); `None`
    /// when the device did not know the time.
    pub instant: Option<i64>,
    /// `cur_iter`.
    pub cur_iter: u64,
    /// Input tokens.
    pub input_tokens: i64,
    /// The model's context size.
    pub context_size: i64,
    /// Tasks pending.
    pub tasks_pending: u64,
    /// Tasks in progress.
    pub tasks_in_progress: u64,
    /// The time dimension fired.
    pub time: bool,
    /// The tasks dimension fired.
    pub tasks: bool,
    /// The context-length dimension fired.
    pub context_length: bool,
    /// The tool-error dimension fired.
    pub tool_error: bool,
    /// The failed calls in a row it told of.
    pub tool_error_count: Option<u64>,
    /// A watch fired (by value or heartbeat; one held back is not).
    pub watch: bool,
    /// Each watch that fired or was held back, `name:reason` (`value`,
    /// `heartbeat`, `throttled`).
    pub watches: Vec<String>,
    /// The hint, as the device appended it.
    pub hint: Option<String>,
    /// The step was decided again and matched the device's decision (a
    /// compacted log's steps before its first header are not checked).
    pub checked: bool,
    /// When this consumer received the item (µs since the epoch); `None`
    /// for a row written again from items an earlier run received.
    pub received_at: Option<i64>,
    /// When the row was written (µs since the epoch), as read back from
    /// the store; writing sets it for the whole file.
    pub written_at: Option<i64>,
    /// Its readings.
    pub readings: Vec<Reading>,
}

/// One reading of one step: a watched field's value the step decided on
/// (`read`), or a live field its hint told (`told`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The field.
    pub field: String,
    /// `read` or `told`.
    pub kind: &'static str,
    /// Its text; `None` when the sensor had no reading.
    pub text: Option<String>,
    /// The number the text starts with, if any.
    pub value: Option<f64>,
    /// The watch's `above`, for a watched field.
    pub above: Option<f64>,
    /// The watch's `below`, for a watched field.
    pub below: Option<f64>,
}

impl StepRow {
    /// The `day` partition of the row.
    pub fn day(&self) -> String {
        self.instant
            .and_then(chrono::DateTime::from_timestamp_micros)
            .map_or_else(|| NULL_DAY.to_string(), |t| t.format("%Y-%m-%d").to_string())
    }
}

/// Why the store could not be written or read: the file and the cause.
#[derive(Debug)]
pub struct StoreError {
    /// The file or directory.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for StoreError {}

fn at(path: &Path) -> impl Fn(String) -> StoreError + '_ {
    move |message| StoreError { path: path.to_path_buf(), message }
}

/// A device's partition directory of `dataset` (`steps` or `readings`).
pub fn device_dir(store: &Path, dataset: &str, device: &str) -> PathBuf {
    store.join(dataset).join(format!("device={device}"))
}

/// A data file's name: its rows' first and last item numbers.
fn file_name(first: u32, last: u32) -> String {
    format!("{first:010}-{last:010}.parquet")
}

/// The numbers a data file's name holds.
fn numbers_of(name: &str) -> Option<(u32, u32)> {
    let (first, last) = name.strip_suffix(".parquet")?.split_once('-')?;
    fn number(s: &str) -> Option<u32> {
        (s.len() == 10 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
    }
    Some((number(first)?, number(last)?))
}

/// The data files of a device's partitions of one dataset, with the
/// numbers their names hold; other files are left out.
fn data_files(
    store: &Path,
    dataset: &str,
    device: &str,
) -> Result<Vec<(PathBuf, u32, u32)>, StoreError> {
    let dir = device_dir(store, dataset, device);
    let mut files = Vec::new();
    let days = match std::fs::read_dir(&dir) {
        Ok(days) => days,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(e) => return Err(at(&dir)(e.to_string())),
    };
    for day in days {
        let day = day.map_err(|e| at(&dir)(e.to_string()))?.path();
        if !day.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&day).map_err(|e| at(&day)(e.to_string()))? {
            let path = file.map_err(|e| at(&day)(e.to_string()))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if let Some((first, last)) = numbers_of(name) {
                files.push((path, first, last));
            }
        }
    }
    Ok(files)
}

/// What the store holds of a device's steps: the highest item number its
/// steps files name, after the files a stopped run left unfinished (a
/// temporary file, readings whose steps were not written) are removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Committed {
    /// The last step item stored, if any.
    pub last: Option<u32>,
    /// Files removed.
    pub removed: usize,
}

/// Finds what the store holds of `device`'s steps (see [`Committed`]).
///
/// # Errors
///
/// A partition that cannot be listed, or a file that cannot be removed.
pub fn committed(store: &Path, device: &str) -> Result<Committed, StoreError> {
    let mut removed = 0;
    for dataset in ["steps", "readings"] {
        let dir = device_dir(store, dataset, device);
        let Ok(days) = std::fs::read_dir(&dir) else { continue };
        for day in days.flatten() {
            let Ok(files) = std::fs::read_dir(day.path()) else { continue };
            for file in files.flatten() {
                if file.path().extension().is_some_and(|e| e == "tmp") {
                    std::fs::remove_file(file.path())
                        .map_err(|e| at(&file.path())(e.to_string()))?;
                    removed += 1;
                }
            }
        }
    }
    let last = data_files(store, "steps", device)?.into_iter().map(|(_, _, last)| last).max();
    for (path, first, _) in data_files(store, "readings", device)? {
        if last.is_none_or(|last| first > last) {
            std::fs::remove_file(&path).map_err(|e| at(&path)(e.to_string()))?;
            removed += 1;
        }
    }
    Ok(Committed { last, removed })
}

/// Writes `rows` (one device's, in the order of their numbers, none of them
/// stored yet) as one file per run of consecutive rows of one day: the
/// readings file, then the steps file, each whole. `written_at` is the
/// `written_at` column (µs since the epoch). Returns the files written.
///
/// # Errors
///
/// A file or directory that cannot be written; the files before it are in
/// place, and [`committed`] finds where the device stands.
pub fn write_rows(
    store: &Path,
    device: &str,
    rows: &[StepRow],
    written_at: i64,
) -> Result<usize, StoreError> {
    let mut files = 0;
    let mut rest = rows;
    while let Some(first) = rest.first() {
        let day = first.day();
        let run = rest.iter().take_while(|r| r.day() == day).count();
        let (now, later) = rest.split_at(run);
        let name = file_name(now[0].number, now[run - 1].number);
        if now.iter().any(|r| !r.readings.is_empty()) {
            let dir = device_dir(store, "readings", device).join(format!("day={day}"));
            write_file(&dir, &name, &readings_batch(now)?)?;
            files += 1;
        }
        let dir = device_dir(store, "steps", device).join(format!("day={day}"));
        write_file(&dir, &name, &steps_batch(now, written_at)?)?;
        files += 1;
        rest = later;
    }
    Ok(files)
}

/// Writes `batch` as `dir/name` whole: a temporary file, synced, renamed,
/// the directory synced (so that a later file is never on disk without
/// this one).
fn write_file(dir: &Path, name: &str, batch: &RecordBatch) -> Result<(), StoreError> {
    std::fs::create_dir_all(dir).map_err(|e| at(dir)(e.to_string()))?;
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let fail = at(&tmp);
    let file = File::create(&tmp).map_err(|e| fail(e.to_string()))?;
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let mut writer =
        ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| fail(e.to_string()))?;
    writer.write(batch).map_err(|e| fail(e.to_string()))?;
    let mut file = writer.into_inner().map_err(|e| fail(e.to_string()))?;
    file.flush().and_then(|()| file.sync_data()).map_err(|e| fail(e.to_string()))?;
    std::fs::rename(&tmp, &path).map_err(|e| at(&path)(e.to_string()))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| at(dir)(e.to_string()))
}

fn timestamps(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from_iter(values).with_timezone("UTC"))
}

fn batch(columns: Vec<(&str, ArrayRef, bool)>) -> Result<RecordBatch, StoreError> {
    RecordBatch::try_from_iter_with_nullable(columns)
        .map_err(|e| StoreError { path: PathBuf::new(), message: format!("a record batch: {e}") })
}

/// The `steps` columns of `rows`.
fn steps_batch(rows: &[StepRow], written_at: i64) -> Result<RecordBatch, StoreError> {
    let u64s = |f: fn(&StepRow) -> u64| Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)));
    let i64s = |f: fn(&StepRow) -> i64| Arc::new(Int64Array::from_iter_values(rows.iter().map(f)));
    let bools = |f: fn(&StepRow) -> bool| {
        Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(f(r)))))
    };
    let mut watches = ListBuilder::new(StringBuilder::new());
    for row in rows {
        for w in &row.watches {
            watches.values().append_value(w);
        }
        watches.append(true);
    }
    batch(vec![
        ("number", Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.number))), false),
        ("instant", timestamps(rows.iter().map(|r| r.instant)), true),
        ("cur_iter", u64s(|r| r.cur_iter), false),
        ("input_tokens", i64s(|r| r.input_tokens), false),
        ("context_size", i64s(|r| r.context_size), false),
        ("tasks_pending", u64s(|r| r.tasks_pending), false),
        ("tasks_in_progress", u64s(|r| r.tasks_in_progress), false),
        ("time", bools(|r| r.time), false),
        ("tasks", bools(|r| r.tasks), false),
        ("context_length", bools(|r| r.context_length), false),
        ("tool_error", bools(|r| r.tool_error), false),
        (
            "tool_error_count",
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.tool_error_count))),
            true,
        ),
        ("watch", bools(|r| r.watch), false),
        ("watches", Arc::new(watches.finish()), false),
        ("hint", Arc::new(StringArray::from_iter(rows.iter().map(|r| r.hint.as_deref()))), true),
        ("checked", bools(|r| r.checked), false),
        ("received_at", timestamps(rows.iter().map(|r| r.received_at)), true),
        ("written_at", timestamps(rows.iter().map(|_| Some(written_at))), false),
    ])
}

/// The `readings` columns of `rows`' readings.
fn readings_batch(rows: &[StepRow]) -> Result<RecordBatch, StoreError> {
    let all: Vec<(&StepRow, &Reading)> =
        rows.iter().flat_map(|r| r.readings.iter().map(move |x| (r, x))).collect();
    let strings = |f: fn(&Reading) -> Option<&str>| -> ArrayRef {
        Arc::new(StringArray::from_iter(all.iter().map(|(_, x)| f(x))))
    };
    let floats = |f: fn(&Reading) -> Option<f64>| -> ArrayRef {
        Arc::new(Float64Array::from_iter(all.iter().map(|(_, x)| f(x))))
    };
    batch(vec![
        (
            "number",
            Arc::new(UInt32Array::from_iter_values(all.iter().map(|(r, _)| r.number))),
            false,
        ),
        ("instant", timestamps(all.iter().map(|(r, _)| r.instant)), true),
        ("field", strings(|x| Some(&x.field)), false),
        ("kind", strings(|x| Some(x.kind)), false),
        ("text", strings(|x| x.text.as_deref()), true),
        ("value", floats(|x| x.value), true),
        ("above", floats(|x| x.above), true),
        ("below", floats(|x| x.below), true),
    ])
}

/// The devices the store has steps of, in order.
pub fn devices(store: &Path) -> Result<Vec<String>, StoreError> {
    let dir = store.join("steps");
    let mut devices = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(devices),
        Err(e) => return Err(at(&dir)(e.to_string())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| at(&dir)(e.to_string()))?;
        if let Some(id) = entry.file_name().to_str().and_then(|n| n.strip_prefix("device=")) {
            devices.push(id.to_string());
        }
    }
    devices.sort();
    Ok(devices)
}

/// Every step the store holds of `device`, its readings joined, in the
/// order of their numbers.
///
/// # Errors
///
/// A file that cannot be read or is not of this store's schema.
pub fn read_device(store: &Path, device: &str) -> Result<Vec<StepRow>, StoreError> {
    let mut rows = Vec::new();
    for (path, ..) in data_files(store, "steps", device)? {
        for batch in read_batches(&path)? {
            rows.extend(rows_of(&batch).map_err(at(&path))?);
        }
    }
    rows.sort_by_key(|r| r.number);
    let mut readings: Vec<(u32, Reading)> = Vec::new();
    for (path, ..) in data_files(store, "readings", device)? {
        for batch in read_batches(&path)? {
            readings.extend(readings_of(&batch).map_err(at(&path))?);
        }
    }
    // Stable: each step's readings keep their written order.
    readings.sort_by_key(|(number, _)| *number);
    let mut readings = readings.into_iter().peekable();
    for row in &mut rows {
        while let Some((_, reading)) = readings.next_if(|(n, _)| *n <= row.number) {
            row.readings.push(reading);
        }
    }
    Ok(rows)
}

fn read_batches(path: &Path) -> Result<Vec<RecordBatch>, StoreError> {
    let fail = at(path);
    let file = File::open(path).map_err(|e| fail(e.to_string()))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| fail(e.to_string()))?;
    reader.map(|b| b.map_err(|e| fail(e.to_string()))).collect()
}

/// Column `name` of `batch` as an array of type `A`.
fn column<'b, A: Array + 'static>(batch: &'b RecordBatch, name: &str) -> Result<&'b A, String> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<A>())
        .ok_or_else(|| format!("no column {name} of the store's type"))
}

fn opt<A: Array>(array: &A, i: usize) -> bool {
    array.is_valid(i)
}

fn rows_of(batch: &RecordBatch) -> Result<Vec<StepRow>, String> {
    let number = column::<UInt32Array>(batch, "number")?;
    let instant = column::<TimestampMicrosecondArray>(batch, "instant")?;
    let u64s = |name| column::<UInt64Array>(batch, name);
    let i64s = |name| column::<Int64Array>(batch, name);
    let bools = |name| column::<BooleanArray>(batch, name);
    let (cur_iter, pending, in_progress) =
        (u64s("cur_iter")?, u64s("tasks_pending")?, u64s("tasks_in_progress")?);
    let (tokens, size) = (i64s("input_tokens")?, i64s("context_size")?);
    let (time, tasks, context, tool_error, watch, checked) = (
        bools("time")?,
        bools("tasks")?,
        bools("context_length")?,
        bools("tool_error")?,
        bools("watch")?,
        bools("checked")?,
    );
    let count = u64s("tool_error_count")?;
    let watches = column::<ListArray>(batch, "watches")?;
    let hint = column::<StringArray>(batch, "hint")?;
    let received = column::<TimestampMicrosecondArray>(batch, "received_at")?;
    let written = column::<TimestampMicrosecondArray>(batch, "written_at")?;
    (0..batch.num_rows())
        .map(|i| {
            let list = watches.value(i);
            let names = list
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or("watches: not a list of strings")?;
            Ok(StepRow {
                number: number.value(i),
                instant: opt(instant, i).then(|| instant.value(i)),
                cur_iter: cur_iter.value(i),
                input_tokens: tokens.value(i),
                context_size: size.value(i),
                tasks_pending: pending.value(i),
                tasks_in_progress: in_progress.value(i),
                time: time.value(i),
                tasks: tasks.value(i),
                context_length: context.value(i),
                tool_error: tool_error.value(i),
                tool_error_count: opt(count, i).then(|| count.value(i)),
                watch: watch.value(i),
                watches: (0..names.len()).map(|j| names.value(j).to_string()).collect(),
                hint: opt(hint, i).then(|| hint.value(i).to_string()),
                checked: checked.value(i),
                received_at: opt(received, i).then(|| received.value(i)),
                written_at: opt(written, i).then(|| written.value(i)),
                readings: Vec::new(),
            })
        })
        .collect()
}

fn readings_of(batch: &RecordBatch) -> Result<Vec<(u32, Reading)>, String> {
    let number = column::<UInt32Array>(batch, "number")?;
    let field = column::<StringArray>(batch, "field")?;
    let kind = column::<StringArray>(batch, "kind")?;
    let text = column::<StringArray>(batch, "text")?;
    let floats = |name| column::<Float64Array>(batch, name);
    let (value, above, below) = (floats("value")?, floats("above")?, floats("below")?);
    let f = |a: &Float64Array, i: usize| opt(a, i).then(|| a.value(i));
    (0..batch.num_rows())
        .map(|i| {
            let kind = match kind.value(i) {
                "read" => "read",
                "told" => "told",
                other => return Err(format!("kind: {other:?} is neither read nor told")),
            };
            Ok((
                number.value(i),
                Reading {
                    field: field.value(i).to_string(),
                    kind,
                    text: opt(text, i).then(|| text.value(i).to_string()),
                    value: f(value, i),
                    above: f(above, i),
                    below: f(below, i),
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(number: u32, instant: Option<i64>) -> StepRow {
        StepRow {
            number,
            instant,
            cur_iter: 1,
            input_tokens: 900,
            context_size: 4096,
            tasks_pending: 1,
            tasks_in_progress: 0,
            time: number.is_multiple_of(2),
            tasks: false,
            context_length: false,
            tool_error: number == 5,
            tool_error_count: (number == 5).then_some(3),
            watch: number == 3,
            watches: vec![format!(
                "temperature:{}",
                if number == 3 { "value" } else { "throttled" }
            )],
            hint: number.is_multiple_of(2).then(|| format!("hint {number}")),
            checked: true,
            received_at: Some(1),
            written_at: None,
            readings: vec![Reading {
                field: "temperature".into(),
                kind: "read",
                text: Some(format!("{number}.5 °C")),
                value: Some(f64::from(number) + 0.5),
                above: Some(28.0),
                below: None,
            }],
        }
    }

    #[test]
    fn rows_are_written_by_day_and_read_back_and_a_restart_finds_the_last_one() {
        let store = std::env::temp_dir().join(format!("envaware-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&store);
        let day = 86_400_000_000i64;
        // Day 1, day 2, then back to day 1 (a clock set back), then no clock.
        let rows = vec![
            row(2, Some(day + 5)),
            row(3, Some(day + 6)),
            row(5, Some(2 * day)),
            row(7, Some(day + 9)),
            row(9, None),
        ];
        assert_eq!(write_rows(&store, "sim-0001", &rows, 42).unwrap(), 8);
        let names = |dataset: &str| -> Vec<String> {
            let mut names: Vec<String> = data_files(&store, dataset, "sim-0001")
                .unwrap()
                .into_iter()
                .map(|(p, ..)| p.strip_prefix(&store).unwrap().display().to_string())
                .collect();
            names.sort();
            names
        };
        assert_eq!(
            names("steps"),
            [
                "steps/device=sim-0001/day=1970-01-02/0000000002-0000000003.parquet",
                "steps/device=sim-0001/day=1970-01-02/0000000007-0000000007.parquet",
                "steps/device=sim-0001/day=1970-01-03/0000000005-0000000005.parquet",
                "steps/device=sim-0001/day=__HIVE_DEFAULT_PARTITION__/0000000009-0000000009.parquet",
            ]
        );
        let mut back = read_device(&store, "sim-0001").unwrap();
        assert!(back.iter().all(|r| r.written_at == Some(42)), "{back:?}");
        back.iter_mut().for_each(|r| r.written_at = None);
        assert_eq!(back, rows);
        assert_eq!(devices(&store).unwrap(), ["sim-0001"]);

        // A run stopped after a readings file and before its steps file,
        // and a temporary file: removed, the last step stored found.
        let stale = device_dir(&store, "readings", "sim-0001").join("day=1970-01-03");
        std::fs::write(stale.join(file_name(10, 12)), b"not yet").unwrap();
        std::fs::write(stale.join("0000000010-0000000012.parquet.tmp"), b"torn").unwrap();
        assert_eq!(committed(&store, "sim-0001").unwrap(), Committed { last: Some(9), removed: 2 });
        assert_eq!(committed(&store, "sim-0002").unwrap(), Committed { last: None, removed: 0 });
        std::fs::remove_dir_all(&store).unwrap();
    }

    #[test]
    fn only_names_of_two_ten_digit_numbers_are_data_files() {
        assert_eq!(numbers_of("0000000002-0000000003.parquet"), Some((2, 3)));
        assert_eq!(numbers_of("4294967295-4294967295.parquet"), Some((u32::MAX, u32::MAX)));
        for bad in
            ["2-3.parquet", "0000000002-0000000003.parquet.tmp", "9999999999-0000000001.parquet"]
        {
            assert_eq!(numbers_of(bad), None, "{bad}");
        }
    }
}
