//! The session document: both configurations, the agent's name and the
//! model's context size in one JSON object, as the sim's `--config` file
//! and the firmware's `session-config.json` hold them.

use super::{ConfigBuf, Fault, LoadError};
use crate::config::error::{ConfigField, Section};
use crate::config::{Config, ZoneName};
use crate::json::{Kind, Value};

/// The agent's name when a session document gives none (the sim's).
pub const DEFAULT_AGENT_NAME: &str = "agent";
/// The model's context window, in tokens, when a session document gives
/// none (the sim's).
pub const DEFAULT_CONTEXT_SIZE: i64 = 128_000;

/// The keys of a session document, as [`LoadError::UnknownKey`] lists them.
pub(super) const KEYS: &str = "agent_name, injection_config, context_config, context_size";

/// What a session document configures
/// ([`ConfigBuf::load_session`]): the two configurations, and the two
/// values of each [`Step`](crate::Step) that do not change during a
/// session.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SessionConfig<'a> {
    /// `injection_config` and `context_config`.
    pub config: Config<'a>,
    /// `agent_name`, the name the agent's messages carry
    /// ([`Step::agent_name`](crate::Step::agent_name)); by default
    /// [`DEFAULT_AGENT_NAME`].
    pub agent_name: &'a str,
    /// `context_size`, the model's context window in tokens
    /// ([`Step::context_size`](crate::Step::context_size)); by default
    /// [`DEFAULT_CONTEXT_SIZE`].
    pub context_size: i64,
}

impl<const TEXT: usize, const NAMES: usize, const FIELDS: usize> ConfigBuf<TEXT, NAMES, FIELDS> {
    /// Reads a session document: one JSON object with the keys
    /// `agent_name` (a string), `injection_config` and `context_config`
    /// (objects, read as [`load_injection`](Self::load_injection) and
    /// [`load_context`](Self::load_context) read them) and `context_size`
    /// (an integer), each optional; `null` is an absent key. This is the
    /// file `envaware-sim replay --config` and `fuzz --config` read, less
    /// `input_tokens` (a step's value, not configuration).
    ///
    /// Unlike the two sections, whose unknown keys are ignored as pydantic
    /// ignores them, the document's own keys are envaware's: an unknown key
    /// is [`LoadError::UnknownKey`], a key given twice
    /// [`LoadError::DuplicateKey`], a value of the wrong type
    /// [`LoadError::WrongType`] naming its path (`context_size`,
    /// `injection_config.timezone`). `context_size` is read strictly, as
    /// the sim reads it: a JSON integer in `i64`'s range (`4096`, not
    /// `"4096"` or `4096.0`).
    ///
    /// Absent configuration fields keep this buffer's values (the
    /// reference's defaults in a new buffer); an absent `agent_name` or
    /// `context_size` is [`DEFAULT_AGENT_NAME`] or [`DEFAULT_CONTEXT_SIZE`].
    /// The agent's name is kept in the buffer's text arena. On error this
    /// buffer is unchanged.
    ///
    /// ```
    /// use envaware::{ConfigBuf, Engine, FixedClock, LoadError, SliceConversation, Step, TaskCounts, Timestamp};
    ///
    /// let mut buf = ConfigBuf::new();
    /// let session = buf.load_session(r#"{
    ///     "agent_name": "Sprout",
    ///     "injection_config": {"timezone": "Europe/Berlin", "extra_fields": {"site": "greenhouse B"}},
    ///     "context_config": {"compression_tool_enabled": true},
    ///     "context_size": 4096
    /// }"#)?;
    /// assert_eq!((session.agent_name, session.context_size), ("Sprout", 4096));
    ///
    /// let engine = Engine::new(session.config)?;
    /// let step = Step {
    ///     agent_name: session.agent_name,
    ///     tasks: TaskCounts::default(),
    ///     cur_iter: 0,
    ///     input_tokens: 3000, // above (0.8 - 0.2) * 4096
    ///     context_size: session.context_size,
    /// };
    /// let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
    /// let mut out = [0u8; 1024];
    /// let outcome = engine.step(&SliceConversation(&[]), &step, &mut clock, &mut (), &mut out)?;
    /// let hint = outcome.hint.expect("a first step tells the time");
    /// assert!(hint.contains("<site>greenhouse B</site>") && hint.contains("When reaching 3276 tokens"));
    ///
    /// // A typo is refused, naming the key.
    /// let mut buf = ConfigBuf::new();
    /// let err = buf.load_session(r#"{"context_sise": 4096}"#).unwrap_err();
    /// assert!(matches!(err, LoadError::UnknownKey { .. }));
    /// assert_eq!(
    ///     err.to_string(),
    ///     "context_sise: unknown key (a session configuration has agent_name, injection_config, context_config, context_size)"
    /// );
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn load_session(&mut self, json_text: &str) -> Result<SessionConfig<'_>, LoadError> {
        let (agent_name, context_size) = self.transaction(json_text, |next, arena, members| {
            let mut seen = [false; 4];
            let (mut agent_name, mut context_size) = (None, None);
            for (key, value) in members {
                let Some(field) = ConfigField::find(Section::Session, |k| key.eq_str(k)) else {
                    return Err(Fault::UnknownKey { key: ZoneName::new(key.raw()) });
                };
                let index = match field {
                    ConfigField::AgentName => 0,
                    ConfigField::InjectionConfig => 1,
                    ConfigField::ContextConfig => 2,
                    _ => 3,
                };
                if let Some(seen) = seen.get_mut(index) {
                    if core::mem::replace(seen, true) {
                        return Err(Fault::DuplicateKey { field });
                    }
                }
                if value.kind() == Kind::Null {
                    continue;
                }
                match field {
                    ConfigField::AgentName => agent_name = Some(arena.push_str(value, field)?),
                    ConfigField::InjectionConfig => {
                        next.section(arena, Section::Injection, section(value, field)?)?
                    }
                    ConfigField::ContextConfig => {
                        next.section(arena, Section::Context, section(value, field)?)?
                    }
                    _ => context_size = Some(integer(value, field)?),
                }
            }
            Ok((agent_name, context_size))
        })?;
        let text = self.text.as_str();
        Ok(SessionConfig {
            config: self.config(),
            agent_name: agent_name.map_or(DEFAULT_AGENT_NAME, |span| span.of(text)),
            context_size: context_size.unwrap_or(DEFAULT_CONTEXT_SIZE),
        })
    }
}

/// A section's members: `value` must be an object.
fn section(value: Value<'_>, field: ConfigField) -> Result<crate::json::Members<'_>, Fault> {
    match value.kind() {
        Kind::Object => Ok(value.members()),
        _ => Err(Fault::WrongType { field, expected: "an object" }),
    }
}

/// A JSON integer in `i64`'s range, as serde reads one (no fraction or
/// exponent, no string).
fn integer(value: Value<'_>, field: ConfigField) -> Result<i64, Fault> {
    const EXPECTED: &str = "an integer in -9223372036854775808..=9223372036854775807";
    let err = Fault::WrongType { field, expected: EXPECTED };
    match value.kind() {
        Kind::Number => value.number_text().and_then(|t| t.parse().ok()).ok_or(err),
        _ => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ContextConfig, InjectionConfig};
    use std::string::ToString;

    fn error(json_text: &str) -> std::string::String {
        ConfigBuf::new().load_session(json_text).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn every_key_loads_and_each_absent_or_null_key_is_its_default() {
        let mut buf = ConfigBuf::new();
        let s = buf
            .load_session(
                r#"{"agent_name": "R\u00f6ver", "context_size": -5,
                    "injection_config": {"timezone": "Asia/Tokyo", "unknown": 1},
                    "context_config": {"trigger_ratio": "0.7"}}"#,
            )
            .unwrap();
        assert_eq!((s.agent_name, s.context_size), ("Röver", -5));
        assert_eq!(s.config.injection.timezone, "Asia/Tokyo");
        assert_eq!(s.config.context.trigger_ratio, 0.7);
        for empty in [
            "{}",
            r#"{"agent_name": null, "injection_config": null, "context_config": null, "context_size": null}"#,
        ] {
            let mut buf = ConfigBuf::new();
            let s = buf.load_session(empty).unwrap();
            assert_eq!((s.agent_name, s.context_size), ("agent", 128_000), "{empty}");
            assert_eq!(s.config.injection.timezone, InjectionConfig::default().timezone);
            assert_eq!(s.config.context, ContextConfig::default());
        }
        let mut buf = ConfigBuf::new();
        let edges = r#"{"context_size": 9223372036854775807}"#;
        assert_eq!(buf.load_session(edges).unwrap().context_size, i64::MAX);
    }

    /// The project's own session documents load as the sim reads them.
    #[test]
    fn the_repository_s_session_files_load() {
        let mut buf = ConfigBuf::new();
        let s = buf.load_session(include_str!("../../../../examples/sprout.config.json")).unwrap();
        assert_eq!((s.agent_name, s.context_size), ("Sprout", 4096));
        assert_eq!(s.config.injection.extra_fields.get(1), Some(("site", "greenhouse B")));
        assert!(s.config.context.compression_tool_enabled);
        assert!(s.config.validate().is_ok());
        let mut buf = ConfigBuf::new();
        let s = buf.load_session(include_str!("../../../../firmware/session-config.json")).unwrap();
        assert_eq!((s.agent_name, s.context_size), ("Sprout", 4096));
        assert_eq!(s.config.injection.watch.len(), 1);
        assert!(s.config.validate().is_ok());
    }

    /// One case per class of error: each names its path, and the
    /// messages start as the sim's do.
    #[test]
    fn each_bad_document_gives_its_typed_error_naming_the_path() {
        let i64s = "an integer in -9223372036854775808..=9223372036854775807";
        for (doc, message) in [
            ("[]", "the configuration must be a JSON object".to_string()),
            ("{", "invalid JSON at line 1 column 2 (byte 1): ".to_string()),
            (r#"{"input_tokens": 5}"#, "input_tokens: unknown key (a session configuration has agent_name, injection_config, context_config, context_size)".into()),
            (r#"{"context_size": "4096"}"#, std::format!("context_size: expected {i64s}")),
            (r#"{"context_size": 4096.0}"#, std::format!("context_size: expected {i64s}")),
            (r#"{"context_size": 1e30}"#, std::format!("context_size: expected {i64s}")),
            (r#"{"context_size": 9223372036854775808}"#, std::format!("context_size: expected {i64s}")),
            (r#"{"agent_name": 5}"#, "agent_name: expected a string".into()),
            (r#"{"agent_name": "\ud800"}"#, "agent_name: expected a string without lone surrogates".into()),
            (r#"{"injection_config": []}"#, "injection_config: expected an object".into()),
            (r#"{"context_config": "x"}"#, "context_config: expected an object".into()),
            (r#"{"injection_config": {"extra_fields": {"a": 5}}}"#, "injection_config.extra_fields: expected a string".into()),
            (r#"{"context_config": {"trigger_ratio": []}}"#, "context_config.trigger_ratio: expected a number".into()),
            (r#"{"context_size": 1, "context_size": 2}"#, "context_size: given twice".into()),
            (r#"{"agent_name": null, "agent_name": "a"}"#, "agent_name: given twice".into()),
        ] {
            assert!(error(doc).starts_with(&message), "{doc}: {}", error(doc));
        }
        let mut buf = ConfigBuf::new();
        assert_eq!(
            buf.load_session(r#"{"context_config": {}, "context_config": {}}"#).unwrap_err(),
            LoadError::DuplicateKey { field: ConfigField::ContextConfig }
        );
        assert_eq!(
            buf.load_session(r#"{"context_size": true}"#).unwrap_err(),
            LoadError::WrongType {
                field: ConfigField::ContextSize,
                expected: "an integer in -9223372036854775808..=9223372036854775807"
            }
        );
        assert_eq!(
            buf.load_session(r#"{"Agent_name": ""}"#).unwrap_err(),
            LoadError::UnknownKey { key: ZoneName::new("Agent_name") }
        );
    }

    #[test]
    fn a_failed_load_leaves_the_buffer_unchanged() {
        let mut buf: ConfigBuf<64, 2, 2> = ConfigBuf::with_capacity();
        buf.load_session(r#"{"agent_name": "rover", "injection_config": {"timezone": "UTC"}}"#)
            .unwrap();
        let before = std::format!("{:?}", buf);
        for bad in [
            // Fails after both sections and the name were read.
            r#"{"agent_name": "other", "injection_config": {"timezone": "Asia/Tokyo"},
                "context_config": {"trigger_ratio": 0.5}, "context_size": "x"}"#,
            // The name does not fit the arena.
            r#"{"agent_name": "a name longer than the sixty-four bytes of text this buffer has"}"#,
        ] {
            assert!(buf.load_session(bad).is_err(), "{bad}");
            assert_eq!(std::format!("{:?}", buf), before);
        }
        assert_eq!(
            buf.load_session(r#"{"agent_name": "a name longer than the sixty-four bytes of text this buffer has"}"#)
                .unwrap_err(),
            LoadError::TooLong { field: ConfigField::AgentName }
        );
        // The configuration loaded before is kept by a later session that
        // does not name it.
        let s = buf.load_session(r#"{"context_size": 10}"#).unwrap();
        assert_eq!((s.agent_name, s.context_size), ("agent", 10));
        assert_eq!(s.config.injection.timezone, "UTC");
    }
}
