//! Spans, and their OTLP encodings: protobuf (`application/x-protobuf`)
//! and JSON (`application/json`), each the body of one `POST /v1/traces`
//! (an `ExportTraceServiceRequest`, opentelemetry-proto's
//! `collector/trace/v1`).
//!
//! The protobuf messages are declared here by hand with prost's derive,
//! only the fields this exporter writes (and the response's partial
//! success): no build script, no `protoc`. Their field numbers are
//! opentelemetry-proto's; `tests/tests/otel_phoenix.rs` has the official
//! Python classes decode both encodings of the same request to the same
//! message.

use prost::Message as _;
use serde_json::{json, Value};

/// An attribute's value: the kinds OTLP's `AnyValue` holds that spans use.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// A string.
    Str(String),
    /// A 64-bit integer.
    Int(i64),
    /// A double (a non-finite one is left out: JSON cannot hold it).
    Double(f64),
    /// A boolean.
    Bool(bool),
    /// A list of strings.
    StrList(Vec<String>),
}

/// Attributes, in the order written.
pub type Attributes = Vec<(String, AttrValue)>;

/// OTLP's `SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// An operation inside the program (the agent's reply).
    Internal = 1,
    /// A call to a remote service (the model).
    Client = 3,
}

/// OTLP's `Status.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusCode {
    /// Completed.
    Ok = 1,
    /// Failed; the status message says why.
    Error = 2,
}

/// An event on a span.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Its name.
    pub name: String,
    /// When, in nanoseconds since the Unix epoch.
    pub time_ns: u64,
    /// Its attributes.
    pub attributes: Attributes,
}

/// One span, with the resource (the device) it is exported under.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The resource's attributes.
    pub resource: Attributes,
    /// The trace.
    pub trace_id: [u8; 16],
    /// The span.
    pub span_id: [u8; 8],
    /// The parent span, in the same trace.
    pub parent: Option<[u8; 8]>,
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// Start, in nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// End, in nanoseconds since the Unix epoch.
    pub end_ns: u64,
    /// Its attributes.
    pub attributes: Attributes,
    /// Its events.
    pub events: Vec<Event>,
    /// Its status and the message that goes with an error.
    pub status: (StatusCode, String),
}

/// The instrumentation scope every span is exported under.
pub const SCOPE: &str = "envaware-sim";
/// The semantic conventions the spans follow, as OTLP's `schema_url`.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";

/// How a request's body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// OTLP/HTTP protobuf (`application/x-protobuf`).
    Protobuf,
    /// OTLP/HTTP JSON (`application/json`).
    Json,
}

impl Encoding {
    /// The `Content-Type` of a body in this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }

    /// The body of one export request holding `spans`.
    pub fn body(self, spans: &[Span]) -> Vec<u8> {
        match self {
            Encoding::Protobuf => protobuf(spans),
            Encoding::Json => json(spans).to_string().into_bytes(),
        }
    }
}

/// Consecutive spans with the same resource, each group one
/// `ResourceSpans`.
fn by_resource(spans: &[Span]) -> Vec<&[Span]> {
    spans.chunk_by(|a, b| a.resource == b.resource).collect()
}

mod proto {
    //! opentelemetry-proto's messages, the fields written here only.
    #![allow(missing_docs)]

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportTraceServiceRequest {
        #[prost(message, repeated, tag = "1")]
        pub resource_spans: Vec<ResourceSpans>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportTraceServiceResponse {
        #[prost(message, optional, tag = "1")]
        pub partial_success: Option<ExportTracePartialSuccess>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportTracePartialSuccess {
        #[prost(int64, tag = "1")]
        pub rejected_spans: i64,
        #[prost(string, tag = "2")]
        pub error_message: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResourceSpans {
        #[prost(message, optional, tag = "1")]
        pub resource: Option<Resource>,
        #[prost(message, repeated, tag = "2")]
        pub scope_spans: Vec<ScopeSpans>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Resource {
        #[prost(message, repeated, tag = "1")]
        pub attributes: Vec<KeyValue>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScopeSpans {
        #[prost(message, optional, tag = "1")]
        pub scope: Option<InstrumentationScope>,
        #[prost(message, repeated, tag = "2")]
        pub spans: Vec<Span>,
        #[prost(string, tag = "3")]
        pub schema_url: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstrumentationScope {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub version: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Span {
        #[prost(bytes = "vec", tag = "1")]
        pub trace_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub span_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "4")]
        pub parent_span_id: Vec<u8>,
        #[prost(string, tag = "5")]
        pub name: String,
        #[prost(int32, tag = "6")]
        pub kind: i32,
        #[prost(fixed64, tag = "7")]
        pub start_time_unix_nano: u64,
        #[prost(fixed64, tag = "8")]
        pub end_time_unix_nano: u64,
        #[prost(message, repeated, tag = "9")]
        pub attributes: Vec<KeyValue>,
        #[prost(message, repeated, tag = "11")]
        pub events: Vec<Event>,
        #[prost(message, optional, tag = "15")]
        pub status: Option<Status>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Event {
        #[prost(fixed64, tag = "1")]
        pub time_unix_nano: u64,
        #[prost(string, tag = "2")]
        pub name: String,
        #[prost(message, repeated, tag = "3")]
        pub attributes: Vec<KeyValue>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Status {
        #[prost(string, tag = "2")]
        pub message: String,
        #[prost(int32, tag = "3")]
        pub code: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct KeyValue {
        #[prost(string, tag = "1")]
        pub key: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<AnyValue>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AnyValue {
        #[prost(oneof = "Value", tags = "1, 2, 3, 4, 5")]
        pub value: Option<Value>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(string, tag = "1")]
        String(String),
        #[prost(bool, tag = "2")]
        Bool(bool),
        #[prost(int64, tag = "3")]
        Int(i64),
        #[prost(double, tag = "4")]
        Double(f64),
        #[prost(message, tag = "5")]
        Array(ArrayValue),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ArrayValue {
        #[prost(message, repeated, tag = "1")]
        pub values: Vec<AnyValue>,
    }
}

fn finite(attributes: &Attributes) -> impl Iterator<Item = &(String, AttrValue)> {
    attributes.iter().filter(|(_, v)| !matches!(v, AttrValue::Double(d) if !d.is_finite()))
}

fn proto_attributes(attributes: &Attributes) -> Vec<proto::KeyValue> {
    use proto::Value as V;
    let string = |s: &String| proto::AnyValue { value: Some(V::String(s.clone())) };
    finite(attributes)
        .map(|(key, value)| {
            let value = match value {
                AttrValue::Str(s) => V::String(s.clone()),
                AttrValue::Int(i) => V::Int(*i),
                AttrValue::Double(d) => V::Double(*d),
                AttrValue::Bool(b) => V::Bool(*b),
                AttrValue::StrList(list) => {
                    V::Array(proto::ArrayValue { values: list.iter().map(string).collect() })
                }
            };
            proto::KeyValue {
                key: key.clone(),
                value: Some(proto::AnyValue { value: Some(value) }),
            }
        })
        .collect()
}

fn scope() -> proto::InstrumentationScope {
    proto::InstrumentationScope { name: SCOPE.into(), version: env!("CARGO_PKG_VERSION").into() }
}

/// The request as OTLP protobuf.
pub fn protobuf(spans: &[Span]) -> Vec<u8> {
    let resource_spans = by_resource(spans)
        .into_iter()
        .map(|group| proto::ResourceSpans {
            resource: Some(proto::Resource { attributes: proto_attributes(&group[0].resource) }),
            scope_spans: vec![proto::ScopeSpans {
                scope: Some(scope()),
                schema_url: SCHEMA_URL.into(),
                spans: group
                    .iter()
                    .map(|s| proto::Span {
                        trace_id: s.trace_id.to_vec(),
                        span_id: s.span_id.to_vec(),
                        parent_span_id: s.parent.map(|p| p.to_vec()).unwrap_or_default(),
                        name: s.name.clone(),
                        kind: s.kind as i32,
                        start_time_unix_nano: s.start_ns,
                        end_time_unix_nano: s.end_ns,
                        attributes: proto_attributes(&s.attributes),
                        events: s
                            .events
                            .iter()
                            .map(|e| proto::Event {
                                time_unix_nano: e.time_ns,
                                name: e.name.clone(),
                                attributes: proto_attributes(&e.attributes),
                            })
                            .collect(),
                        status: Some(proto::Status {
                            message: s.status.1.clone(),
                            code: s.status.0 as i32,
                        }),
                    })
                    .collect(),
            }],
        })
        .collect();
    proto::ExportTraceServiceRequest { resource_spans }.encode_to_vec()
}

/// What a collector's answer says it refused: `(rejected spans, its
/// message)`, from an `ExportTraceServiceResponse` in either encoding. An
/// empty or unreadable answer refuses nothing (a 2xx status accepted it).
pub fn rejected(encoding: Encoding, body: &[u8]) -> Option<(i64, String)> {
    let (count, message) = match encoding {
        Encoding::Protobuf => {
            let partial = proto::ExportTraceServiceResponse::decode(body).ok()?.partial_success?;
            (partial.rejected_spans, partial.error_message)
        }
        Encoding::Json => {
            let v: Value = serde_json::from_slice(body).ok()?;
            let partial = v.get("partialSuccess")?;
            // OTLP/JSON writes an int64 as a string; a number is accepted too.
            let count = match partial.get("rejectedSpans") {
                Some(Value::String(s)) => s.parse().ok()?,
                Some(n) => n.as_i64()?,
                None => 0,
            };
            let message = partial.get("errorMessage").and_then(Value::as_str).unwrap_or("");
            (count, message.to_string())
        }
    };
    (count > 0).then_some((count, message))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn json_value(value: &AttrValue) -> Value {
    match value {
        AttrValue::Str(s) => json!({"stringValue": s}),
        // OTLP/JSON writes int64 as a decimal string (proto3's JSON mapping).
        AttrValue::Int(i) => json!({"intValue": i.to_string()}),
        AttrValue::Double(d) => json!({"doubleValue": d}),
        AttrValue::Bool(b) => json!({"boolValue": b}),
        AttrValue::StrList(list) => {
            json!({"arrayValue": {"values": list.iter().map(|s| json!({"stringValue": s})).collect::<Vec<_>>()}})
        }
    }
}

fn json_attributes(attributes: &Attributes) -> Value {
    finite(attributes).map(|(key, value)| json!({"key": key, "value": json_value(value)})).collect()
}

/// The request as OTLP/JSON: field names in lowerCamelCase, trace and span
/// ids in hex (OTLP's exception to proto3's base64), 64-bit integers as
/// decimal strings, enums as numbers.
pub fn json(spans: &[Span]) -> Value {
    let resource_spans: Vec<Value> = by_resource(spans)
        .into_iter()
        .map(|group| {
            let spans: Vec<Value> = group
                .iter()
                .map(|s| {
                    let mut span = json!({
                        "traceId": hex(&s.trace_id),
                        "spanId": hex(&s.span_id),
                        "name": s.name,
                        "kind": s.kind as i32,
                        "startTimeUnixNano": s.start_ns.to_string(),
                        "endTimeUnixNano": s.end_ns.to_string(),
                        "attributes": json_attributes(&s.attributes),
                        "events": s.events.iter().map(|e| json!({
                            "timeUnixNano": e.time_ns.to_string(),
                            "name": e.name,
                            "attributes": json_attributes(&e.attributes),
                        })).collect::<Vec<_>>(),
                        "status": {"code": s.status.0 as i32, "message": s.status.1},
                    });
                    if let Some(parent) = s.parent {
                        span["parentSpanId"] = hex(&parent).into();
                    }
                    span
                })
                .collect();
            json!({
                "resource": {"attributes": json_attributes(&group[0].resource)},
                "scopeSpans": [{
                    "scope": {"name": SCOPE, "version": env!("CARGO_PKG_VERSION")},
                    "spans": spans,
                    "schemaUrl": SCHEMA_URL,
                }],
            })
        })
        .collect();
    json!({ "resourceSpans": resource_spans })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(resource: &str, id: u8) -> Span {
        Span {
            resource: vec![("device.id".into(), AttrValue::Str(resource.into()))],
            trace_id: [id; 16],
            span_id: [id; 8],
            parent: (id > 1).then_some([1; 8]),
            name: format!("chat {id}"),
            kind: SpanKind::Client,
            start_ns: 1_784_685_600_000_000_000,
            end_ns: 1_784_685_600_250_000_000,
            attributes: vec![
                ("gen_ai.operation.name".into(), AttrValue::Str("chat".into())),
                ("gen_ai.usage.input_tokens".into(), AttrValue::Int(-3)),
                ("x.double".into(), AttrValue::Double(0.5)),
                ("x.nan".into(), AttrValue::Double(f64::NAN)),
                ("x.flag".into(), AttrValue::Bool(true)),
                ("x.list".into(), AttrValue::StrList(vec!["time".into(), "tasks".into()])),
            ],
            events: vec![Event {
                name: "envaware.hint".into(),
                time_ns: 7,
                attributes: vec![("envaware.dimension".into(), AttrValue::Str("time".into()))],
            }],
            status: (StatusCode::Ok, String::new()),
        }
    }

    #[test]
    fn protobuf_decodes_back_to_every_field_grouped_by_resource() {
        let spans = [span("a", 1), span("a", 2), span("b", 3)];
        let request = proto::ExportTraceServiceRequest::decode(&protobuf(&spans)[..]).unwrap();
        assert_eq!(request.resource_spans.len(), 2, "a then b");
        let first = &request.resource_spans[0];
        assert_eq!(first.scope_spans[0].spans.len(), 2);
        assert_eq!(first.scope_spans[0].schema_url, SCHEMA_URL);
        let s = &first.scope_spans[0].spans[1];
        assert_eq!((s.trace_id.clone(), s.span_id.clone()), (vec![2; 16], vec![2; 8]));
        assert_eq!(s.parent_span_id, vec![1; 8]);
        assert!(first.scope_spans[0].spans[0].parent_span_id.is_empty(), "a root has none");
        assert_eq!((s.kind, s.start_time_unix_nano), (3, 1_784_685_600_000_000_000));
        let keys: Vec<&str> = s.attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(
            keys,
            ["gen_ai.operation.name", "gen_ai.usage.input_tokens", "x.double", "x.flag", "x.list"],
            "the NaN is left out"
        );
        assert_eq!(s.attributes[1].value.as_ref().unwrap().value, Some(proto::Value::Int(-3)));
        assert_eq!(s.events[0].name, "envaware.hint");
        assert_eq!(s.status.as_ref().unwrap().code, 1);
    }

    #[test]
    fn json_uses_hex_ids_string_integers_and_camel_case() {
        let v = json(&[span("a", 1), span("a", 171)]);
        let spans = &v["resourceSpans"][0]["scopeSpans"][0]["spans"];
        assert_eq!(spans[1]["traceId"], "abababababababababababababababab");
        assert_eq!(spans[1]["parentSpanId"], "0101010101010101");
        assert!(spans[0].get("parentSpanId").is_none());
        assert_eq!(spans[0]["startTimeUnixNano"], "1784685600000000000");
        assert_eq!(spans[0]["attributes"][1]["value"], json!({"intValue": "-3"}));
        assert_eq!(
            spans[0]["attributes"][4]["value"],
            json!({"arrayValue": {"values": [{"stringValue": "time"}, {"stringValue": "tasks"}]}})
        );
        assert_eq!(v["resourceSpans"][0]["resource"]["attributes"][0]["key"], "device.id");
    }

    #[test]
    fn a_partial_success_is_read_in_both_encodings() {
        let answer = proto::ExportTraceServiceResponse {
            partial_success: Some(proto::ExportTracePartialSuccess {
                rejected_spans: 2,
                error_message: "too old".into(),
            }),
        };
        assert_eq!(
            rejected(Encoding::Protobuf, &answer.encode_to_vec()),
            Some((2, "too old".into()))
        );
        assert_eq!(rejected(Encoding::Protobuf, b""), None, "an empty answer accepts all");
        let json = br#"{"partialSuccess": {"rejectedSpans": "1", "errorMessage": "bad"}}"#;
        assert_eq!(rejected(Encoding::Json, json), Some((1, "bad".into())));
        assert_eq!(rejected(Encoding::Json, br#"{"partialSuccess": {}}"#), None);
        assert_eq!(rejected(Encoding::Json, b"{}"), None);
    }
}
