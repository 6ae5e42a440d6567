//! A device's session log (`envaware::journal`'s binary items, from a
//! flash image or a host's log file) as the replay's trace lines: each item
//! read by the core's own decoder ([`envaware::journal::decode`]) and
//! written as the trace events it stands for (docs/sim.md, "Device logs").
//!
//! A step item becomes the events a step needs before it (`set_clock` or
//! `advance`, `tasks`, `config` with the context size, `read` with the
//! watched values) and the `step` itself, which carries what the device
//! decided (`decided`) and the live values its hint told (`told`): the
//! replay decides again, compares, and renders the hint from them.

use envaware::journal::{
    self, ClockChange, Decided, Entry, Event, ItemReader, LogError, StepRecord,
};
use envaware::{Block, ConfigBuf, LiveFields, Role, Timestamp, WatchFire, WatchList};
use serde_json::{json, Map, Value};

/// Why a log's items cannot be read as a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceLogError {
    /// An item the journal's reader or decoder refuses: its position, and why.
    Item(LogError),
    /// The configuration (from `--config` or the log's first header) does
    /// not load, or is not the one the log's first header was written
    /// under: what is wrong.
    Config(String),
    /// No configuration: the log's headers carry none, and none was given.
    NoConfig,
}

impl std::fmt::Display for DeviceLogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceLogError::Item(LogError { index, kind }) => {
                write!(f, "the log's item {index}: {kind}")
            }
            DeviceLogError::Config(e) => f.write_str(e),
            DeviceLogError::NoConfig => f.write_str(
                "the log's headers hold no configuration (a log written before they did): \
                 give the device's configuration with --config",
            ),
        }
    }
}

impl std::error::Error for DeviceLogError {}

/// A device log's bytes as the replay's trace lines: a raw image of its
/// flash region when `flash`, else a host's log file when the bytes start
/// with its magic (`envaware_host::MAGIC`); `None` for anything else (a
/// trace or a dump, read as text). With the lines, the bytes of a log
/// file's torn tail (what a power cut, or an append under way, leaves),
/// which are left out.
///
/// # Errors
///
/// An image or file that cannot be read as a log, an item the journal
/// refuses, a configuration missing or not the log's: the message.
pub fn lines_of(
    bytes: &[u8],
    flash: bool,
    config: Option<&str>,
) -> Result<Option<(String, usize)>, String> {
    let (items, torn) = if flash {
        (crate::flash::items(bytes).map_err(|e| e.to_string())?, 0)
    } else if bytes.starts_with(&envaware_host::MAGIC) {
        file_items(bytes)?
    } else {
        return Ok(None);
    };
    let lines = trace_lines(&items, config).map_err(|e| e.to_string())?;
    Ok(Some((lines, torn)))
}

/// The items of a host's log file (`envaware_host::FileLog`), as the file
/// holds them, and the bytes of its torn tail; damage in the middle is
/// refused.
fn file_items(bytes: &[u8]) -> Result<(Vec<Vec<u8>>, usize), String> {
    let records = envaware_host::read_records(bytes).map_err(|e| format!("the log file: {e}"))?;
    let torn = match records.tail {
        envaware_host::Tail::Clean => 0,
        envaware_host::Tail::Torn => bytes.len() - records.end,
        envaware_host::Tail::Damaged => {
            return Err(format!(
                "the log file: a damaged record at byte {}, with a valid record after it",
                records.end
            ))
        }
    };
    Ok((records.items.iter().map(|range| bytes[range.clone()].to_vec()).collect(), torn))
}

/// What a torn tail of `torn` bytes is, said to a reader of the log.
pub fn torn_note(torn: usize) -> Option<String> {
    (torn > 0).then(|| {
        format!("the log file's last {torn} bytes are a torn tail (a power cut's): its whole items are read")
    })
}

/// A session configuration file's buffer: as large as the replay's.
type Buf = ConfigBuf<65536, 64, 64>;

/// The log's `items`, oldest first, as trace lines (one line or more per
/// item, each with the item's number under `"#"`). `config` is the
/// device's session configuration (`--config`), else the first header's
/// settings are: a told value names its watched field by the watch's index.
///
/// # Errors
///
/// An item the journal's reader refuses (a gap, a damaged item, a text
/// item of format versions 1 and 2), or no configuration to read it with.
pub fn trace_lines(items: &[Vec<u8>], config: Option<&str>) -> Result<String, DeviceLogError> {
    let mut reader = ItemReader::new();
    for item in items {
        reader.read(item).map_err(DeviceLogError::Item)?;
    }
    let first = reader.first_number().unwrap_or(0);
    let settings = match config {
        Some(text) => Some(text.to_string()),
        None => items.iter().find_map(|item| {
            let mut blocks = [Block::Other; journal::MAX_EVENT_BLOCKS];
            match journal::decode(item, &WatchList::EMPTY, &mut blocks) {
                Ok((_, Entry::Header(h))) => h.settings.map(str::to_string),
                _ => None,
            }
        }),
    };
    let settings = settings.ok_or(DeviceLogError::NoConfig)?;
    let mut buf = Box::new(Buf::with_capacity());
    let loaded = buf
        .load_session(&settings)
        .map_err(|e| DeviceLogError::Config(format!("the device's configuration: {e}")))?;
    // The first header's hash first: a configuration that is not the
    // device's would read its steps' watch indices wrong.
    let first_header = items.iter().find_map(|item| {
        let mut blocks = [Block::Other; journal::MAX_EVENT_BLOCKS];
        match journal::decode(item, &WatchList::EMPTY, &mut blocks) {
            Ok((_, Entry::Header(h))) => Some((h.header, h.agent.to_string())),
            _ => None,
        }
    });
    if let Some((header, agent)) = first_header {
        let source = match config {
            Some(_) => "the configuration given with --config",
            None => "the configuration in the log's settings",
        };
        check_header(&loaded.config, &header, &agent, source)?;
    }
    let watches = loaded.config.injection.watch;
    let names: Vec<&str> = watches.iter().map(|(name, _)| name).collect();
    let mut lines = String::new();
    for (index, item) in items.iter().enumerate() {
        let number = first.wrapping_add(index as u32);
        item_lines(item, number, &watches, &names, &mut lines)
            .map_err(|kind| DeviceLogError::Item(LogError { index: index as u32, kind }))?;
    }
    Ok(lines)
}

/// The log's first header must have been written under `config` (the
/// core's hash of it, the agent and the capacities): a configuration that
/// is not the device's would read its steps' watch indices wrong. `source`
/// names where the configuration came from.
fn check_header(
    config: &envaware::Config<'_>,
    header: &journal::Header,
    agent: &str,
    source: &str,
) -> Result<(), DeviceLogError> {
    let ours = journal::Header::for_session(config, agent, header.capacity);
    if ours.config == header.config {
        return Ok(());
    }
    let [messages, blocks, text] = header.capacity;
    Err(DeviceLogError::Config(format!(
        "log.config: the log was written under the configuration that hashes to \
         {:016x}, but {source} hashes to {:016x} (agent {agent:?}, a context of \
         {messages} messages, {blocks} blocks, {text} text bytes)",
        header.config, ours.config
    )))
}

/// Appends item `number`'s trace lines to `lines`.
fn item_lines(
    item: &[u8],
    number: u32,
    watches: &WatchList<'_>,
    names: &[&str],
    lines: &mut String,
) -> Result<(), journal::ItemError> {
    let mut blocks = [Block::Other; journal::MAX_EVENT_BLOCKS];
    let (_, entry) = journal::decode(item, watches, &mut blocks)?;
    for (key, value) in events(&entry, names) {
        let mut line = Map::new();
        line.insert("#".into(), number.into());
        line.insert(key.into(), value);
        lines.push_str(&Value::Object(line).to_string());
        lines.push('\n');
    }
    Ok(())
}

/// Most items [`ItemLines`] holds while it waits for a header that carries
/// the configuration.
pub const MAX_HELD: usize = 4096;

/// A device's log read item by item, as its items arrive (the fleet
/// consumer's): each item's trace lines, the lines [`trace_lines`] writes
/// for the whole log, configured by the log's first header that carries
/// its settings. Items before that header (a compacted log's live items,
/// or a header without settings) are held, at most [`MAX_HELD`], and their
/// lines come with the header's.
#[derive(Debug, Default)]
pub struct ItemLines {
    reader: ItemReader,
    /// The first header read: its hash is checked against the settings.
    first_header: Option<(journal::Header, String)>,
    /// Items read before the configuration was known, oldest first.
    held: Vec<Vec<u8>>,
    /// The log's configuration, once a header carried it.
    config: Option<&'static Buf>,
}

impl ItemLines {
    /// A reader before the log's first item.
    pub fn new() -> Self {
        Self::default()
    }

    /// Items held, waiting for a header with the configuration.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Reads the log's next item: the trace lines of the items it makes
    /// readable (none while they are held, this one and every held one
    /// once the configuration is known).
    ///
    /// # Errors
    ///
    /// An item the journal's reader or decoder refuses (its `index` counts
    /// the items this reader read, from 0), settings that do not load or
    /// are not those the first header was written under, or more than
    /// [`MAX_HELD`] items with no configuration. The reader is then in no
    /// state to go on.
    pub fn push(&mut self, item: &[u8]) -> Result<String, DeviceLogError> {
        let index = self.reader.items();
        let item_error = |kind| DeviceLogError::Item(LogError { index, kind });
        let head = self.reader.read(item).map_err(DeviceLogError::Item)?;
        let Some(buf) = self.config else {
            if head.kind == journal::ItemKind::Header {
                self.configure(item).map_err(|e| match e {
                    ConfigureError::Item(kind) => item_error(kind),
                    ConfigureError::Log(e) => e,
                })?;
            }
            if self.config.is_none() && self.held.len() >= MAX_HELD {
                return Err(DeviceLogError::Config(format!(
                    "{MAX_HELD} items and no header with the configuration (settings)"
                )));
            }
            self.held.push(item.to_vec());
            return match self.config {
                Some(_) => self.release(),
                None => Ok(String::new()),
            };
        };
        let number = head.number.unwrap_or(index);
        let (watches, names) = watch_names(buf);
        let mut lines = String::new();
        item_lines(item, number, &watches, &names, &mut lines).map_err(item_error)?;
        Ok(lines)
    }

    /// Reads a header before the configuration is known: the first one's
    /// hash is kept, and one with settings configures the reader.
    fn configure(&mut self, item: &[u8]) -> Result<(), ConfigureError> {
        let mut blocks = [Block::Other; journal::MAX_EVENT_BLOCKS];
        let (_, entry) =
            journal::decode(item, &WatchList::EMPTY, &mut blocks).map_err(ConfigureError::Item)?;
        let Entry::Header(h) = entry else { return Ok(()) };
        let (header, agent) =
            self.first_header.get_or_insert_with(|| (h.header, h.agent.to_string())).clone();
        let Some(settings) = h.settings else { return Ok(()) };
        let buf = crate::intern::config(&format!("session {settings}"), |buf| {
            buf.load_session(settings).map(drop).map_err(|e| e.to_string())
        })
        .map_err(|e| {
            ConfigureError::Log(DeviceLogError::Config(format!("the device's configuration: {e}")))
        })?;
        check_header(&buf.config(), &header, &agent, "the configuration in the log's settings")
            .map_err(ConfigureError::Log)?;
        self.config = Some(buf);
        Ok(())
    }

    /// The lines of the held items, now that the configuration is known.
    fn release(&mut self) -> Result<String, DeviceLogError> {
        let Some(buf) = self.config else { return Ok(String::new()) };
        let (watches, names) = watch_names(buf);
        let first = self.reader.first_number().unwrap_or(0);
        let held = std::mem::take(&mut self.held);
        let before = self.reader.items() - held.len() as u32;
        let mut lines = String::new();
        for (i, item) in held.iter().enumerate() {
            let index = before + i as u32;
            item_lines(item, first.wrapping_add(index), &watches, &names, &mut lines)
                .map_err(|kind| DeviceLogError::Item(LogError { index, kind }))?;
        }
        Ok(lines)
    }
}

/// Why a header could not configure an [`ItemLines`].
enum ConfigureError {
    Item(journal::ItemError),
    Log(DeviceLogError),
}

/// A configuration's watches, and their names in order.
fn watch_names(buf: &'static Buf) -> (WatchList<'static>, Vec<&'static str>) {
    let watches = buf.config().injection.watch;
    let names = watches.iter().map(|(name, _)| name).collect();
    (watches, names)
}

/// The trace events an item stands for.
fn events(entry: &Entry<'_>, watches: &[&str]) -> Vec<(&'static str, Value)> {
    match entry {
        Entry::Header(h) => {
            let mut header = json!({
                "version": h.header.version,
                "config": format!("{:016x}", h.header.config),
                "capacity": h.header.capacity,
                "live": h.live,
                "agent": h.agent,
            });
            if h.steps > 0 {
                header["steps"] = h.steps.into();
            }
            if let Some(settings) = h.settings.and_then(|s| serde_json::from_str::<Value>(s).ok()) {
                header["settings"] = settings;
            }
            vec![("log", header)]
        }
        Entry::Event(event) => vec![event_line(event)],
        Entry::Step(step) => step_lines(step, watches),
        // `Entry` is non-exhaustive: a kind this build does not know.
        #[allow(unreachable_patterns)]
        _ => Vec::new(),
    }
}

fn event_line(event: &Event<'_>) -> (&'static str, Value) {
    match *event {
        Event::User { name, text } => ("user", json!({"name": name, "content": text})),
        Event::Message { role, name, blocks } => {
            ("message", json!({"name": name, "role": role_name(role), "content": content(blocks)}))
        }
        Event::Assistant(blocks) => ("assistant", content(blocks)),
        Event::ToolCall { id, name, input } => {
            ("tool_call", json!({"id": id, "name": name, "input": input}))
        }
        Event::ToolResult { id, name, state } => {
            ("tool_result", json!({"id": id, "name": name, "state": state.name()}))
        }
        Event::Reply => ("reply", Value::Null),
        Event::Compress { keep } => ("compress", keep.into()),
        // `Event` is non-exhaustive: an event this build does not know.
        #[allow(unreachable_patterns)]
        _ => ("#", Value::Null),
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
    }
}

/// Blocks as AgentScope's content list (a block the device keeps no text
/// of is an empty text, as its request writer would not send it).
fn content(blocks: &[Block<'_>]) -> Value {
    let block = |(index, block): (usize, &Block<'_>)| match *block {
        Block::Hint { source, text, created_at } => {
            let mut hint = json!({
                "type": "hint",
                "hint": text.parts().concat(),
                "id": format!("m.{index}"),
                "source": source,
            });
            if let Some(at) = created_at {
                hint["created_at"] = at.to_string().into();
                hint["finished_at"] = at.to_string().into();
            }
            hint
        }
        Block::ToolCall { id, name, input } => {
            json!({"type": "tool_call", "id": id, "name": name, "input": input})
        }
        Block::ToolResult { id, name, state, output } => json!({
            "type": "tool_result", "id": id, "name": name, "state": state.name(), "output": output
        }),
        Block::Text(text) => json!({"type": "text", "text": text, "id": format!("m.{index}")}),
        Block::Other => json!({"type": "text", "text": "", "id": format!("m.{index}")}),
    };
    Value::Array(blocks.iter().enumerate().map(block).collect())
}

/// The events a step item stands for: its inputs, then the step.
fn step_lines(step: &StepRecord<'_>, watches: &[&str]) -> Vec<(&'static str, Value)> {
    let mut lines = Vec::new();
    match step.clock {
        ClockChange::Same => {}
        ClockChange::Advance(us) if us % 1_000_000 == 0 => {
            lines.push(("advance", (us / 1_000_000).into()))
        }
        ClockChange::Advance(us) => lines.push(("advance", format!("{us}us").into())),
        ClockChange::Set(at) => lines.push(("set_clock", instant(at).into())),
        ClockChange::Unknown => lines.push(("set_clock", Value::Null)),
    }
    if let Some(tasks) = step.tasks {
        let states = std::iter::repeat_n("pending", tasks.pending as usize)
            .chain(std::iter::repeat_n("in_progress", tasks.in_progress as usize));
        lines.push(("tasks", states.collect::<Vec<_>>().into()));
    }
    if let Some(size) = step.context_size {
        lines.push(("config", json!({"context_size": size})));
    }
    if let Some(readings) = step.readings {
        let read: Map<String, Value> = watches
            .iter()
            .enumerate()
            .map(|(i, name)| (name.to_string(), readings.get(i).map_or(Value::Null, Value::from)))
            .collect();
        lines.push(("read", Value::Object(read)));
    }
    let mut value = Map::new();
    if let Some(cur_iter) = step.cur_iter {
        value.insert("cur_iter".into(), cur_iter.into());
    }
    if let Some(tokens) = step.tokens {
        value.insert("tokens".into(), tokens.into());
    }
    value.insert("decided".into(), step.decided.map_or(Value::Null, |d| decided(&d, watches)));
    if step.decided.is_some_and(|d| d.fires()) {
        let told = &step.told;
        let fields = (0..told.len()).filter_map(|i| told.field(i)).map(|(k, v)| json!([k, v]));
        value.insert("told".into(), Value::Array(fields.collect()));
    }
    lines.push(("step", Value::Object(value)));
    lines
}

/// What a step decided, as its trace line says it.
pub fn decided(d: &Decided, watches: &[&str]) -> Value {
    let mut out = Map::new();
    if d.time {
        out.insert("time".into(), true.into());
    }
    if d.tasks {
        out.insert("tasks".into(), true.into());
    }
    if let Some((trigger, suggest)) = d.context {
        out.insert(
            "context_length".into(),
            json!({"trigger_tokens": trigger, "suggest_compression": suggest}),
        );
    }
    if let Some(e) = d.tool_error {
        out.insert("tool_error".into(), json!({"count": e.count, "result": e.result}));
    }
    let why: Map<String, Value> = watches
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let reason = match d.watch.get(i) {
                WatchFire::Value => "value",
                WatchFire::Heartbeat => "heartbeat",
                WatchFire::Throttled => "throttled",
                _ => return None,
            };
            Some((name.to_string(), reason.into()))
        })
        .collect();
    if !why.is_empty() {
        out.insert("watch".into(), Value::Object(why));
    }
    Value::Object(out)
}

/// What a step's trace line says it decided ([`decided`]'s JSON, or
/// `null`), read back with the configuration's watch names.
///
/// # Errors
///
/// A value [`decided`] does not write, naming the key.
pub fn parse_decided(value: &Value, watches: &[&str]) -> Result<Option<Decided>, String> {
    let Value::Object(map) = value else {
        return match value {
            Value::Null => Ok(None),
            other => Err(format!("step.decided: expected an object or null, got {other}")),
        };
    };
    let mut d = Decided::default();
    for (key, v) in map {
        let bad = || format!("step.decided.{key}: not what a device log says, got {v}");
        match key.as_str() {
            "time" => d.time = v.as_bool().ok_or_else(bad)?,
            "tasks" => d.tasks = v.as_bool().ok_or_else(bad)?,
            "context_length" => {
                let trigger = v.get("trigger_tokens").and_then(Value::as_i64).ok_or_else(bad)?;
                let suggest =
                    v.get("suggest_compression").and_then(Value::as_bool).ok_or_else(bad)?;
                d.context = Some((trigger, suggest));
            }
            "tool_error" => {
                let count = v.get("count").and_then(Value::as_u64).ok_or_else(bad)?;
                let result = v.get("result").and_then(Value::as_u64).ok_or_else(bad)?;
                let result = usize::try_from(result).map_err(|_| bad())?;
                d.tool_error = Some(envaware::ToolError { count, result });
            }
            "watch" => {
                for (name, why) in v.as_object().ok_or_else(bad)? {
                    let i = watches.iter().position(|w| w == name).ok_or_else(|| {
                        format!("step.decided.watch.{name}: no such watch in the configuration")
                    })?;
                    let why = match why.as_str() {
                        Some("value") => WatchFire::Value,
                        Some("heartbeat") => WatchFire::Heartbeat,
                        Some("throttled") => WatchFire::Throttled,
                        _ => return Err(format!("step.decided.watch.{name}: expected value, heartbeat or throttled, got {why}")),
                    };
                    d.watch.set(i, why);
                }
            }
            _ => return Err(format!("step.decided.{key}: unknown key")),
        }
    }
    Ok(Some(d))
}

/// An instant as RFC 3339 with `Z` (what `set_clock` reads).
fn instant(at: Timestamp) -> String {
    envaware::CreatedAt::Instant(at).to_string()
}
