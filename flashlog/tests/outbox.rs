//! The log as an outbox: items found by number, the mark carried by the
//! steps and read back, and what a compaction keeps while items wait.

use embassy_futures::block_on;
use envaware::journal::{Event, Session};
use envaware::{Config, Engine, StepInput, TaskCounts, Timestamp};
use envaware_flashlog::{Numbered, RamFlash, SessionLog, MAX_ITEM, PAGE};

type Sprout<'e> = Session<'e, 8, 32, 2048>;

fn step(session: &mut Sprout<'_>, log: &mut SessionLog<RamFlash<&mut [u8]>>, minute: i64) {
    let (mut buf, mut hint) = ([0u8; MAX_ITEM], [0u8; 1024]);
    block_on(log.make_room_for(session, &mut buf)).unwrap();
    let input = StepInput {
        tasks: TaskCounts::default(),
        cur_iter: 1,
        input_tokens: 10,
        context_size: 1000,
    };
    let now = Some(Timestamp(1_784_687_400_000_000 + minute * 60_000_000));
    block_on(session.step(&input, now, &mut (), &mut hint, &mut buf, log)).unwrap();
}

fn user(session: &mut Sprout<'_>, log: &mut SessionLog<RamFlash<&mut [u8]>>, text: &str) {
    let mut buf = [0u8; MAX_ITEM];
    block_on(log.make_room_for(session, &mut buf)).unwrap();
    block_on(session.record(&Event::User { name: "operator", text }, &mut buf, log)).unwrap();
}

#[test]
fn items_are_found_by_number_and_a_restore_resumes_from_the_mark() {
    let engine = Engine::new(Config::default()).unwrap();
    let mut region = vec![0xFF; 8 * PAGE];
    let mut log = SessionLog::with_outbox(RamFlash(&mut region[..]));
    let mut buf = [0u8; MAX_ITEM];
    let mut session = Sprout::new(&engine, "Sprout");
    block_on(session.start(&mut buf, &mut log)).unwrap();
    user(&mut session, &mut log, "hello");
    step(&mut session, &mut log, 0);
    // Three items: the header (0), the user's message (1), the step (2).
    let mut item = [0u8; MAX_ITEM];
    assert_eq!(block_on(log.read_item(1, &mut item)), Ok(Numbered::Found(18)));
    assert_eq!(&item[..3], &[2, 1, 0], "kind user, number 1");
    assert_eq!(block_on(log.read_item(3, &mut item)), Ok(Numbered::NotYet { next: 3 }));
    // Delivered up to 2: the next step says so, and a restore gets it.
    log.set_delivered(2);
    log.set_delivered(1);
    assert_eq!(log.delivered(), Some(2), "a mark never moves back");
    step(&mut session, &mut log, 1);
    // After a reset: a new log over the same flash.
    let mut log = SessionLog::with_outbox(RamFlash(&mut region[..]));
    let mut restored = Sprout::new(&engine, "Sprout");
    let mut scratch = [0u8; 1024];
    block_on(log.restore_session(&mut restored, &mut buf, &mut scratch, |_, _| {})).unwrap();
    assert_eq!(restored.journal().delivered(), Some(2));
    assert_eq!(log.delivered(), Some(2));
    // A log that is not an outbox says no mark, and its steps carry none.
    let mut page = [0xFFu8; PAGE];
    let plain = SessionLog::new(RamFlash(&mut page[..]));
    assert_eq!(plain.delivered(), None);
}

#[test]
fn a_compaction_pops_delivered_items_only_until_the_region_is_full_of_undelivered_ones() {
    let engine = Engine::new(Config::default()).unwrap();
    let mut region = vec![0xFF; 6 * PAGE];
    let mut log = SessionLog::with_outbox(RamFlash(&mut region[..]));
    let mut buf = [0u8; MAX_ITEM];
    let mut session = Sprout::new(&engine, "Sprout");
    block_on(session.start(&mut buf, &mut log)).unwrap();
    let long = "a long message that fills the region quickly, ".repeat(4);
    // Everything delivered as it is written: the log compacts as without an outbox.
    let mut minute = 0;
    while session.journal().steps() < 40 {
        user(&mut session, &mut log, &long);
        step(&mut session, &mut log, minute);
        minute += 1;
        log.set_delivered(session.journal().next_number());
    }
    assert!(session.journal().next_number() > session.journal().items(), "it compacted");
    assert_eq!(log.lost(), 0);
    // Nothing delivered from here: compactions wait until the region is
    // full of undelivered items, then drop the oldest and count them.
    let mark = session.journal().next_number();
    let mut kept_all_for = 0;
    while log.lost() == 0 {
        user(&mut session, &mut log, &long);
        step(&mut session, &mut log, minute);
        minute += 1;
        let journal = session.journal();
        let first = journal.next_number() - journal.items();
        if log.lost() == 0 {
            assert!(first <= mark, "an undelivered item was popped: first {first}, mark {mark}");
            kept_all_for += 1;
        }
        assert!(minute < 1000, "the region never filled");
    }
    assert!(kept_all_for > 3, "{kept_all_for} steps kept every undelivered item");
    let (from, to) = log.take_lost().unwrap();
    assert_eq!(from, mark);
    assert_eq!(to - from, log.lost());
    assert_eq!(log.delivered(), Some(to));
    assert_eq!(log.take_lost(), None, "reported once");
    let mut item = [0u8; MAX_ITEM];
    assert_eq!(block_on(log.read_item(from, &mut item)), Ok(Numbered::Gone { first: to }));
}
