//! The firmware's TMP105 driver on the host, over a scripted I2C bus: a
//! sensor that answers, one that fails, a hung bus (the bus gives up with a
//! timeout) and readings no TMP105 can send.

#[path = "../../firmware/src/tmp105.rs"]
mod tmp105;

use std::collections::VecDeque;

use embedded_hal::i2c::{ErrorKind, ErrorType, I2c, Operation};
use tmp105::{Error, Temperature, Tmp105, DEFAULT_ADDRESS};

/// What the bus does for one transfer.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Ack,
    Data([u8; 2]),
    Fail(ErrorKind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BusError(ErrorKind);

impl embedded_hal::i2c::Error for BusError {
    fn kind(&self) -> ErrorKind {
        self.0
    }
}

/// A bus that answers each transfer from a script and records what was written.
#[derive(Default)]
struct ScriptedBus {
    answers: VecDeque<Answer>,
    written: Vec<Vec<u8>>,
}

impl ErrorType for ScriptedBus {
    type Error = BusError;
}

impl I2c for ScriptedBus {
    fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), BusError> {
        assert_eq!(address, DEFAULT_ADDRESS);
        for op in operations {
            match (op, self.answers.pop_front().expect("a transfer the script does not expect")) {
                (_, Answer::Fail(kind)) => return Err(BusError(kind)),
                (Operation::Write(bytes), Answer::Ack) => self.written.push(bytes.to_vec()),
                (Operation::Read(buf), Answer::Data(data)) => buf.copy_from_slice(&data),
                (op, answer) => panic!("{answer:?} scripted for {op:?}"),
            }
        }
        Ok(())
    }
}

fn sensor(answers: &[Answer]) -> Tmp105<ScriptedBus> {
    Tmp105::new(ScriptedBus { answers: answers.iter().copied().collect(), written: Vec::new() }, DEFAULT_ADDRESS)
}

use Answer::{Ack, Data, Fail};

#[test]
fn a_reading_is_configured_once_and_exact_in_sixteenths() {
    let mut s = sensor(&[Ack, Ack, Data([0x19, 0x80]), Ack, Data([0xFB, 0xC0])]);
    assert_eq!(s.read().unwrap().to_string(), "25.5 °C");
    assert_eq!(s.read().unwrap().to_string(), "-4.25 °C");
}

#[test]
fn a_failing_sensor_is_a_typed_error_and_configured_again_next_time() {
    let mut s = sensor(&[Fail(ErrorKind::ArbitrationLoss), Ack, Ack, Data([0x00, 0x10])]);
    let e = s.read().unwrap_err();
    assert_eq!(e, Error::Configure(BusError(ErrorKind::ArbitrationLoss)));
    assert_eq!(e.to_string(), "configuring the TMP105: The arbitration was lost");
    assert_eq!(s.read().unwrap().to_string(), "0.0625 °C");
}

#[test]
fn a_hung_bus_is_a_read_error_not_a_hang() {
    // The board's I2C stops polling a bus that stays busy and reports it.
    let mut s = sensor(&[Ack, Ack, Fail(ErrorKind::Other)]);
    assert_eq!(s.read().unwrap_err(), Error::Read(BusError(ErrorKind::Other)));
}

#[test]
fn readings_no_tmp105_sends_are_errors_and_the_sensor_is_set_up_again() {
    for raw in [[0xFF, 0xFF], [0x7F, 0xF0], [0x80, 0x00], [0x19, 0x81]] {
        let mut s = sensor(&[Ack, Ack, Data(raw), Ack, Ack, Data([0x19, 0x80])]);
        let e = s.read().unwrap_err();
        assert_eq!(e, Error::Implausible(raw));
        assert_eq!(e.to_string(), format!("implausible TMP105 reading: {:02X} {:02X}", raw[0], raw[1]));
        assert_eq!(s.read().unwrap().to_string(), "25.5 °C");
    }
    // The limits themselves are plausible: -55 °C and +125 °C.
    assert_eq!(Temperature::plausible([0xC9, 0x00]).map(|t| t.to_string()).as_deref(), Some("-55.0 °C"));
    assert_eq!(Temperature::plausible([0x7D, 0x00]).map(|t| t.to_string()).as_deref(), Some("125.0 °C"));
}
