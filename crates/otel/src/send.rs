//! Delivering OTLP trace requests (a run's spans in batches), each as it
//! is made: POSTed to an OTLP/HTTP endpoint as protobuf
//! (`<endpoint>/v1/traces`), or written to a file after the one before.
//! A redirect is an error naming where it points, never followed.

use anyhow::Result;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message as _;
use std::time::Duration;
use worldline_case::error::InputError;

/// How long the endpoint has to answer.
const LIMIT: Duration = Duration::from_secs(30);

/// The URL spans are posted to: the endpoint's path with `/v1/traces`
/// joined to it unless it ends so (as OTLP exporters do with
/// `OTEL_EXPORTER_OTLP_ENDPOINT`), a query kept after it (it was put
/// after the query, so the spans went to `/`).
pub fn traces_url(endpoint: &str) -> Result<reqwest::Url, InputError> {
    let refused = |why: String| InputError::new("--endpoint", why);
    let mut url = reqwest::Url::parse(endpoint).map_err(|e| {
        refused(format!(
            "is not a URL ({e}); give e.g. http://127.0.0.1:4318"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refused(format!(
            "`{}` is not an http or https URL",
            shown(&url)
        )));
    }
    let path = url.path().trim_end_matches('/').to_string();
    if !path.ends_with("/v1/traces") {
        url.set_path(&format!("{path}/v1/traces"));
    }
    Ok(url)
}

/// `url` as it is printed (the summary, an error): its password, if it
/// holds one, replaced by `***`.
pub fn shown(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    url.to_string()
}

/// A collector's answer to spans it took.
#[derive(Debug, Default, PartialEq)]
pub struct Answered {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The spans it rejected (OTLP's partial success: an answer of 200
    /// with `partial_success.rejected_spans`); 0 when it took them all.
    pub rejected_spans: u64,
    /// What it said with its partial success (a reason, or a warning
    /// with every span taken), when it said something.
    pub message: Option<String>,
}

/// The partial success a 2xx answer's body holds (an
/// `ExportTraceServiceResponse`, protobuf or, when its content type says
/// so, JSON): how many spans were rejected and the collector's message.
/// An answer that holds none, or cannot be read as one, says nothing.
fn partial_success(content_type: &str, body: &[u8]) -> (u64, Option<String>) {
    let (rejected, message) = if content_type.to_ascii_lowercase().contains("json") {
        let Ok(doc) = serde_json::from_slice::<serde_json::Value>(body) else {
            return (0, None);
        };
        let field = |v: &serde_json::Value, camel: &str, snake: &str| {
            v.get(camel).or_else(|| v.get(snake)).cloned()
        };
        let Some(ps) = field(&doc, "partialSuccess", "partial_success") else {
            return (0, None);
        };
        // An int64 is a decimal string in OTLP JSON, or a number.
        let rejected = match field(&ps, "rejectedSpans", "rejected_spans") {
            Some(serde_json::Value::String(t)) => t.parse::<i64>().unwrap_or(0),
            Some(v) => v.as_i64().unwrap_or(0),
            None => 0,
        };
        let message = field(&ps, "errorMessage", "error_message")
            .and_then(|m| m.as_str().map(String::from))
            .unwrap_or_default();
        (rejected, message)
    } else {
        match ExportTraceServiceResponse::decode(body) {
            Ok(r) => r
                .partial_success
                .map_or((0, String::new()), |p| (p.rejected_spans, p.error_message)),
            Err(_) => return (0, None),
        }
    };
    let message = one_line(&message).chars().take(300).collect::<String>();
    (
        u64::try_from(rejected).unwrap_or(0),
        (!message.is_empty()).then_some(message),
    )
}

/// POSTs requests to [`traces_url`]'s URL one after another as they are
/// made, each given [`LIMIT`], and gathers the collector's answers.
pub struct Poster {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
    url: reqwest::Url,
    sent: usize,
    all: Answered,
}

impl Poster {
    pub fn new(url: &reqwest::Url) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // A redirect is not followed: it could send the spans (their
        // content too, with `--content`) to a host the user never named,
        // and the summary would name the URL they did not go to.
        let client = reqwest::Client::builder()
            .user_agent(concat!("worldline/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Poster {
            rt,
            client,
            url: url.clone(),
            sent: 0,
            all: Answered::default(),
        })
    }

    /// POST `req`. A request the collector refuses is an error saying
    /// which it was when others were taken before it (then nothing more
    /// should be sent).
    pub fn post(&mut self, req: &ExportTraceServiceRequest) -> Result<(), InputError> {
        let which = match self.sent {
            0 => String::new(),
            n => format!(" (request {}; the {n} before it were taken)", n + 1),
        };
        let url = &self.url;
        let one = post_one(&self.rt, &self.client, url, req.encode_to_vec())
            .map_err(|e| InputError::new(shown(url), format!("{}{which}", e.message)))?;
        self.sent += 1;
        self.all.status = one.status;
        self.all.rejected_spans += one.rejected_spans;
        self.all.message = self.all.message.take().or(one.message);
        Ok(())
    }

    /// The collector's answers: the last status, the spans rejected in
    /// all, and the first message it gave.
    pub fn answered(self) -> Answered {
        self.all
    }
}

/// POST one request's body.
fn post_one(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    url: &reqwest::Url,
    body: Vec<u8>,
) -> Result<Answered, InputError> {
    let fail = |m: String| InputError::new(shown(url), m);
    let sent = rt.block_on(async {
        tokio::time::timeout(LIMIT, async {
            let resp = client
                .post(url.clone())
                .header("content-type", "application/x-protobuf")
                .body(body)
                .send()
                .await?;
            let status = resp.status().as_u16();
            let location = (resp.headers().get(reqwest::header::LOCATION))
                .and_then(|v| v.to_str().ok())
                .map(|l| url.join(l).map_or_else(|_| l.to_string(), |u| shown(&u)));
            let content_type = (resp.headers().get(reqwest::header::CONTENT_TYPE))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            // Only the status, the partial success a 2xx answer holds and
            // the start of an error's answer are used; an answer past the
            // cap is not read further.
            let body = match worldline_case::bounded::body(
                resp.content_length(),
                resp.bytes_stream(),
                worldline_case::bounded::COLLECTOR_ANSWER,
            )
            .await
            {
                Ok(bytes) => Ok(bytes),
                Err(worldline_case::bounded::BodyError::TooLarge(cap)) => Err(format!(
                    "(an answer larger than the cap on a collector's answer, {}, not read)",
                    worldline_case::bounded::size(cap)
                )),
                Err(worldline_case::bounded::BodyError::Http(e)) => {
                    Err(format!("(the answer broke off: {e})"))
                }
            };
            Ok::<_, reqwest::Error>((status, content_type, body, location))
        })
        .await
    });
    match sent {
        Err(_) => Err(fail(format!("no answer within {} s", LIMIT.as_secs()))),
        Ok(Err(e)) => Err(fail(format!(
            "cannot send spans: {} (is an OTLP/HTTP collector listening there?)",
            e.without_url()
        ))),
        Ok(Ok((status, content_type, body, _))) if (200..300).contains(&status) => {
            let (rejected_spans, message) = body
                .map(|b| partial_success(&content_type, &b))
                .unwrap_or((0, None));
            Ok(Answered {
                status,
                rejected_spans,
                message,
            })
        }
        Ok(Ok((status, _, _, Some(location)))) if (300..400).contains(&status) => {
            Err(fail(format!(
                "the collector answered HTTP {status} and points to {}; spans are not sent where a redirect leads: pass that URL as --endpoint",
                one_line(&location).chars().take(300).collect::<String>()
            )))
        }
        // Its body on one line (a collector's pretty-printed JSON ran
        // over several, where an error is one line).
        Ok(Ok((status, _, body, _))) => {
            let text = body.map_or_else(|why| why, |b| String::from_utf8_lossy(&b).into_owned());
            Err(fail(format!(
                "the collector answered HTTP {status}: {}",
                one_line(&text).chars().take(300).collect::<String>()
            )))
        }
    }
}

/// `text` with each run of whitespace (line breaks and tabs too) one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Write `req`'s protobuf body to `out`: the bodies of an export's
/// requests one after another are what protobuf reads as one request
/// holding every batch's resource spans (concatenated messages merge,
/// their lists joined), as `case from-trace` reads it.
pub fn write_one(out: &mut dyn std::io::Write, req: &ExportTraceServiceRequest) -> Result<()> {
    out.write_all(&req.encode_to_vec())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partial success is read from protobuf and from JSON (camel or
    /// snake case, an int64 as a string or a number); an answer without
    /// one, or that is neither, says nothing.
    #[test]
    fn a_partial_success_is_read_from_protobuf_and_json() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTracePartialSuccess;
        let pb = ExportTraceServiceResponse {
            partial_success: Some(ExportTracePartialSuccess {
                rejected_spans: 3,
                error_message: "attribute\ntoo long".into(),
            }),
        }
        .encode_to_vec();
        let said = |n: u64, m: &str| (n, Some(m.to_string()));
        assert_eq!(
            partial_success("application/x-protobuf", &pb),
            said(3, "attribute too long")
        );
        assert_eq!(partial_success("", &pb), said(3, "attribute too long"));
        for json in [
            r#"{"partialSuccess":{"rejectedSpans":"2","errorMessage":"dropped"}}"#,
            r#"{"partial_success":{"rejected_spans":2,"error_message":"dropped"}}"#,
        ] {
            assert_eq!(
                partial_success("application/json; charset=utf-8", json.as_bytes()),
                said(2, "dropped")
            );
        }
        // A warning with every span taken.
        assert_eq!(
            partial_success(
                "application/json",
                br#"{"partialSuccess":{"errorMessage":"slow down"}}"#
            ),
            said(0, "slow down")
        );
        for (ct, body) in [
            ("application/x-protobuf", &b""[..]),
            ("application/json", b"{}"),
            ("application/json", b"not json"),
            ("application/x-protobuf", b"\xff\xff"),
        ] {
            assert_eq!(partial_success(ct, body), (0, None), "{ct} {body:?}");
        }
    }

    #[test]
    fn the_traces_path_is_joined_to_the_endpoint_s_path_and_a_password_never_shown() {
        let url = |e: &str| traces_url(e).unwrap().to_string();
        assert_eq!(
            url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(url("http://h:1/otlp/"), "http://h:1/otlp/v1/traces");
        assert_eq!(url("https://h/v1/traces"), "https://h/v1/traces");
        // Once `http://h:1?token=abc/v1/traces`: posted to `/`.
        assert_eq!(
            url("http://h:1?token=abc"),
            "http://h:1/v1/traces?token=abc"
        );
        let secret = traces_url("http://user:pw@h:1").unwrap();
        assert_eq!(shown(&secret), "http://user:***@h:1/v1/traces");
        assert!(traces_url("127.0.0.1:4318").is_err());
        let ftp = traces_url("ftp://u:pw@h").unwrap_err().to_string();
        assert!(ftp.contains("not an http") && !ftp.contains("pw"), "{ftp}");
    }
}
