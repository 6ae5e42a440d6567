//! Everything specific to the board: the TI Stellaris LM3S6965 evaluation
//! board (Cortex-M3) as QEMU's `lm3s6965evb` machine emulates it.
//!
//! - the `embassy-time` driver: SysTick's 1 kHz interrupt counts the
//!   board's milliseconds and wakes the timers that are due (the counter
//!   stops while the board waits for the host);
//! - [`I2c0`]: the I2C0 master, implementing [`embedded_hal_async::i2c::I2c`];
//! - [`sensor_task`]: samples the TMP105 on its own period, answers the
//!   agent's requests ([`SensorLink`]) and wakes the agent when a reading
//!   would fire its watch;
//! - [`Clock`]: wall time at boot (an `epoch=` argument from the host, else
//!   semihosting `SYS_TIME`) plus the millisecond counter ([`uptime_ms`]);
//! - [`Uart0Pacer`]: the step and environment handshakes with the host over
//!   UART0, the idle time between steps and the model's (simulated) reply;
//! - [`exit`], [`stack_high_water`]: semihosting exit and the painted-stack
//!   measurement.
//!
//! To move the agent to another board, replace this module: provide an
//! [`agent::Sensor`](envaware_firmware::agent::Sensor) (a sensor task over
//! the board's async I2C), a [`envaware::Clock`], and an
//! [`agent::Pacer`](envaware_firmware::agent::Pacer), then await
//! [`agent::run`](envaware_firmware::agent::run) with them (see the README).

use core::cell::{Cell, RefCell};
use core::fmt::Write as _;
use core::mem::MaybeUninit;
use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{AtomicU8, Ordering};
use core::task::Waker;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_futures::select::{select, Either};
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::signal::Signal;
use embassy_time::{Duration, Instant, Timer};
use embassy_time_driver::Driver;
use embassy_time_queue_utils::Queue;
use embedded_hal::i2c::{ErrorKind, ErrorType, NoAcknowledgeSource, Operation, SevenBitAddress};
use envaware::{Decimal, EpochTickClock, Timestamp, MAX_WATCHES};
use envaware_firmware::agent::{self, Woken};
use envaware_firmware::clock;
use envaware_firmware::tmp105::{self, Temperature, Tmp105};

/// The core clock at reset as QEMU models the board: 12.5 MHz. SysTick
/// counts it (the external reference clock is not modelled).
const CORE_HZ: u32 = 12_500_000;

// ---------------------------------------------------------------- the time driver

/// Milliseconds since boot, counted by SysTick's interrupt (the only
/// writer, besides the restore after a reset).
static TICKS: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));

/// The `embassy-time` driver: 1 kHz ticks from SysTick, one timer queue.
/// SysTick is stopped while the board waits for the host ([`Uart0Pacer`]),
/// so the board's time, and every timer, waits too.
struct SysTickDriver {
    queue: Mutex<RefCell<Queue>>,
    /// The tick at which the queue is next due (`u64::MAX`: none).
    alarm: Mutex<Cell<u64>>,
}

impl Driver for SysTickDriver {
    fn now(&self) -> u64 {
        critical_section::with(|cs| TICKS.borrow(cs).get())
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            let mut queue = self.queue.borrow(cs).borrow_mut();
            if queue.schedule_wake(at, waker) {
                // Wakes what is due already; the tick handler the rest.
                self.alarm.borrow(cs).set(queue.next_expiration(TICKS.borrow(cs).get()));
            }
        })
    }
}

embassy_time_driver::time_driver_impl!(static DRIVER: SysTickDriver = SysTickDriver {
    queue: Mutex::new(RefCell::new(Queue::new())),
    alarm: Mutex::new(Cell::new(u64::MAX)),
});

#[exception]
fn SysTick() {
    critical_section::with(|cs| {
        let ticks = TICKS.borrow(cs);
        let now = ticks.get() + 1;
        ticks.set(now);
        let alarm = DRIVER.alarm.borrow(cs);
        if now >= alarm.get() {
            alarm.set(DRIVER.queue.borrow(cs).borrow_mut().next_expiration(now));
        }
    });
}

/// Milliseconds of board time since boot (paused while waiting for the
/// host, see [`Uart0Pacer`]), wrapping as a `u32`.
pub fn uptime_ms() -> u32 {
    critical_section::with(|cs| TICKS.borrow(cs).get()) as u32
}

fn ticks() -> u64 {
    u64::from(uptime_ms())
}

/// The board's wall clock: the host's time read once at boot through
/// semihosting, then advanced by the SysTick counter across its wrap
/// ([`envaware_firmware::clock`]).
pub type Clock = EpochTickClock<fn() -> u64>;

/// Reads the wall time at boot and returns a clock running from it: the
/// `epoch=SECONDS` argument on the semihosting command line when the host
/// gives one (QEMU's `-semihosting-config …,arg=epoch=…`, see
/// `xtask/src/qemu.rs`), else the host's time over semihosting (`SYS_TIME`,
/// whole Unix seconds). Unset when the host does not answer.
///
/// A fixed start time is what makes two runs identical: rendering and
/// parsing a different date takes a different number of instructions, and
/// under `-icount` instructions are the board's time, so a run started at
/// another second can end a step a few microseconds earlier or later and
/// move a later uptime by a millisecond.
pub fn wall_clock() -> Clock {
    let mut clock: Clock = clock::wall_clock(ticks as fn() -> u64);
    // The epoch is the time at the counter's 0 (the boot), not at this
    // read: the wall time is then always epoch + counter, also after a
    // reset puts the counter back, however long the boot took.
    let since_boot = |secs: i64| Timestamp::from_unix_micros(secs.saturating_mul(1_000_000).saturating_add(i64::from(uptime_ms()) * 1000));
    if let Some(secs) = epoch_argument() {
        defmt::info!("wall clock: epoch {=i64} from the command line", secs);
        clock.set(since_boot(secs));
        return clock;
    }
    match semihosting::sys::arm_compat::sys_time() {
        Ok(secs) => clock.set(since_boot(secs as i64)),
        Err(_) => defmt::warn!("SYS_TIME failed: the wall time stays unknown"),
    }
    clock
}

/// The `epoch=SECONDS` argument of the semihosting command line, if any.
fn epoch_argument() -> Option<i64> {
    argument(b"epoch=")
}

/// The number after `key` (`epoch=`, `reset-after=`) on the semihosting
/// command line, if any (arguments are separated by spaces).
fn argument<T: core::str::FromStr>(key: &[u8]) -> Option<T> {
    let mut buf = [MaybeUninit::<u8>::uninit(); 128];
    // Fails when there is no command line or it does not fit: no value then.
    let line = semihosting::sys::arm_compat::sys_get_cmdline_uninit(&mut buf).ok()?;
    line.split(|&b| b == b' ').find_map(|arg| core::str::from_utf8(arg.strip_prefix(key)?).ok()?.parse().ok())
}

// ---------------------------------------------------------------- the retained region

/// Bytes of the session log's "flash": 8 pages of 1 KiB. The ten steps
/// write about 10.5 KB of items, so the log compacts (the host tests find
/// 7 pages the least the session runs in: the items since the oldest
/// message the context holds, and two pages kept free).
const LOG_BYTES: usize = 8 * 1024;
const RETAINED_MAGIC: u32 = 0x454E_5641;

/// RAM that survives `SCB::sys_reset` under QEMU (checked: docs/reboot.md):
/// in cortex-m-rt's `.uninit`, a NOLOAD section it neither zeroes nor
/// copies (and below `_stack_end`, so `paint-stack` leaves it alone). It
/// models the board's flash for the session log, and keeps what the board
/// needs across the reset it makes for `reset-after=N`.
#[repr(C)]
struct Retained {
    /// [`RETAINED_MAGIC`] once set up; anything else is a cold boot.
    magic: u32,
    /// 1 once the board reset itself (`reset-after=N`): not again.
    reset_done: u32,
    /// The millisecond counter at the reset, put back when the session resumes.
    millis: u32,
    log: [u8; LOG_BYTES],
}

#[link_section = ".uninit.RETAINED"]
static mut RETAINED: MaybeUninit<Retained> = MaybeUninit::uninit();

fn retained() -> *mut Retained {
    // Only a raw pointer is made here; the fields are read and written
    // through it with volatile accesses, one core, no interrupt touches them.
    core::ptr::addr_of_mut!(RETAINED).cast()
}

/// The log's region: erased (all `0xFF`) at a cold boot, kept as it is
/// after a reset.
fn log_region() -> &'static mut [u8] {
    let r = retained();
    unsafe {
        if read_volatile(core::ptr::addr_of!((*r).magic)) != RETAINED_MAGIC {
            core::ptr::addr_of_mut!((*r).log).write_bytes(0xFF, 1);
            write_volatile(core::ptr::addr_of_mut!((*r).reset_done), 0);
            write_volatile(core::ptr::addr_of_mut!((*r).magic), RETAINED_MAGIC);
        }
        // Board::take runs once: this is the only reference to the log.
        &mut *core::ptr::addr_of_mut!((*r).log)
    }
}

fn systick_start(syst: &mut SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(CORE_HZ / 1000 - 1);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

// ---------------------------------------------------------------- I2C0

const I2C0: usize = 0x4002_0000;
const MSA: usize = 0x00;
const MCS: usize = 0x04;
const MDR: usize = 0x08;
const MTPR: usize = 0x0C;
const MCR: usize = 0x20;

const MCS_RUN: u32 = 0x01;
const MCS_START: u32 = 0x02;
const MCS_STOP: u32 = 0x04;
const MCS_ACK: u32 = 0x08;
const MCS_BUSY: u32 = 0x01;
const MCS_ERROR: u32 = 0x02;
const MCS_ADRACK: u32 = 0x04;
const MCS_DATACK: u32 = 0x08;
const MCS_ARBLST: u32 = 0x10;
const MCR_MFE: u32 = 0x10;

/// Polls of the BUSY bit before a transfer counts as hung.
const BUSY_POLLS: u32 = 100_000;

/// An I2C0 bus error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum I2cError {
    /// Another master won the bus; QEMU reports a missing device this way.
    ArbitrationLoss,
    /// The address was not acknowledged.
    AddressNack,
    /// A data byte was not acknowledged.
    DataNack,
    /// The controller stayed busy.
    Timeout,
}

impl embedded_hal::i2c::Error for I2cError {
    fn kind(&self) -> ErrorKind {
        match self {
            I2cError::ArbitrationLoss => ErrorKind::ArbitrationLoss,
            I2cError::AddressNack => ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address),
            I2cError::DataNack => ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data),
            I2cError::Timeout => ErrorKind::Other,
        }
    }
}

/// The Stellaris I2C0 controller in master mode, at 100 kHz, async (the
/// sensor task awaits it).
///
/// Each [`Operation`] of a transaction is its own START…STOP transfer:
/// QEMU's model ignores a repeated START. Empty operations are skipped.
#[derive(Debug)]
pub struct I2c0 {
    _private: (),
}

impl I2c0 {
    fn new() -> Self {
        // SAFETY (all register accesses below): I2C0's registers, owned by
        // the one `I2c0`, created once in `Board::take`.
        unsafe {
            // Master function enable: without it QEMU ignores every command.
            write_volatile((I2C0 + MCR) as *mut u32, MCR_MFE);
            // SCL period for 100 kHz from 12.5 MHz: TPR = 12.5M / (20 * 100k) - 1.
            write_volatile((I2C0 + MTPR) as *mut u32, 5);
        }
        I2c0 { _private: () }
    }

    fn reg(offset: usize) -> *mut u32 {
        (I2C0 + offset) as *mut u32
    }

    /// Issues one command and awaits its end, yielding to the other tasks
    /// while the controller is busy (QEMU's model finishes at once).
    async fn command(&mut self, cmd: u32) -> Result<(), I2cError> {
        unsafe { write_volatile(Self::reg(MCS), cmd) };
        let mut polls = 0;
        let status = loop {
            let status = unsafe { read_volatile(Self::reg(MCS)) };
            if status & MCS_BUSY == 0 {
                break status;
            }
            polls += 1;
            if polls == BUSY_POLLS {
                return Err(I2cError::Timeout);
            }
            embassy_futures::yield_now().await;
        };
        let error = if status & MCS_ARBLST != 0 {
            Some(I2cError::ArbitrationLoss)
        } else if status & MCS_ERROR != 0 && status & MCS_ADRACK != 0 {
            Some(I2cError::AddressNack)
        } else if status & MCS_ERROR != 0 && status & MCS_DATACK != 0 {
            Some(I2cError::DataNack)
        } else {
            None
        };
        match error {
            None => Ok(()),
            Some(e) => {
                // Release the bus: QEMU keeps it busy after a failed START
                // and would ignore the next one.
                unsafe { write_volatile(Self::reg(MCS), MCS_STOP) };
                Err(e)
            }
        }
    }

    async fn write_bytes(&mut self, address: u8, bytes: &[u8]) -> Result<(), I2cError> {
        unsafe { write_volatile(Self::reg(MSA), u32::from(address) << 1) };
        let last = bytes.len().saturating_sub(1);
        for (i, &byte) in bytes.iter().enumerate() {
            unsafe { write_volatile(Self::reg(MDR), u32::from(byte)) };
            let mut cmd = MCS_RUN;
            if i == 0 {
                cmd |= MCS_START;
            }
            if i == last {
                cmd |= MCS_STOP;
            }
            self.command(cmd).await?;
        }
        Ok(())
    }

    async fn read_bytes(&mut self, address: u8, buffer: &mut [u8]) -> Result<(), I2cError> {
        unsafe { write_volatile(Self::reg(MSA), u32::from(address) << 1 | 1) };
        let last = buffer.len().saturating_sub(1);
        for (i, byte) in buffer.iter_mut().enumerate() {
            let mut cmd = MCS_RUN;
            if i == 0 {
                cmd |= MCS_START;
            }
            // ACK every byte but the last, which ends with STOP.
            cmd |= if i == last { MCS_STOP } else { MCS_ACK };
            self.command(cmd).await?;
            *byte = unsafe { read_volatile(Self::reg(MDR)) } as u8;
        }
        Ok(())
    }
}

impl ErrorType for I2c0 {
    type Error = I2cError;
}

impl embedded_hal_async::i2c::I2c<SevenBitAddress> for I2c0 {
    async fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), Self::Error> {
        for op in operations {
            match op {
                Operation::Write(bytes) => self.write_bytes(address, bytes).await?,
                Operation::Read(buffer) => self.read_bytes(address, buffer).await?,
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- UART0

const UART0: usize = 0x4000_C000;
const UART_DR: usize = 0x00;
const UART_FR: usize = 0x18;
const UART_CTL: usize = 0x30;
const FR_RXFE: u32 = 1 << 4;
const FR_TXFF: u32 = 1 << 5;

/// The step handshake over UART0: before each step the firmware sends `?`
/// and waits for one byte from the host, which meanwhile sets the sensor's
/// temperature. SysTick is stopped while it waits, so the script's times
/// do not depend on how fast the host answers (with `-icount` and the same
/// start time, see [`wall_clock`], two runs give the same uptimes). At the
/// end it sends `.`.
///
/// Before the idle time of each step it sends `~` (the environment
/// handshake): the host may change the temperature there (`cargo xtask demo
/// --environment 7:33`), which the sensor task then finds on its own.
///
/// With the `force-panic` or `force-hardfault` feature it panics or
/// executes an undefined instruction right after the handshake of step 2,
/// for the tests of the exit status.
pub struct Uart0Pacer {
    syst: SYST,
    /// `reset-after=N` on the semihosting command line: reset the MCU
    /// (`SCB::sys_reset`) after step N, once.
    reset_after: Option<usize>,
    /// The step whose idle time runs, and when it ends.
    idle: Option<(usize, Instant)>,
}

impl core::fmt::Debug for Uart0Pacer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Uart0Pacer")
    }
}

impl Uart0Pacer {
    fn new(syst: SYST) -> Self {
        // UARTEN | TXE | RXE.
        unsafe { write_volatile((UART0 + UART_CTL) as *mut u32, 0x301) };
        Uart0Pacer { syst, reset_after: argument(b"reset-after="), idle: None }
    }

    fn put(&mut self, byte: u8) {
        unsafe {
            while read_volatile((UART0 + UART_FR) as *const u32) & FR_TXFF != 0 {}
            write_volatile((UART0 + UART_DR) as *mut u32, u32::from(byte));
        }
    }

    fn get(&mut self) -> u8 {
        unsafe {
            while read_volatile((UART0 + UART_FR) as *const u32) & FR_RXFE != 0 {}
            read_volatile((UART0 + UART_DR) as *const u32) as u8
        }
    }

    /// Sends `byte` and waits for the host's answer, the board's time
    /// stopped meanwhile (every task and timer waits too).
    fn handshake(&mut self, byte: u8) {
        self.syst.disable_counter();
        self.put(byte);
        let _ = self.get();
        self.syst.enable_counter();
    }
}

impl agent::Pacer for Uart0Pacer {
    fn before_step(&mut self, index: usize) {
        self.handshake(b'?');
        // The exit-status tests' failures, right after step 2's handshake.
        if index == 2 {
            #[cfg(feature = "force-panic")]
            panic!("forced panic (feature force-panic)");
            #[cfg(feature = "force-hardfault")]
            cortex_m::asm::udf();
        }
    }

    async fn idle(&mut self, index: usize, ms: u32) -> Option<Woken> {
        let end = match self.idle {
            Some((step, end)) if step == index => end,
            _ => {
                self.handshake(b'~');
                let end = Instant::now() + Duration::from_millis(u64::from(ms));
                self.idle = Some((index, end));
                // A wake left from a sample taken as the last idle time ended.
                WAKE.reset();
                START.signal(());
                end
            }
        };
        STATE.store(IDLE, Ordering::Relaxed);
        // The executor sleeps (`wfe`) until a tick wakes a timer; with
        // `-icount …,sleep=off` QEMU jumps straight to the next tick.
        let woken = match select(Timer::at(end), WAKE.wait()).await {
            Either::First(()) => None,
            Either::Second(woken) => Some(woken),
        };
        STATE.store(BUSY, Ordering::Relaxed);
        woken
    }

    async fn model_reply(&mut self, index: Option<usize>) {
        match index {
            Some(i) => defmt::info!("model: the prompt of step {=usize} sent, awaiting the reply ({=u64} ms)", i, MODEL_REPLY_MS),
            None => defmt::info!("model: the prompt of the environment step sent, awaiting the reply ({=u64} ms)", MODEL_REPLY_MS),
        }
        STATE.store(AWAITING_MODEL, Ordering::Relaxed);
        Timer::after_millis(MODEL_REPLY_MS).await;
        STATE.store(BUSY, Ordering::Relaxed);
        defmt::info!("model: replied");
    }

    fn told(&mut self, told: [Option<Decimal>; MAX_WATCHES]) {
        critical_section::with(|cs| TOLD.borrow(cs).set(told));
    }

    fn finished(&mut self) {
        self.put(b'.');
    }

    fn after_step(&mut self, index: usize) {
        // Read first: the counter an uninterrupted board goes on from. Read
        // after the log line below it was a millisecond later (work is
        // board time under `-icount`).
        let millis = uptime_ms();
        let r = retained();
        if self.reset_after != Some(index) || unsafe { read_volatile(core::ptr::addr_of!((*r).reset_done)) } != 0 {
            return;
        }
        defmt::info!("resetting the MCU after step {=usize}", index);
        unsafe {
            write_volatile(core::ptr::addr_of_mut!((*r).millis), millis);
            write_volatile(core::ptr::addr_of_mut!((*r).reset_done), 1);
        }
        cortex_m::peripheral::SCB::sys_reset()
    }

    fn resumed(&mut self) {
        // The board's time goes on from the reset (the wall clock is the
        // boot's epoch plus this counter), so the steps after it read the
        // times an uninterrupted board would.
        let r = retained();
        if unsafe { read_volatile(core::ptr::addr_of!((*r).reset_done)) } != 0 {
            let millis = unsafe { read_volatile(core::ptr::addr_of!((*r).millis)) };
            critical_section::with(|cs| TICKS.borrow(cs).set(u64::from(millis)));
            // A whole millisecond before the next tick, so none falls between
            // here and the idle time's deadline reading the counter (the
            // uninterrupted board reads it right after the value saved at
            // the reset).
            self.syst.clear_current();
        }
    }
}

// ---------------------------------------------------------------- the sensor task

/// The sensor task's period: it samples the TMP105 every half second.
const SAMPLE_MS: u64 = 500;
/// How long the (simulated) model takes to reply to a step's prompt.
const MODEL_REPLY_MS: u64 = 800;

/// What the agent does, for the sensor task: busy with a step, idle
/// between steps (a reading that would fire a watch wakes it), or awaiting
/// its model's reply.
static STATE: AtomicU8 = AtomicU8::new(BUSY);
const BUSY: u8 = 0;
const IDLE: u8 = 1;
const AWAITING_MODEL: u8 = 2;

/// The session runs: the sensor task starts sampling (after a restore, so
/// that the board's time is put back first).
static START: Signal<CriticalSectionRawMutex, ()> = Signal::new();
/// The agent asks for a reading now (its step's).
static SAMPLE_NOW: Signal<CriticalSectionRawMutex, ()> = Signal::new();
/// The reading the agent asked for.
static READING: Signal<CriticalSectionRawMutex, Result<Temperature, tmp105::Error<I2cError>>> = Signal::new();
/// A reading that would fire the watch: the environment wakes the agent.
static WAKE: Signal<CriticalSectionRawMutex, Woken> = Signal::new();
/// What the agent's context told of each watched field (the core's
/// `Engine::told`), for the sensor task to compare its readings with.
static TOLD: Mutex<Cell<[Option<Decimal>; MAX_WATCHES]>> = Mutex::new(Cell::new([None; MAX_WATCHES]));

/// The agent's side of the sensor task: a reading taken when asked.
#[derive(Debug)]
pub struct SensorLink;

impl agent::Sensor for SensorLink {
    type Error = I2cError;
    async fn read(&mut self) -> Result<Temperature, tmp105::Error<I2cError>> {
        SAMPLE_NOW.signal(());
        READING.wait().await
    }
}

/// Owns the TMP105 (async, on I2C0): samples it every [`SAMPLE_MS`] on a
/// grid of board time (so a session restored after a reset samples when
/// the uninterrupted one did), and reads it when the agent asks. A sample
/// taken while the agent awaits its model is logged; one taken while it
/// is idle that would fire its watch (the core's rule, through
/// [`agent::wakes`]) wakes it.
#[embassy_executor::task]
pub async fn sensor_task(i2c: I2c0) {
    let mut sensor = Tmp105::new(i2c, tmp105::DEFAULT_ADDRESS);
    let watches = agent::config().injection.watch;
    START.wait().await;
    let mut next = Instant::from_millis((Instant::now().as_millis() / SAMPLE_MS + 1) * SAMPLE_MS);
    loop {
        match select(Timer::at(next), SAMPLE_NOW.wait()).await {
            Either::Second(()) => READING.signal(sensor.read_async().await),
            Either::First(()) => {
                next += Duration::from_millis(SAMPLE_MS);
                // A failed sample is not told: the agent's own read logs why.
                let Ok(temperature) = sensor.read_async().await else { continue };
                let mut text: heapless::String<24> = heapless::String::new();
                let _ = write!(text, "{temperature}");
                match STATE.load(Ordering::Relaxed) {
                    AWAITING_MODEL => defmt::info!("sensor task: {=str} (sampled while the agent awaits its model)", text),
                    IDLE if agent::wakes(&watches, &critical_section::with(|cs| TOLD.borrow(cs).get()), &text) => {
                        defmt::info!("sensor task: {=str} would fire the temperature watch: waking the agent", text);
                        WAKE.signal(Woken { temperature });
                    }
                    _ => {}
                }
            }
        }
    }
}

// ---------------------------------------------------------------- the board

/// The board's parts the agent uses.
#[derive(Debug)]
pub struct Board {
    /// The sensor's bus.
    pub i2c: I2c0,
    /// The step handshake and the passing of time.
    pub pacer: Uart0Pacer,
    /// The session log's "flash" (see [`Retained`]).
    pub log: envaware_firmware::log::RamFlash<&'static mut [u8]>,
}

impl Board {
    /// Takes the peripherals and starts the millisecond tick.
    ///
    /// # Panics
    ///
    /// When called twice.
    pub fn take() -> Board {
        let core = cortex_m::Peripherals::take().expect("Board::take is called once");
        let mut syst = core.SYST;
        systick_start(&mut syst);
        Board { i2c: I2c0::new(), pacer: Uart0Pacer::new(syst), log: envaware_firmware::log::RamFlash(log_region()) }
    }
}

// ---------------------------------------------------------------- exit, faults, stack

/// The host file the log's region is dumped to when the command line
/// says `dump-log=1` (QEMU's working directory; `cargo xtask demo` and the
/// tests read it: `envaware-sim replay --flash` reads such an image).
const LOG_DUMP: &core::ffi::CStr = c"envaware-flash-log.bin";

/// Writes `region`, the log's "flash" byte for byte, to the host over
/// semihosting, when the command line asks for it.
pub fn dump_log(region: &[u8]) {
    if argument::<u8>(b"dump-log=") != Some(1) {
        return;
    }
    match semihosting::fs::write(LOG_DUMP, region) {
        Ok(()) => defmt::info!("the log's region ({=usize} bytes) is saved to {=str}", region.len(), LOG_DUMP.to_str().unwrap_or("?")),
        Err(_) => defmt::warn!("the log's region could not be saved to the host"),
    }
}

/// Ends the QEMU run with `code` (semihosting `SYS_EXIT_EXTENDED`).
pub fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}

/// The deepest the stack has been, in bytes: cortex-m-rt's `paint-stack`
/// fills it with `0xCCCC_CCCC` at reset; the first word from the bottom
/// that lost the paint marks the high-water line.
pub fn stack_high_water() -> u32 {
    extern "C" {
        static mut _stack_end: u32;
        static mut _stack_start: u32;
    }
    let bottom = &raw const _stack_end as usize;
    let top = &raw const _stack_start as usize;
    let mut addr = bottom;
    // SAFETY: every word between the linker's `_stack_end` and
    // `_stack_start` is RAM; reading it races with nothing (one core, and
    // the words below the stack pointer are not in use).
    while addr < top && unsafe { read_volatile(addr as *const u32) } == cortex_m_rt::STACK_PAINT_VALUE {
        addr += 4;
    }
    (top - addr) as u32
}

#[exception]
unsafe fn HardFault(frame: &cortex_m_rt::ExceptionFrame) -> ! {
    defmt::error!("hard fault at pc {=u32:#x}", frame.pc());
    exit(2)
}
