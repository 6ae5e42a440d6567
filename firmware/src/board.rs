//! Everything specific to the board: the TI Stellaris LM3S6965 evaluation
//! board (Cortex-M3) as QEMU's `lm3s6965evb` machine emulates it.
//!
//! - [`I2c0`]: the I2C0 master, implementing [`embedded_hal::i2c::I2c`];
//! - [`Clock`]: wall time at boot (an `epoch=` argument from the host, else
//!   semihosting `SYS_TIME`) plus a SysTick millisecond counter ([`uptime_ms`]);
//! - [`Uart0Pacer`]: the step handshake with the host over UART0;
//! - [`exit`], [`stack_high_water`]: semihosting exit and the painted-stack
//!   measurement.
//!
//! To move the agent to another board, replace this module: provide an
//! `I2c` for the sensor's bus, a [`envaware::Clock`], and an
//! [`agent::Pacer`](envaware_firmware::agent::Pacer), then call
//! [`agent::run`](envaware_firmware::agent::run) with them (see the README).

use core::mem::MaybeUninit;
use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use embedded_hal::i2c::{ErrorKind, ErrorType, NoAcknowledgeSource, Operation, SevenBitAddress};
use envaware::{EpochTickClock, Timestamp};
use envaware_firmware::clock;

/// The core clock at reset as QEMU models the board: 12.5 MHz. SysTick
/// counts it (the external reference clock is not modelled).
const CORE_HZ: u32 = 12_500_000;

// ---------------------------------------------------------------- SysTick

static MILLIS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    // Only this handler writes; a load/store pair is enough on one core.
    MILLIS.store(MILLIS.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// Milliseconds of SysTick counting since boot (paused while waiting for
/// the host, see [`Uart0Pacer`]).
pub fn uptime_ms() -> u32 {
    MILLIS.load(Ordering::Relaxed)
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
    /// The pacer's schedule at the reset ([`Uart0Pacer`]'s `due`).
    due: u32,
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

/// The Stellaris I2C0 controller in master mode, at 100 kHz.
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

    /// Issues one command and waits for it to finish.
    fn command(&mut self, cmd: u32) -> Result<(), I2cError> {
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

    fn write_bytes(&mut self, address: u8, bytes: &[u8]) -> Result<(), I2cError> {
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
            self.command(cmd)?;
        }
        Ok(())
    }

    fn read_bytes(&mut self, address: u8, buffer: &mut [u8]) -> Result<(), I2cError> {
        unsafe { write_volatile(Self::reg(MSA), u32::from(address) << 1 | 1) };
        let last = buffer.len().saturating_sub(1);
        for (i, byte) in buffer.iter_mut().enumerate() {
            let mut cmd = MCS_RUN;
            if i == 0 {
                cmd |= MCS_START;
            }
            // ACK every byte but the last, which ends with STOP.
            cmd |= if i == last { MCS_STOP } else { MCS_ACK };
            self.command(cmd)?;
            *byte = unsafe { read_volatile(Self::reg(MDR)) } as u8;
        }
        Ok(())
    }
}

impl ErrorType for I2c0 {
    type Error = I2cError;
}

impl embedded_hal::i2c::I2c<SevenBitAddress> for I2c0 {
    fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), Self::Error> {
        for op in operations {
            match op {
                Operation::Write(bytes) => self.write_bytes(address, bytes)?,
                Operation::Read(buffer) => self.read_bytes(address, buffer)?,
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
/// With the `force-panic` or `force-hardfault` feature it panics or
/// executes an undefined instruction right after the handshake of step 2,
/// for the tests of the exit status.
pub struct Uart0Pacer {
    syst: SYST,
    /// `reset-after=N` on the semihosting command line: reset the MCU
    /// (`SCB::sys_reset`) after step N, once.
    reset_after: Option<usize>,
    /// When the last step was due, on the millisecond counter.
    due: u32,
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
        Uart0Pacer { syst, reset_after: argument(b"reset-after="), due: 0 }
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
}

impl envaware_firmware::agent::Pacer for Uart0Pacer {
    fn before_step(&mut self, index: usize) {
        self.syst.disable_counter();
        self.put(b'?');
        let _ = self.get();
        self.syst.enable_counter();
        // The exit-status tests' failures, right after step 2's handshake.
        if index == 2 {
            #[cfg(feature = "force-panic")]
            panic!("forced panic (feature force-panic)");
            #[cfg(feature = "force-hardfault")]
            cortex_m::asm::udf();
        }
    }

    fn pass_time(&mut self, ms: u32) {
        // On a schedule: `ms` after the last step was due, not after its
        // work ended, so a step's time does not depend on how long the
        // steps before it took (a restored board does a little more).
        self.due = self.due.wrapping_add(ms);
        while (uptime_ms().wrapping_sub(self.due) as i32) < 0 {
            // With `-icount …,sleep=off` QEMU jumps straight to the next tick.
            cortex_m::asm::wfi();
        }
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
            write_volatile(core::ptr::addr_of_mut!((*r).due), self.due);
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
            MILLIS.store(unsafe { read_volatile(core::ptr::addr_of!((*r).millis)) }, Ordering::Relaxed);
            self.due = unsafe { read_volatile(core::ptr::addr_of!((*r).due)) };
            // A whole millisecond before the next tick, so none falls between
            // here and `pass_time` reading the counter (the uninterrupted
            // board reads it right after the value saved at the reset).
            self.syst.clear_current();
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
    pub log: envaware_firmware::log::RamFlash<'static>,
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
