//! Runs the firmware in QEMU (`lm3s6965evb`) and drives it: the step
//! handshake on UART0, the TMP105's temperature over QMP, the defmt output
//! decoded by `defmt-print`.
//!
//! Shared by `cargo xtask demo`/`size` and by the firmware tests
//! (`tests/tests/firmware.rs`), through the xtask library: std only.
//!
//! # The handshake
//!
//! QEMU starts paused (`-S`) and connects to two unix sockets this side
//! listens on: QMP and UART0. Before each scripted step the firmware sends
//! `?` on UART0 and waits; this side sets the step's temperature with
//! `qom-set` (and waits for QMP's answer), then sends one byte. Before the
//! idle time that precedes each step it sends `~` the same way: this side
//! sets the environment's temperature there, if one is given for that
//! step ([`RunOptions::environment_milli`]). After the
//! last step the firmware sends `.` and exits through semihosting. Nothing
//! here sleeps to let the firmware catch up: every wait is for a message,
//! bounded by the run's deadline. With `-icount shift=7,sleep=off` the
//! firmware's own time does not depend on the host either (its SysTick is
//! stopped while it waits for the host), but it does depend on the wall time
//! the run starts at: formatting and parsing another date takes a different
//! number of instructions, which are the board's time under `-icount`. Give
//! [`RunOptions::epoch`] to start the board's wall clock at a fixed time (the
//! firmware reads `epoch=` from the semihosting command line): two such runs
//! give the same log, uptimes included, to the millisecond.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The QEMU machine.
pub const MACHINE: &str = "lm3s6965evb";
/// The TMP105 as QEMU attaches it to the board's I2C0 bus.
pub const SENSOR_DEVICE: &str = "tmp105,bus=i2c,address=0x48,id=tmp0";
/// The largest |temperature| QEMU's TMP105 accepts, exclusive, in milli-°C.
pub const TEMPERATURE_LIMIT_MILLI: i32 = 128_000;

/// The board's wall time at boot in the tests and the fleet run:
/// 2026-01-01T00:00:00Z, 01:00:00 in Berlin. Fixed, because the date is
/// input too: formatting and parsing another date takes another number of
/// instructions, which under `-icount` are the board's time (it can move
/// an uptime by a millisecond).
pub const EPOCH: i64 = 1_767_225_600;

/// The tests' temperatures, one per step, in milli-°C: all exact in
/// 1/16 °C; 30 °C and 33.5 °C cross the demo watch's 28 °C.
pub const TEMPERATURES: [i32; 10] =
    [21_500, 30_000, -4_250, 12_063, 0, 18_750, 33_500, -500, 25_000, 19_250];

/// What starts each line of the session the firmware streams as
/// AgentScope JSON (`firmware/src/stream.rs`).
pub const STREAM_PREFIX: &str = "agentscope> ";

/// The session the firmware streamed: its trace lines (`envaware-sim
/// replay` input), one per line, without the prefix.
pub fn session_trace(log: &str) -> String {
    log.lines().filter_map(|l| l.strip_prefix(STREAM_PREFIX)).flat_map(|l| [l, "\n"]).collect()
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `qemu-system-arm`.
    pub qemu: PathBuf,
    /// `defmt-print`.
    pub defmt_print: PathBuf,
    /// The firmware ELF.
    pub elf: PathBuf,
    /// Whether to attach the TMP105.
    pub sensor: bool,
    /// Temperatures in milli-°C, one per step, the last repeating; none
    /// leaves the sensor as it is.
    pub temperatures_milli: Vec<i32>,
    /// The whole run's bound.
    pub timeout: Duration,
    /// Print the decoded log as it comes.
    pub echo: bool,
    /// Start the board's wall clock at this Unix time (seconds) instead of
    /// the host's time: makes runs repeatable.
    pub epoch: Option<i64>,
    /// Reset the MCU (`SCB::sys_reset`) after this step, once: the board
    /// restores its session from its log and runs the rest (docs/reboot.md).
    pub reset_after: Option<usize>,
    /// The environment: `(N, milli-°C)` sets the temperature at the start
    /// of the idle time before step `N` (the board's `~` handshake), where
    /// the firmware's sensor task finds it on its own; none changes nothing.
    pub environment_milli: Vec<(usize, i32)>,
    /// The model server's TCP port on 127.0.0.1: QEMU connects UART1 to it
    /// (the board's second `-serial`) and the firmware is told `model=1`,
    /// so each model call is a real HTTP exchange. `None`: no model (the
    /// firmware's scripted delay only, nothing sent).
    pub model_port: Option<u16>,
    /// With a model: ask for streamed replies (`"stream": true`, read as
    /// server-sent events in HTTP chunks); the firmware is told `stream=1`.
    pub model_stream: bool,
    /// The MQTT broker's TCP port on 127.0.0.1: QEMU connects UART2 to it
    /// (the board's third `-serial`, reconnecting every second while the
    /// broker is away) and the firmware is told `mqtt=1`: its uplink
    /// publishes the session log (issue 37). `None`: no uplink.
    pub broker_port: Option<u16>,
    /// The device's id (`device=ID`: its MQTT client id and topic level;
    /// the firmware's default is `qemu`).
    pub device: Option<String>,
    /// Steps to run (`steps=N`: the script round and round; the
    /// firmware's default is the script's 10).
    pub steps: Option<usize>,
    /// Each line of the streamed session (without [`STREAM_PREFIX`]) is
    /// sent here as soon as it is decoded, while the board runs (`cargo
    /// xtask demo --otlp`: the session exported step by step).
    pub live: Option<std::sync::mpsc::Sender<String>>,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// QEMU's exit code (`None`: killed by a signal).
    pub status: Option<i32>,
    /// The decoded defmt log.
    pub log: String,
    /// QEMU's standard error.
    pub stderr: String,
    /// The temperature set before each step, in milli-°C (empty without a sensor).
    pub set_per_step: Vec<i32>,
    /// The environment's temperatures set, as `(before step, milli-°C)`.
    pub environment_set: Vec<(usize, i32)>,
    /// Handshakes completed (steps started).
    pub steps: usize,
    /// Whether the firmware signalled the end of its script (`.`) before exiting.
    pub finished: bool,
    /// The session log's region as the board dumped it at the end
    /// (`dump-log=1`), if it did: the raw bytes of its "flash".
    pub flash_log: Option<Vec<u8>>,
}

/// The file the firmware dumps its log's region to, in QEMU's working
/// directory (`firmware/src/board.rs`, `LOG_DUMP`).
const LOG_DUMP: &str = "envaware-flash-log.bin";

/// Parses `21.5,30,-4.25` into milli-°C.
pub fn parse_temperatures(text: &str) -> Result<Vec<i32>, String> {
    text.split(',')
        .map(|t| {
            let t = t.trim();
            let value: f64 = t.parse().map_err(|_| format!("not a temperature: {t:?}"))?;
            let milli = (value * 1000.0).round();
            if milli.is_nan() || milli.abs() >= f64::from(TEMPERATURE_LIMIT_MILLI) {
                return Err(format!("{t} °C is out of the TMP105's range (-128 °C, 128 °C)"));
            }
            Ok(milli as i32)
        })
        .collect()
}

/// Parses `7:31,3:-4.5` (`STEP:TEMPERATURE`, the temperature set at the
/// start of the idle time before that step) into `(step, milli-°C)`.
pub fn parse_environment(text: &str) -> Result<Vec<(usize, i32)>, String> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|item| {
            let (step, t) =
                item.split_once(':').ok_or_else(|| format!("not STEP:TEMPERATURE: {item:?}"))?;
            let step = step.trim().parse().map_err(|_| format!("not a step number: {step:?}"))?;
            Ok((step, parse_temperatures(t)?.first().copied().ok_or("no temperature")?))
        })
        .collect()
}

/// The TMP105's 12-bit reading of a temperature QEMU was given in milli-°C,
/// formatted as the firmware formats it (`21.5 °C`): QEMU stores
/// `milli * 256 / 1000` (truncating), the sensor keeps 12 bits (1/16 °C).
pub fn expected_reading(milli: i32) -> String {
    let stored = (i64::from(milli) * 256 / 1000) as i16;
    let sixteenths = (stored as u16 & 0xFFF0) as i16 >> 4;
    let magnitude = sixteenths.unsigned_abs();
    let sign = if sixteenths < 0 { "-" } else { "" };
    let mut fraction = u32::from(magnitude % 16) * 625;
    let mut digits = 4;
    while digits > 1 && fraction % 10 == 0 {
        fraction /= 10;
        digits -= 1;
    }
    format!("{sign}{}.{fraction:0digits$} °C", magnitude / 16)
}

struct Cleanup {
    dir: PathBuf,
    child: Option<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            if child.try_wait().ok().flatten().is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn remaining(deadline: Instant) -> Result<Duration, String> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| "timed out".to_string())
}

/// Accepts QEMU's connection on `listener`, failing if QEMU exits first or
/// the deadline passes.
fn accept(
    listener: &UnixListener,
    child: &mut Child,
    deadline: Instant,
    what: &str,
) -> Result<UnixStream, String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).map_err(|e| e.to_string())?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("QEMU exited ({status}) before connecting to {what}"));
                }
                remaining(deadline)
                    .map_err(|_| format!("QEMU did not connect to {what} in time"))?;
                // Waiting for QEMU to connect, not for anything to happen in the guest.
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("{what}: {e}")),
        }
    }
}

/// A QMP connection, one JSON message per line.
struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    fn new(stream: UnixStream, deadline: Instant) -> Result<Qmp, String> {
        stream.set_read_timeout(Some(remaining(deadline)?)).map_err(|e| e.to_string())?;
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        let mut qmp = Qmp { reader: BufReader::new(stream), writer };
        let greeting = qmp.line()?;
        if !greeting.contains("\"QMP\"") {
            return Err(format!("not a QMP greeting: {greeting}"));
        }
        qmp.execute(r#"{"execute": "qmp_capabilities"}"#)?;
        Ok(qmp)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Err("QMP closed".into()),
            Ok(_) => Ok(line),
            Err(e) => Err(format!("QMP: {e}")),
        }
    }

    /// Sends a command and waits for its answer (events in between are skipped).
    fn execute(&mut self, command: &str) -> Result<(), String> {
        self.writer
            .write_all(command.as_bytes())
            .and_then(|()| self.writer.write_all(b"\n"))
            .map_err(|e| format!("QMP: {e}"))?;
        loop {
            let line = self.line()?;
            if line.contains("\"return\"") {
                return Ok(());
            }
            if line.contains("\"error\"") {
                return Err(format!("QMP {command}: {}", line.trim()));
            }
        }
    }

    fn set_temperature(&mut self, milli: i32) -> Result<(), String> {
        self.execute(&format!(r#"{{"execute": "qom-set", "arguments": {{"path": "tmp0", "property": "temperature", "value": {milli}}}}}"#))
    }
}

static RUNS: AtomicU32 = AtomicU32::new(0);

/// The QEMU command line (without the sockets' paths filled in by [`run`]).
pub fn qemu_args(opts: &RunOptions, qmp: &Path, uart: &Path) -> Vec<String> {
    let (elf, sensor, epoch) = (&opts.elf, opts.sensor, opts.epoch);
    let mut args: Vec<String> = [
        "-machine",
        MACHINE,
        "-display",
        "none",
        "-monitor",
        "none",
        "-nodefaults",
        "-icount",
        "shift=7,sleep=off",
        "-S",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // The program's name, so that QEMU does not fall back to the kernel's
    // path as the semihosting command line; then the optional start time.
    let epoch = epoch.map(|e| format!(",arg=epoch={e}")).unwrap_or_default();
    let reset = opts.reset_after.map(|n| format!(",arg=reset-after={n}")).unwrap_or_default();
    let model = match (opts.model_port, opts.model_stream) {
        (Some(_), true) => ",arg=model=1,arg=stream=1",
        (Some(_), false) => ",arg=model=1",
        (None, _) => "",
    };
    let mut uplink = String::new();
    if opts.broker_port.is_some() {
        uplink.push_str(",arg=mqtt=1");
    }
    if let Some(device) = &opts.device {
        uplink.push_str(&format!(",arg=device={device}"));
    }
    if let Some(steps) = opts.steps {
        uplink.push_str(&format!(",arg=steps={steps}"));
    }
    // The board dumps its log's region at the end (read back by `run`).
    args.extend([
        "-semihosting-config".into(),
        format!(
            "enable=on,target=native,arg=envaware-firmware{epoch}{reset}{model}{uplink},arg=dump-log=1"
        ),
    ]);
    args.extend([
        "-chardev".into(),
        format!("socket,id=uart0,path={}", uart.display()),
        "-serial".into(),
        "chardev:uart0".into(),
    ]);
    // The second `-serial` is UART1 (the board's UARTs take them in
    // order): the model's link, a TCP client of the model server, as an AT
    // Wi-Fi or cellular module's transparent socket (no TLS, no DNS).
    if let Some(port) = opts.model_port {
        args.extend([
            "-chardev".into(),
            format!("socket,id=uart1,host=127.0.0.1,port={port},server=off"),
            "-serial".into(),
            "chardev:uart1".into(),
        ]);
    }
    // The third `-serial` is UART2, the uplink's link to the broker (the
    // second, UART1, goes nowhere without a model). `reconnect=1`: QEMU
    // starts without the broker and connects again, every second, after
    // it went away, as a modem would.
    if let Some(port) = opts.broker_port {
        if opts.model_port.is_none() {
            args.extend(["-serial".into(), "null".into()]);
        }
        args.extend([
            "-chardev".into(),
            format!("socket,id=uart2,host=127.0.0.1,port={port},server=off,reconnect=1"),
            "-serial".into(),
            "chardev:uart2".into(),
        ]);
    }
    args.extend(["-qmp".into(), format!("unix:{}", qmp.display())]);
    if sensor {
        args.extend(["-device".into(), SENSOR_DEVICE.into()]);
    }
    args.extend(["-kernel".into(), elf.display().to_string()]);
    args
}

/// Runs the firmware once, to its end or to the deadline.
pub fn run(opts: &RunOptions) -> Result<RunResult, String> {
    let deadline = Instant::now() + opts.timeout;
    let dir = std::env::temp_dir().join(format!(
        "envaware-qemu-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut cleanup = Cleanup { dir: dir.clone(), child: None };
    let (qmp_path, uart_path) = (dir.join("qmp.sock"), dir.join("uart0.sock"));
    let qmp_listener =
        UnixListener::bind(&qmp_path).map_err(|e| format!("{}: {e}", qmp_path.display()))?;
    let uart_listener =
        UnixListener::bind(&uart_path).map_err(|e| format!("{}: {e}", uart_path.display()))?;

    // QEMU runs in the run's directory, where the board's log dump lands.
    let elf = std::path::absolute(&opts.elf).map_err(|e| format!("{}: {e}", opts.elf.display()))?;
    let mut qemu = Command::new(&opts.qemu)
        .args(qemu_args(&RunOptions { elf, ..opts.clone() }, &qmp_path, &uart_path))
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", opts.qemu.display()))?;
    let qemu_out = qemu.stdout.take().ok_or("no QEMU stdout")?;
    let mut qemu_err = qemu.stderr.take().ok_or("no QEMU stderr")?;
    let stderr_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = qemu_err.read_to_string(&mut s);
        s
    });
    let mut decoder = Command::new(&opts.defmt_print)
        .arg("-e")
        .arg(&opts.elf)
        .args(["--log-format", "{L} {s}"])
        .stdin(Stdio::from(qemu_out))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", opts.defmt_print.display()))?;
    let decoded = decoder.stdout.take().ok_or("no defmt-print stdout")?;
    let echo = opts.echo;
    let live = opts.live.clone();
    let log_thread = std::thread::spawn(move || {
        let mut log = String::new();
        for line in BufReader::new(decoded).lines().map_while(Result::ok) {
            if let (Some(tx), Some(streamed)) = (&live, line.strip_prefix(STREAM_PREFIX)) {
                // A receiver that went away stops nothing here.
                let _ = tx.send(streamed.to_string());
            }
            // The streamed session goes to its own file, not the screen.
            if echo && !line.starts_with(STREAM_PREFIX) {
                println!("{line}");
            }
            log.push_str(&line);
            log.push('\n');
        }
        log
    });
    cleanup.child = Some(qemu);
    let qemu = cleanup.child.as_mut().ok_or("no QEMU")?;

    let mut set_per_step = Vec::new();
    let mut environment_set = Vec::new();
    let mut steps = 0;
    let driven = (|| -> Result<bool, String> {
        let mut qmp = Qmp::new(accept(&qmp_listener, qemu, deadline, "the QMP socket")?, deadline)?;
        let mut uart = accept(&uart_listener, qemu, deadline, "the UART0 socket")?;
        qmp.execute(r#"{"execute": "cont"}"#)?;
        loop {
            uart.set_read_timeout(Some(remaining(deadline)?)).map_err(|e| e.to_string())?;
            let mut byte = [0u8; 1];
            match uart.read(&mut byte) {
                // QEMU exited (a panic, a fault) before the end of the script.
                Ok(0) => return Ok(false),
                Ok(_) if byte[0] == b'?' => {
                    if opts.sensor {
                        if let Some(&last) = opts.temperatures_milli.last() {
                            let milli = opts.temperatures_milli.get(steps).copied().unwrap_or(last);
                            qmp.set_temperature(milli)?;
                            set_per_step.push(milli);
                        }
                    }
                    uart.write_all(b"g").map_err(|e| format!("UART0: {e}"))?;
                    steps += 1;
                }
                // The idle time before step `steps` begins: the environment.
                Ok(_) if byte[0] == b'~' => {
                    if let Some(&(_, milli)) = opts
                        .environment_milli
                        .iter()
                        .find(|(before, _)| *before == steps)
                        .filter(|_| opts.sensor)
                    {
                        qmp.set_temperature(milli)?;
                        environment_set.push((steps, milli));
                    }
                    uart.write_all(b"g").map_err(|e| format!("UART0: {e}"))?;
                }
                Ok(_) if byte[0] == b'.' => return Ok(true),
                Ok(_) => {} // not part of the handshake
                // The read timeout is the run's deadline.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(format!(
                        "timed out after {} s waiting for the firmware on UART0 (at step {steps})",
                        opts.timeout.as_secs()
                    ))
                }
                Err(e) => return Err(format!("waiting for the firmware on UART0: {e}")),
            }
        }
    })();

    // The firmware exits through semihosting; a failed handshake leaves it
    // waiting, so stop it then.
    let status = loop {
        if let Ok(Some(status)) = qemu.try_wait() {
            break Some(status);
        }
        if driven.is_err() || remaining(deadline).is_err() {
            let _ = qemu.kill();
            let _ = qemu.wait();
            break None;
        }
        // Waiting for QEMU to exit, bounded by the deadline.
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = decoder.wait();
    let log = log_thread.join().unwrap_or_default();
    let stderr = stderr_thread.join().unwrap_or_default();
    let finished = match driven {
        Ok(finished) => finished,
        Err(e) => {
            return Err(format!("{e}\n--- decoded log ---\n{log}--- QEMU stderr ---\n{stderr}"))
        }
    };
    let status = status.ok_or_else(|| {
        format!(
            "QEMU did not exit in time\n--- decoded log ---\n{log}--- QEMU stderr ---\n{stderr}"
        )
    })?;
    let flash_log = std::fs::read(dir.join(LOG_DUMP)).ok();
    Ok(RunResult {
        status: status.code(),
        log,
        stderr,
        set_per_step,
        environment_set,
        steps,
        finished,
        flash_log,
    })
}

/// The allocated sections of a 32-bit little-endian ELF, as `(name, size)`.
pub fn elf_sections(path: &Path) -> Result<Vec<(String, u64)>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = || format!("{}: not a 32-bit little-endian ELF", path.display());
    if bytes.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 1, 1][..]) {
        return Err(bad());
    }
    let u16_at =
        |at: usize| bytes.get(at..at + 2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])));
    let u32_at = |at: usize| {
        bytes.get(at..at + 4).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    };
    let shoff = u32_at(0x20).ok_or_else(bad)? as usize;
    let shentsize = u16_at(0x2E).ok_or_else(bad)? as usize;
    let shnum = u16_at(0x30).ok_or_else(bad)? as usize;
    let shstrndx = u16_at(0x32).ok_or_else(bad)? as usize;
    let header = |i: usize| shoff + i * shentsize;
    let names_at = u32_at(header(shstrndx) + 0x10).ok_or_else(bad)? as usize;
    let mut sections = Vec::new();
    for i in 0..shnum {
        let h = header(i);
        let flags = u32_at(h + 0x08).ok_or_else(bad)?;
        const SHF_ALLOC: u64 = 0x2;
        if flags & SHF_ALLOC == 0 {
            continue;
        }
        let name_start = names_at + u32_at(h).ok_or_else(bad)? as usize;
        let name_len =
            bytes.get(name_start..).and_then(|b| b.iter().position(|&c| c == 0)).ok_or_else(bad)?;
        let name = String::from_utf8_lossy(&bytes[name_start..name_start + name_len]).into_owned();
        sections.push((name, u32_at(h + 0x14).ok_or_else(bad)?));
    }
    Ok(sections)
}

/// The stack high-water mark the firmware prints at the end of a run.
pub fn stack_high_water(log: &str) -> Option<u64> {
    log.lines().find_map(|l| {
        l.split("stack high-water mark: ").nth(1)?.strip_suffix(" bytes")?.trim().parse().ok()
    })
}
