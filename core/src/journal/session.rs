//! One owner for a context and its log: [`Session`].

use core::fmt;
use core::future::Future;

use super::*;
use crate::engine::Engine;

/// Where a [`Session`] appends its items, in order: a device's flash queue
/// (envaware-flashlog's `SessionLog`), a host's file (envaware-host's
/// `FileLog`), or a test's `Vec`.
///
/// `append` is async because flash is; implement it with `async fn` (a
/// store whose writes complete at once never awaits), and a host drives
/// the session with any `block_on` (embassy-futures', pollster's,
/// envaware-host's).
pub trait ItemStore {
    /// Why an item could not be appended.
    type Error;
    /// Appends `item` after the others. When it returns `Ok`, the item is
    /// in the log (as durable as the store says); when it returns an
    /// error, the item is not.
    fn append(&mut self, item: &[u8]) -> impl Future<Output = Result<(), Self::Error>>;

    /// The store's outbox mark, when it publishes its items (an MQTT
    /// outbox): the number of the first item not yet delivered. A
    /// [`Session`] logs it in its next step item when it changed, so that
    /// a restored device resumes publishing from it
    /// ([`Journal::delivered`]). `None` (the default): no outbox.
    fn delivered(&self) -> Option<u32> {
        None
    }
}

/// Why a [`Session`] could not log an event or a step: the context is as
/// it was before the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SessionError<E> {
    /// The item did not fit the caller's buffer, the context would not
    /// take the event, or the hint did not fit: nothing was logged.
    Record(RecordError),
    /// The store refused the item.
    Append(E),
}

impl<E: fmt::Display> fmt::Display for SessionError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Record(e) => e.fmt(f),
            SessionError::Append(e) => write!(f, "the log's store refused an item: {e}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for SessionError<E> {}

impl<E> From<RecordError> for SessionError<E> {
    fn from(e: RecordError) -> Self {
        SessionError::Record(e)
    }
}

impl<E> From<BufferFull> for SessionError<E> {
    fn from(e: BufferFull) -> Self {
        SessionError::Record(RecordError::BufferFull(e))
    }
}

impl<E> From<StoreError> for SessionError<E> {
    fn from(e: StoreError) -> Self {
        SessionError::Record(e.into())
    }
}

/// Where the agent's reply stood at the last logged event: what a loop
/// needs to go on after a restore. A field is `None` when the log does not
/// say it (nothing logged yet, or said before a compaction's header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Reply {
    /// The next step's `cur_iter`: 0 after a user message or a new reply,
    /// one more than the last step's otherwise. The context-length
    /// dimension reads it (it fires only at `cur_iter == 0`).
    pub next_iter: Option<u64>,
    /// The tasks the last step was given.
    pub tasks: Option<TaskCounts>,
    /// The input tokens the last step was given.
    pub input_tokens: Option<i64>,
    /// The context size the last step was given.
    pub context_size: Option<i64>,
    /// The clock the last step was decided at (`Some(None)`: unknown then).
    pub clock: Option<Option<Timestamp>>,
    /// Steps the session took, also those a compaction popped.
    pub steps: u64,
}

/// A context and its log, owned together: the only way to change the
/// context is through the session, which logs each event before it applies
/// it.
///
/// - [`new`](Self::new) makes an empty context, [`start`](Self::start)
///   writes the log's header; [`restore`](Self::restore) (or [`Restore`], item by item)
///   rebuilds the context from a log after a reset.
/// - [`record`](Self::record) and [`step`](Self::step) write the event's
///   item, append it to the [`ItemStore`], and only then apply it. When
///   anything fails (the buffer, the store refusing the item, the context
///   refusing the event, the hint not fitting) the context is as it was
///   and the error says which.
/// - [`context`](Self::context) gives the context to read (its decisions,
///   its messages); there is no `&mut` path to it.
/// - [`reply`](Self::reply): where the reply stood, for a loop that goes on
///   after a restore.
///
/// A store evicting messages to take an event is followed by a `compress`
/// note (as [`Journal::record`] writes it, for a replay without the
/// store's capacity); if the store refuses the note, the event stays
/// applied (the log holds it, and a restore evicts the same) and the note
/// is appended before the next event, whose call fails if it still cannot.
///
/// ```
/// use envaware::journal::{Event, ItemStore, Session};
/// use envaware::{Config, Engine, StepInput, Timestamp};
/// use embassy_futures::block_on;
///
/// /// A host's log in memory: the device's flash queue, in a test.
/// struct Items(Vec<Vec<u8>>);
/// impl ItemStore for Items {
///     type Error = core::convert::Infallible;
///     async fn append(&mut self, item: &[u8]) -> Result<(), Self::Error> {
///         self.0.push(item.to_vec());
///         Ok(())
///     }
/// }
///
/// let engine = Engine::new(Config::default())?;
/// let (mut buf, mut hint) = ([0u8; 1024], [0u8; 512]);
/// let mut log = Items(Vec::new());
/// let mut session: Session<'_, 8, 32, 2048> = Session::new(&engine, "rover");
/// block_on(session.start(&mut buf, &mut log))?;
/// block_on(session.record(&Event::User { name: "operator", text: "" }, &mut buf, &mut log))?;
/// let step = StepInput { tasks: Default::default(), cur_iter: 0, input_tokens: 900, context_size: 8192 };
/// let now = Some(Timestamp::from_unix_seconds(1_784_687_400));
/// let outcome = block_on(session.step(&step, now, &mut (), &mut hint, &mut buf, &mut log))?;
/// assert!(outcome.hint.is_some());
///
/// // After a reset: the same context, and where the reply stood.
/// let restored = Session::<8, 32, 2048>::restore(&engine, "rover", log.0.iter().map(|i| &i[..]), &mut buf)?;
/// assert_eq!(restored.context().len(), session.context().len());
/// assert_eq!(restored.reply(), session.reply());
/// assert_eq!(restored.reply().next_iter, Some(1));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
///
/// An event that does not go through the session cannot be written:
///
/// ```compile_fail,E0596
/// # use envaware::journal::Session;
/// fn bypass(session: &mut Session<'_, 8, 32, 2048>) {
///     // error[E0596]: `context()` gives `&AgentContext`, and a tool call needs `&mut`.
///     session.context().tool_call("c1", "Drive", "{}");
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Session<'e, const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize> {
    context: AgentContext<'e, MESSAGES, BLOCKS, TEXT>,
    journal: Journal<MESSAGES>,
    /// The messages kept after an eviction whose `compress` note the log
    /// does not hold yet.
    owed: Option<usize>,
}

impl<'e, const M: usize, const B: usize, const T: usize> Session<'e, M, B, T> {
    /// A session of an empty context for `agent_name`, its log not
    /// started: [`start`](Self::start) it (or [`restore`](Self::restore) a
    /// session instead).
    pub fn new(engine: &Engine<'e>, agent_name: &'e str) -> Self {
        let context = AgentContext::new(engine, agent_name);
        let journal = Journal::new(&context);
        Session { context, journal, owed: None }
    }

    /// Starts the log: appends its header to `store`, which should be
    /// empty (a device erases a log it could not restore first). Until
    /// then nothing the session logs can be restored.
    ///
    /// # Errors
    ///
    /// When the header does not fit `buf`, or the store refuses it: the
    /// session goes on, its log unstarted (start it again).
    pub async fn start<S: ItemStore>(
        &mut self,
        buf: &mut [u8],
        store: &mut S,
    ) -> Result<(), SessionError<S::Error>> {
        self.append(buf, store, |journal, context, buf| journal.start(context, buf)).await
    }

    /// The session rebuilt from its log's `items` (oldest first; read
    /// twice, [`Restore`] says why). `scratch` holds each step's hint as
    /// it is rendered again (as long as the longest hint).
    ///
    /// # Errors
    ///
    /// A damaged log, one of another configuration, or an empty one
    /// ([`ItemError::MissingHeader`]): start a new session then.
    pub fn restore<'i, I>(
        engine: &Engine<'e>,
        agent_name: &'e str,
        items: I,
        scratch: &mut [u8],
    ) -> Result<Self, LogError>
    where
        I: IntoIterator<Item = &'i [u8]> + Clone,
    {
        let mut session = Session::new(engine, agent_name);
        let mut restore = Restore::new(&mut session);
        items.clone().into_iter().try_for_each(|item| restore.check(item))?;
        for item in items {
            restore.apply(item, scratch)?;
        }
        restore.finish()?;
        Ok(session)
    }

    /// The context, to read: its decisions, its messages.
    pub fn context(&self) -> &AgentContext<'e, M, B, T> {
        &self.context
    }

    /// The log's bookkeeping, to read: its header, items, steps.
    pub fn journal(&self) -> &Journal<M> {
        &self.journal
    }

    /// Where the reply stood at the last logged event.
    pub fn reply(&self) -> Reply {
        let said = &self.journal.said;
        Reply {
            next_iter: said.iter,
            tasks: said.tasks,
            input_tokens: said.tokens,
            context_size: said.config,
            clock: said.clock,
            steps: self.journal.steps,
        }
    }

    /// Items at the front of the log the context no longer needs
    /// ([`Journal::dead_items`]).
    pub fn dead_items(&self) -> u32 {
        self.journal.dead_items()
    }

    /// When the store fills: appends the header a compaction writes
    /// ([`Journal::compaction_header`]) and returns how many items to pop
    /// from the front of the log, calling [`popped`](Self::popped) as they
    /// are (a log cut at any point of it restores the same context). A
    /// store's policy (envaware-flashlog's `SessionLog::make_room_for`)
    /// calls it.
    ///
    /// # Errors
    ///
    /// When the header does not fit `buf` or the store refuses it: nothing
    /// is to be popped then, and the log is as it was.
    pub async fn compaction_header<S: ItemStore>(
        &mut self,
        buf: &mut [u8],
        store: &mut S,
    ) -> Result<u32, SessionError<S::Error>> {
        let dead = self.journal.dead_items();
        self.append(buf, store, |journal, context, buf| journal.compaction_header(context, buf))
            .await?;
        Ok(dead)
    }

    /// `count` items were popped from the front of the log.
    pub fn popped(&mut self, count: u32) {
        self.journal.popped(count);
    }

    /// Logs `event`, then applies it.
    ///
    /// # Errors
    ///
    /// See [`SessionError`]: the context is as it was.
    pub async fn record<S: ItemStore>(
        &mut self,
        event: &Event<'_>,
        buf: &mut [u8],
        store: &mut S,
    ) -> Result<(), SessionError<S::Error>> {
        // A note an earlier eviction owes comes first, whatever the call.
        self.pay_owed(buf, store).await?;
        Journal::plan(&self.context, event)?;
        self.append(buf, store, |journal, _, buf| journal.write(event, buf)).await?;
        let index = self.journal.items - 1;
        // `plan` said the context takes it.
        let evicted = self.journal.apply(&mut self.context, event, index)?;
        self.evicted(evicted, buf, store).await;
        Ok(())
    }

    /// One step, logged: decides, renders the hint, and logs the step item
    /// (its inputs where they changed, the watched values, the decision and
    /// the live values told) before the hint is in the context (as
    /// [`AgentContext::step`]).
    ///
    /// # Errors
    ///
    /// See [`SessionError`]: nothing was logged and no hint appended then.
    pub async fn step<'h, L: LiveFields + ?Sized, S: ItemStore>(
        &mut self,
        step: &StepInput,
        now: Option<Timestamp>,
        live: &mut L,
        hint_out: &'h mut [u8],
        buf: &mut [u8],
        store: &mut S,
    ) -> Result<Outcome<'h>, SessionError<S::Error>> {
        self.pay_owed(buf, store).await?;
        // As `AgentContext::step`: the watched fields are read before
        // deciding, and not again when it fires.
        let engine = *self.context.engine();
        let decision = self.context.decide_with_readings(step, now, engine.read_watched(live));
        self.log_step(decision, step, live, hint_out, buf, store, engine.watches()).await
    }

    /// The first half of a split step (as
    /// [`AgentContext::decide_with_readings`]), for readings awaited in
    /// between: decides with the watched fields' `readings`, after
    /// appending any `compress` note the log is owed. Then read what the
    /// decision needs and call [`render_step`](Self::render_step), which
    /// logs the step whole.
    ///
    /// # Errors
    ///
    /// When the owed note cannot be logged ([`SessionError`]).
    pub async fn decide<L: LiveFields + ?Sized, S: ItemStore>(
        &mut self,
        step: &StepInput,
        now: Option<Timestamp>,
        readings: &L,
        buf: &mut [u8],
        store: &mut S,
    ) -> Result<Decision, SessionError<S::Error>> {
        self.pay_owed(buf, store).await?;
        Ok(self.context.decide_with_readings(step, now, readings))
    }

    /// The second half of a split step: refreshes `live` when the
    /// `decision` of [`decide`](Self::decide) fires, renders the hint into
    /// `hint_out`, and logs the step (as [`AgentContext::render_step`];
    /// the watched values logged are those `live` holds then).
    ///
    /// # Errors
    ///
    /// See [`SessionError`]: no hint was appended then.
    pub async fn render_step<'h, L: LiveFields + ?Sized, S: ItemStore>(
        &mut self,
        decision: Decision,
        step: &StepInput,
        live: &mut L,
        hint_out: &'h mut [u8],
        buf: &mut [u8],
        store: &mut S,
    ) -> Result<Outcome<'h>, SessionError<S::Error>> {
        self.pay_owed(buf, store).await?;
        self.log_step(decision, step, live, hint_out, buf, store, false).await
    }

    /// Renders `decision`, logs the step item, then appends the hint.
    #[allow(clippy::too_many_arguments)]
    async fn log_step<'h, L: LiveFields + ?Sized, S: ItemStore>(
        &mut self,
        decision: Decision,
        step: &StepInput,
        live: &mut L,
        hint_out: &'h mut [u8],
        buf: &mut [u8],
        store: &mut S,
        read_before: bool,
    ) -> Result<Outcome<'h>, SessionError<S::Error>> {
        let engine = *self.context.engine();
        let outcome = engine
            .render_read(decision, self.context.store(), live, hint_out, read_before)
            .map_err(|e| RecordError::Step(StepError::from(e)))?;
        Journal::plan_step(&self.context, outcome.hint, &*live)?;
        let watches = engine.config().config().injection.watch;
        let out = StepOut {
            input: step,
            now: decision.now,
            readings: WatchReadings::of(&watches, &*live),
            decision: &decision,
            told: &*live,
            delivered: None,
        };
        // The store's outbox mark goes with the step (when it changed).
        self.journal.set_delivered(store.delivered());
        self.append(buf, store, |journal, _, buf| journal.write_step(&out, &watches, buf)).await?;
        if let Some(hint) = outcome.hint {
            let index = self.journal.items - 1;
            // `plan_step` said the context takes it.
            let evicted = self.journal.apply_hint(&mut self.context, hint, decision.now, index)?;
            self.evicted(evicted, buf, store).await;
        }
        Ok(outcome)
    }

    /// After an item whose apply evicted messages: the `compress` note is
    /// owed, and appended now if the store takes it (else before the next
    /// item; the event is logged and applied either way).
    async fn evicted<S: ItemStore>(&mut self, evicted: usize, buf: &mut [u8], store: &mut S) {
        if evicted > 0 {
            self.owed = Some(self.context.len());
            let _ = self.pay_owed(buf, store).await;
        }
    }

    /// Writes an item with `write` into `buf` and appends it to `store`;
    /// when the store refuses it, the journal is as it was before.
    async fn append<S: ItemStore>(
        &mut self,
        buf: &mut [u8],
        store: &mut S,
        write: impl FnOnce(
            &mut Journal<M>,
            &AgentContext<'e, M, B, T>,
            &mut [u8],
        ) -> Result<usize, BufferFull>,
    ) -> Result<(), SessionError<S::Error>> {
        let mark = self.journal.mark();
        let n = write(&mut self.journal, &self.context, buf)?;
        if let Err(e) = store.append(&buf[..n]).await {
            self.journal.rewind(mark);
            return Err(SessionError::Append(e));
        }
        Ok(())
    }

    /// Appends the `compress` note an eviction owes the log, if any.
    async fn pay_owed<S: ItemStore>(
        &mut self,
        buf: &mut [u8],
        store: &mut S,
    ) -> Result<(), SessionError<S::Error>> {
        let Some(keep) = self.owed else { return Ok(()) };
        let event = Event::Compress { keep };
        self.append(buf, store, |journal, _, buf| journal.write(&event, buf)).await?;
        self.owed = None;
        let index = self.journal.items - 1;
        self.journal.apply(&mut self.context, &event, index)?;
        Ok(())
    }
}

/// A [`Session`] being rebuilt from its log, item by item, in place (a
/// device keeps one context: no second one on its stack), for a store
/// read item by item (a flash queue read with async calls): every item is
/// [`check`](Self::check)ed first (a log of another version or
/// configuration is refused before anything is applied), then each is
/// [`apply`](Self::apply)'d, oldest first; [`finish`](Self::finish) says
/// whether the session is whole. After an error, start the session anew
/// ([`Session::new`]).
#[derive(Debug)]
pub struct Restore<'s, 'e, const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize> {
    session: &'s mut Session<'e, MESSAGES, BLOCKS, TEXT>,
}

impl<'s, 'e, const M: usize, const B: usize, const T: usize> Restore<'s, 'e, M, B, T> {
    /// A restore into `session`, which is emptied first (as
    /// [`Session::new`] makes it).
    pub fn new(session: &'s mut Session<'e, M, B, T>) -> Self {
        let context = &session.context;
        if !context.is_empty() || session.journal.items > 0 || session.journal.checker.items() > 0 {
            *session = Session::new(context.engine(), context.agent_name());
        }
        Restore { session }
    }

    /// The first pass: reads `item`, the next of the log, for its number
    /// and header ([`Journal::check`]).
    ///
    /// # Errors
    ///
    /// A damaged item, a gap, or a header of another version or
    /// configuration.
    pub fn check(&mut self, item: &[u8]) -> Result<(), LogError> {
        self.session.journal.check(item)
    }

    /// The second pass: applies `item`, the next of the log, if the context
    /// still needs it ([`Journal::restore`]). Returns whether it was applied.
    ///
    /// # Errors
    ///
    /// A damaged item, or one [`check`](Self::check) did not read.
    pub fn apply(&mut self, item: &[u8], scratch: &mut [u8]) -> Result<bool, LogError> {
        self.apply_seeing(item, scratch, |_, _| {})
    }

    /// [`apply`](Self::apply), with `before_step` seeing the context and a
    /// step's instant just before a step item is applied, as the live
    /// session's step saw them (a device's transcript stamps the messages
    /// it restores with the time of the step that first decided on them).
    ///
    /// # Errors
    ///
    /// As [`apply`](Self::apply).
    pub fn apply_seeing(
        &mut self,
        item: &[u8],
        scratch: &mut [u8],
        before_step: impl FnOnce(&AgentContext<'e, M, B, T>, Option<Timestamp>),
    ) -> Result<bool, LogError> {
        let session = &mut *self.session;
        let applied =
            session.journal.restore_item(&mut session.context, item, scratch, before_step)?;
        match applied {
            Some((_, true)) => session.owed = None,
            Some((evicted, false)) if evicted > 0 => session.owed = Some(session.context.len()),
            _ => {}
        }
        Ok(applied.is_some())
    }

    /// The context so far, to read (a transcript stamps what it restores).
    pub fn context(&self) -> &AgentContext<'e, M, B, T> {
        &self.session.context
    }

    /// The log's bookkeeping so far ([`Journal::clock`], the steps read).
    pub fn journal(&self) -> &Journal<M> {
        &self.session.journal
    }

    /// Whether the session is whole, to go on with.
    ///
    /// # Errors
    ///
    /// [`ItemError::MissingHeader`] when no item was checked (an empty log:
    /// start the session), [`ItemError::Unchecked`] when fewer items were
    /// applied than checked.
    pub fn finish(self) -> Result<(), LogError> {
        let journal = &self.session.journal;
        let checked = journal.checker.items();
        if journal.last_header.is_none() {
            return Err(LogError { index: checked, kind: ItemError::MissingHeader });
        }
        if journal.items != checked {
            return Err(LogError { index: journal.items, kind: ItemError::Unchecked });
        }
        Ok(())
    }
}
