//! UART0: the step and environment handshakes with the host
//! ([`Uart0Pacer`]), the idle time between steps and the model's
//! (simulated) reply.

use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::Ordering;

use cortex_m::peripheral::SYST;
use embassy_futures::select::{select, Either};
use embassy_time::{Duration, Instant, Timer};
use envaware::openai::ChatRequest;
use envaware::Conversation;
use envaware_firmware::agent::{self, Told, Woken};
use envaware_firmware::http::{self, ExchangeError, Exchanged};

use super::argument;
use super::retained::retained;
use super::sensor::{AWAITING_MODEL, BUSY, IDLE, MODEL_REPLY_MS, START, STATE, TOLD, WAKE};
use super::time::{uptime_ms, TICKS};
#[cfg(doc)]
use super::wall_clock;

const UART0: usize = 0x4000_C000;
/// UART1: the model's link (QEMU connects it to a TCP socket).
const UART1: usize = 0x4000_D000;
const UART_LCRH: usize = 0x2C;
/// How long, in the board's milliseconds, the model's link may stay
/// silent (or full) before the exchange gives up (see [`Uart1`]).
pub(super) const MODEL_TIMEOUT_MS: u32 = 60_000;
// The Stellaris UART's registers and flags, shared by UART0, UART1 and
// UART2 (the uplink's).
pub(super) const UART_DR: usize = 0x00;
pub(super) const UART_FR: usize = 0x18;
pub(super) const UART_CTL: usize = 0x30;
pub(super) const FR_RXFE: u32 = 1 << 4;
pub(super) const FR_TXFF: u32 = 1 << 5;
/// `UART_CTL`: UARTEN | TXE | RXE.
pub(super) const CTL_ENABLE: u32 = 0x301;

/// The step handshake over UART0: before each step the firmware sends `?`
/// and waits for one byte from the host, which meanwhile sets the sensor's
/// temperature. SysTick is stopped while it waits, so the script's times
/// do not depend on how fast the host answers (with `-icount` and the same
/// start time, see [`wall_clock`], two runs give the same uptimes). At the
/// end it sends `.`.
///
/// Before the idle time of each step it sends `~` (the environment
/// handshake): the host may change the temperature there (`cargo xtask demo
/// --environment 6:33`), which the sensor task then finds on its own.
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
    /// `model=1` on the semihosting command line: a model server is
    /// connected to UART1, and each model call is a real exchange.
    model: bool,
    /// `stream=1`: the requests ask for a streamed reply (`"stream": true`).
    stream: bool,
}

/// What the semihosting command line tells the pacer.
#[derive(Debug, Clone, Copy)]
pub(super) struct PacerArguments {
    model: bool,
    stream: bool,
    reset_after: Option<usize>,
}

impl core::fmt::Debug for Uart0Pacer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Uart0Pacer")
    }
}

impl Uart0Pacer {
    /// The pacer's arguments: `model=1`, `stream=1`, `reset-after=N`. Read before the
    /// millisecond tick starts ([`super::Board::take`]): under `-icount`
    /// reading the command line is board time, and it takes longer for a
    /// longer line, so read later it would move every uptime of a run with
    /// `reset-after` against one without.
    pub(super) fn arguments() -> PacerArguments {
        PacerArguments {
            model: argument::<u8>(b"model=") == Some(1),
            stream: argument::<u8>(b"stream=") == Some(1),
            reset_after: argument(b"reset-after="),
        }
    }

    pub(super) fn new(syst: SYST, arguments: PacerArguments) -> Self {
        let PacerArguments { model, stream, reset_after } = arguments;
        unsafe { write_volatile((UART0 + UART_CTL) as *mut u32, CTL_ENABLE) };
        if model {
            // 8 bits, FIFOs on (16 bytes each way); UARTEN | TXE | RXE.
            unsafe {
                write_volatile((UART1 + UART_LCRH) as *mut u32, 0x70);
                write_volatile((UART1 + UART_CTL) as *mut u32, CTL_ENABLE);
            }
        }
        Uart0Pacer { syst, reset_after, idle: None, model, stream }
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

    async fn model_reply<C: Conversation>(
        &mut self,
        index: Option<usize>,
        request: &ChatRequest<'_>,
        context: &C,
        body: &mut [u8],
    ) -> Option<Result<Exchanged, ExchangeError>> {
        // The exchange first, on the board's time stopped: its tick's
        // interrupt is off (the counter runs, for the link's timeout), so
        // the host's latency moves no timer and no uptime; the tick's
        // phase starts afresh after it, the same in every run.
        let exchanged = self.model.then(|| {
            self.syst.disable_interrupt();
            let mut link = Uart1 { syst: &mut self.syst, left_ms: MODEL_TIMEOUT_MS };
            let request = ChatRequest { stream: self.stream, ..*request };
            let exchanged = http::exchange(&mut link, &request, context, body);
            self.syst.clear_current();
            self.syst.enable_interrupt();
            exchanged
        });
        match index {
            Some(i) => defmt::info!(
                "model: the prompt of step {=usize} sent, awaiting the reply ({=u64} ms)",
                i,
                MODEL_REPLY_MS
            ),
            None => defmt::info!(
                "model: the prompt of the environment step sent, awaiting the reply ({=u64} ms)",
                MODEL_REPLY_MS
            ),
        }
        STATE.store(AWAITING_MODEL, Ordering::Relaxed);
        Timer::after_millis(MODEL_REPLY_MS).await;
        STATE.store(BUSY, Ordering::Relaxed);
        defmt::info!("model: replied");
        exchanged
    }

    fn told(&mut self, told: Told) {
        let at = Instant::now().as_millis();
        critical_section::with(|cs| TOLD.borrow(cs).set((told, at)));
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
        if self.reset_after != Some(index)
            || unsafe { read_volatile(core::ptr::addr_of!((*r).reset_done)) } != 0
        {
            return;
        }
        defmt::info!("resetting the MCU after step {=usize}", index);
        unsafe {
            write_volatile(core::ptr::addr_of_mut!((*r).millis), millis);
            write_volatile(core::ptr::addr_of_mut!((*r).next_step), index as u32 + 1);
            write_volatile(core::ptr::addr_of_mut!((*r).reset_done), 1);
        }
        cortex_m::peripheral::SCB::sys_reset()
    }

    fn resume_at(&mut self) -> Option<usize> {
        let r = retained();
        match unsafe { read_volatile(core::ptr::addr_of!((*r).reset_done)) } {
            0 => None,
            _ => Some(unsafe { read_volatile(core::ptr::addr_of!((*r).next_step)) } as usize),
        }
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

/// UART1 as a blocking byte stream, the model's link: QEMU connects it to
/// a TCP socket (`-chardev socket,…` then the second `-serial`), as an AT
/// Wi-Fi or cellular module's transparent mode would (no TLS, no DNS).
///
/// It busy-waits on the FIFO flags, as UART0 does, with SysTick's
/// interrupt off: each wrap of the counter (a millisecond of the board's
/// time) is taken from `left_ms`, and when none is left the read or write
/// fails with [`LinkTimeout`]: a dead or silent server costs the step
/// [`MODEL_TIMEOUT_MS`] and no reply, never the run.
struct Uart1<'a> {
    syst: &'a mut SYST,
    left_ms: u32,
}

/// The model's link stayed silent (or full) for [`MODEL_TIMEOUT_MS`].
#[derive(Debug, Clone, Copy)]
pub(super) struct LinkTimeout;

impl embedded_io::Error for LinkTimeout {
    fn kind(&self) -> embedded_io::ErrorKind {
        embedded_io::ErrorKind::TimedOut
    }
}

impl Uart1<'_> {
    /// Waits until `flag` of UART1's flag register is clear.
    fn wait_clear(&mut self, flag: u32) -> Result<(), LinkTimeout> {
        while unsafe { read_volatile((UART1 + UART_FR) as *const u32) } & flag != 0 {
            if self.syst.has_wrapped() {
                self.left_ms = self.left_ms.checked_sub(1).ok_or(LinkTimeout)?;
            }
        }
        Ok(())
    }
}

impl embedded_io::ErrorType for Uart1<'_> {
    type Error = LinkTimeout;
}

impl embedded_io::Read for Uart1<'_> {
    /// At least one byte (waiting for it), then what else the FIFO holds.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, LinkTimeout> {
        let Some((first, rest)) = buf.split_first_mut() else { return Ok(0) };
        self.wait_clear(FR_RXFE)?;
        *first = unsafe { read_volatile((UART1 + UART_DR) as *const u32) } as u8;
        let mut n = 1;
        for slot in rest {
            if unsafe { read_volatile((UART1 + UART_FR) as *const u32) } & FR_RXFE != 0 {
                break;
            }
            *slot = unsafe { read_volatile((UART1 + UART_DR) as *const u32) } as u8;
            n += 1;
        }
        Ok(n)
    }
}

impl embedded_io::Write for Uart1<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, LinkTimeout> {
        for &byte in buf {
            self.wait_clear(FR_TXFF)?;
            unsafe { write_volatile((UART1 + UART_DR) as *mut u32, u32::from(byte)) };
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), LinkTimeout> {
        Ok(())
    }
}
