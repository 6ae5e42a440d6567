//! OTLP over HTTP: one `POST {URL}/v1/traces` per batch of spans.

use std::time::Duration;

use super::otlp::{self, Encoding, Span};
use super::ExportError;

/// A collector (an OpenTelemetry Collector, Phoenix, Jaeger, Langfuse…)
/// reached over plain HTTP.
#[derive(Debug)]
pub struct Collector {
    agent: ureq::Agent,
    /// Where requests go: the URL given, with `/v1/traces` added.
    pub endpoint: String,
    encoding: Encoding,
}

/// The traces endpoint of a collector's URL: `http://host:port[/path]`,
/// `/v1/traces` added unless it is there already (as OTLP exporters take
/// `OTEL_EXPORTER_OTLP_ENDPOINT`).
///
/// # Errors
///
/// [`ExportError::Url`] when it is not `http://` with a host.
pub fn endpoint(url: &str) -> Result<String, ExportError> {
    let bad = |why: &str| ExportError::Url { url: url.to_string(), why: why.to_string() };
    if url.starts_with("https://") {
        return Err(bad("https is not supported: envaware-sim is built without TLS (send to a collector on plain http://, on the machine or the LAN)"));
    }
    let rest = url.strip_prefix("http://").ok_or_else(|| bad("expected http://HOST:PORT"))?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(bad("expected http://HOST:PORT"));
    }
    let base = url.trim_end_matches('/');
    Ok(if base.ends_with("/v1/traces") { base.to_string() } else { format!("{base}/v1/traces") })
}

impl Collector {
    /// A client for `url` (see [`endpoint`]); each request is bounded by
    /// `timeout`.
    ///
    /// # Errors
    ///
    /// [`ExportError::Url`] for a URL that is not plain `http://`.
    pub fn new(url: &str, encoding: Encoding, timeout: Duration) -> Result<Self, ExportError> {
        let endpoint = endpoint(url)?;
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            // A refusal's body says why: read it rather than fail on the status.
            .http_status_as_error(false)
            .build();
        Ok(Collector { agent: ureq::Agent::new_with_config(config), endpoint, encoding })
    }

    /// Sends `spans` in one request; an empty batch sends nothing.
    ///
    /// # Errors
    ///
    /// [`ExportError::Unreachable`] when no answer came, [`ExportError::Refused`]
    /// on a status other than 2xx, [`ExportError::Rejected`] when a 2xx
    /// answer says some spans were rejected (OTLP's partial success).
    pub fn send(&self, spans: &[Span]) -> Result<(), ExportError> {
        if spans.is_empty() {
            return Ok(());
        }
        let unreachable = |e: ureq::Error| ExportError::Unreachable {
            url: self.endpoint.clone(),
            error: e.to_string(),
        };
        let body = self.encoding.body(spans);
        let mut answer = self
            .agent
            .post(&self.endpoint)
            .header("Content-Type", self.encoding.content_type())
            .send(&body[..])
            .map_err(unreachable)?;
        let status = answer.status().as_u16();
        let reply =
            answer.body_mut().with_config().limit(1 << 20).read_to_vec().unwrap_or_default();
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&reply);
            let text = text.trim();
            let hint = match (status, self.encoding) {
                (415, Encoding::Json) => " (the collector does not take OTLP/JSON: Phoenix takes protobuf only; use --encoding protobuf)",
                (404, _) => " (no OTLP traces endpoint there: is it the collector's HTTP port, 4318 for a Collector, 6006 for Phoenix?)",
                _ => "",
            };
            return Err(ExportError::Refused {
                url: self.endpoint.clone(),
                status,
                body: text.chars().take(300).collect::<String>() + hint,
            });
        }
        match otlp::rejected(self.encoding, &reply) {
            Some((count, message)) => Err(ExportError::Rejected {
                url: self.endpoint.clone(),
                rejected: count,
                sent: spans.len(),
                message,
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_added_once_and_other_urls_are_refused_naming_them() {
        assert_eq!(endpoint("http://127.0.0.1:6006").unwrap(), "http://127.0.0.1:6006/v1/traces");
        assert_eq!(endpoint("http://h:4318/").unwrap(), "http://h:4318/v1/traces");
        assert_eq!(endpoint("http://h/otel/v1/traces").unwrap(), "http://h/otel/v1/traces");
        assert_eq!(endpoint("http://h/otel").unwrap(), "http://h/otel/v1/traces");
        for (url, why) in [
            ("https://h:4318", "https is not supported"),
            ("127.0.0.1:4318", "expected http://HOST:PORT"),
            ("http://", "expected http://HOST:PORT"),
            ("http:///v1/traces", "expected http://HOST:PORT"),
        ] {
            let e = endpoint(url).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--otlp {url}: {why}")), "{e}");
        }
    }
}
