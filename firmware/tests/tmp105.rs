//! The TMP105 driver on the host, over embedded-hal-mock's I2C double: the
//! mock checks every transfer the driver makes (address, bytes, order) and
//! `done()` that none is missing. A sensor that answers, each bus error, a
//! hung bus (the board's I2C gives up with a timeout), and readings no
//! TMP105 can send.

mod common;

use common::{configure, data, select};
use embedded_hal::i2c::{ErrorKind, NoAcknowledgeSource};
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use envaware_firmware::tmp105::{Error, Temperature, Tmp105, DEFAULT_ADDRESS};

/// A sensor over a mock expecting `transactions`, and a handle on the mock
/// to check them with `done()`.
fn sensor(transactions: &[Transaction]) -> (Tmp105<Mock>, Mock) {
    let mock = Mock::new(transactions);
    (Tmp105::new(mock.clone(), DEFAULT_ADDRESS), mock)
}

#[test]
fn the_first_read_configures_12_bit_mode_then_reads_exact_sixteenths() {
    let (mut s, mut mock) =
        sensor(&[configure(), select(), data([0x19, 0x80]), select(), data([0xFB, 0xC0])]);
    assert_eq!(s.read().map(|t| t.to_string()), Ok("25.5 °C".to_string()));
    // Configured once: the second read only selects and reads.
    assert_eq!(s.read().map(|t| t.to_string()), Ok("-4.25 °C".to_string()));
    mock.done();
}

#[test]
fn nothing_is_sent_before_the_first_read_and_configure_alone_sends_the_mode() {
    let (mut s, mut mock) = sensor(&[configure(), select(), data([0x00, 0x10])]);
    assert_eq!(s.configure(), Ok(()));
    // Already configured: the read does not configure again.
    assert_eq!(s.read().map(|t| t.to_string()), Ok("0.0625 °C".to_string()));
    mock.done();

    let (_unused, mut mock) = sensor(&[]);
    mock.done();
}

#[test]
fn a_failed_configuration_is_a_configure_error_and_is_tried_again_next_time() {
    let (mut s, mut mock) = sensor(&[
        configure().with_error(ErrorKind::ArbitrationLoss),
        configure(),
        select(),
        data([0x00, 0x10]),
        select(),
        data([0x00, 0x20]),
    ]);
    let e = s.read().unwrap_err();
    assert_eq!(e, Error::Configure(ErrorKind::ArbitrationLoss));
    assert_eq!(e.kind(), ErrorKind::ArbitrationLoss);
    assert_eq!(e.to_string(), "configuring the TMP105: The arbitration was lost");
    assert_eq!(s.read().map(|t| t.to_string()), Ok("0.0625 °C".to_string()));
    assert_eq!(s.read().map(|t| t.to_string()), Ok("0.125 °C".to_string()));
    mock.done();
}

#[test]
fn a_failed_pointer_write_or_data_read_is_a_read_error_and_the_mode_is_kept() {
    let address_nack = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
    let data_nack = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data);
    let (mut s, mut mock) = sensor(&[
        configure(),
        select().with_error(address_nack),
        // Not configured again: a read error leaves the sensor's mode alone.
        select(),
        data([0x19, 0x80]).with_error(data_nack),
        select(),
        data([0x19, 0x80]),
    ]);
    let e = s.read().unwrap_err();
    assert_eq!(e, Error::Read(address_nack));
    assert_eq!(e.to_string(), "reading the TMP105: The device did not acknowledge its address");
    assert_eq!(s.read().unwrap_err(), Error::Read(data_nack));
    assert_eq!(s.read().map(|t| t.to_string()), Ok("25.5 °C".to_string()));
    mock.done();
}

#[test]
fn a_hung_bus_is_a_read_error_not_a_hang() {
    // The board's I2C stops polling a bus that stays busy and reports
    // `I2cError::Timeout`, whose kind is `Other`.
    let (mut s, mut mock) =
        sensor(&[configure(), select(), data([0, 0]).with_error(ErrorKind::Other)]);
    let e = s.read().unwrap_err();
    assert_eq!(e, Error::Read(ErrorKind::Other));
    assert_eq!(e.kind(), ErrorKind::Other);
    mock.done();
}

#[test]
fn readings_no_tmp105_sends_are_errors_and_the_sensor_is_set_up_again() {
    // A stuck data line, above +125 °C, below -55 °C, unused low bits set.
    for raw in [[0xFF, 0xFF], [0x7F, 0xF0], [0x80, 0x00], [0x19, 0x81]] {
        let (mut s, mut mock) =
            sensor(&[configure(), select(), data(raw), configure(), select(), data([0x19, 0x80])]);
        let e = s.read().unwrap_err();
        assert_eq!(e, Error::Implausible(raw));
        assert_eq!(e.kind(), ErrorKind::Other);
        assert_eq!(
            e.to_string(),
            format!("implausible TMP105 reading: {:02X} {:02X}", raw[0], raw[1])
        );
        // The sensor may have been reset to 9-bit mode: configured again.
        assert_eq!(s.read().map(|t| t.to_string()), Ok("25.5 °C".to_string()));
        mock.done();
    }
}

#[test]
fn the_range_limits_are_plausible_and_readings_print_as_exact_decimals() {
    let shown = |raw: [u8; 2]| Temperature::plausible(raw).map(|t| t.to_string());
    assert_eq!(shown([0xC9, 0x00]).as_deref(), Some("-55.0 °C"));
    assert_eq!(shown([0x7D, 0x00]).as_deref(), Some("125.0 °C"));
    assert_eq!(shown([0xC8, 0xF0]), None, "-55.0625 °C is below the range");
    assert_eq!(shown([0x7D, 0x10]), None, "125.0625 °C is above the range");
    assert_eq!(shown([0x0C, 0x10]).as_deref(), Some("12.0625 °C"));
    assert_eq!(shown([0xFF, 0xF0]).as_deref(), Some("-0.0625 °C"));
    assert_eq!(shown([0x1E, 0x00]).as_deref(), Some("30.0 °C"));
    assert_eq!(shown([0x00, 0x00]).as_deref(), Some("0.0 °C"));
    // The register's sign survives the shift.
    assert!(Temperature::from_register([0xFF, 0xF0]) < Temperature::from_register([0x00, 0x00]));
}

/// The async driver (`read_async`, which the board's sensor task awaits)
/// makes the blocking one's transfers and gives its results and errors:
/// set up once, a failed read keeps the mode, an implausible one sets up again.
#[test]
fn the_async_driver_makes_the_same_transfers_with_the_same_results() {
    let t = [
        configure(),
        select(),
        data([0x19, 0x80]),
        select().with_error(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address)),
        select(),
        data([0xFF, 0xFF]),
        configure(),
        select(),
        data([0xFB, 0xC0]),
    ];
    let (mut blocking, mut blocking_mock) = sensor(&t);
    let (mut awaited, mut awaited_mock) = sensor(&t);
    for _ in 0..4 {
        let expected = blocking.read();
        assert_eq!(embassy_futures::block_on(awaited.read_async()), expected);
    }
    blocking_mock.done();
    awaited_mock.done();
}
