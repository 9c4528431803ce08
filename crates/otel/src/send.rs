//! Delivering an OTLP trace request: POSTed to an OTLP/HTTP endpoint as
//! protobuf (`<endpoint>/v1/traces`), or written to a file.

use anyhow::Result;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use std::path::Path;
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

/// POST the request to [`traces_url`]'s URL; the HTTP status on success.
pub fn post(url: &reqwest::Url, req: &ExportTraceServiceRequest) -> Result<u16> {
    let body = req.encode_to_vec();
    let fail = |m: String| InputError::new(shown(url), m);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = reqwest::Client::builder()
        .user_agent(concat!("worldline/", env!("CARGO_PKG_VERSION")))
        .build()?;
    let sent = rt.block_on(async {
        tokio::time::timeout(LIMIT, async {
            let resp = client
                .post(url.clone())
                .header("content-type", "application/x-protobuf")
                .body(body)
                .send()
                .await?;
            let status = resp.status().as_u16();
            // Only the status and the start of the answer are used; an
            // answer past the cap is not read further.
            let text = match worldline_case::bounded::body(
                resp.content_length(),
                resp.bytes_stream(),
                worldline_case::bounded::COLLECTOR_ANSWER,
            )
            .await
            {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(worldline_case::bounded::BodyError::TooLarge(cap)) => format!(
                    "(an answer larger than the cap on a collector's answer, {}, not read)",
                    worldline_case::bounded::size(cap)
                ),
                Err(worldline_case::bounded::BodyError::Http(e)) => {
                    format!("(the answer broke off: {e})")
                }
            };
            Ok::<_, reqwest::Error>((status, text))
        })
        .await
    });
    match sent {
        Err(_) => Err(fail(format!("no answer within {} s", LIMIT.as_secs())).into()),
        Ok(Err(e)) => Err(fail(format!(
            "cannot send spans: {} (is an OTLP/HTTP collector listening there?)",
            e.without_url()
        ))
        .into()),
        Ok(Ok((status, _))) if (200..300).contains(&status) => Ok(status),
        // Its body on one line (a collector's pretty-printed JSON ran
        // over several, where an error is one line).
        Ok(Ok((status, text))) => Err(fail(format!(
            "the collector answered HTTP {status}: {}",
            one_line(&text).chars().take(300).collect::<String>()
        ))
        .into()),
    }
}

/// `text` with each run of whitespace (line breaks and tabs too) one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Write the request as OTLP protobuf bytes (a new file, or a regular one
/// replaced).
pub fn write(path: &Path, req: &ExportTraceServiceRequest) -> Result<()> {
    Ok(worldline_case::output::write(path, &req.encode_to_vec())?)
}

/// The request as OTLP/HTTP's protobuf body, for a writer the caller holds
/// (`otel -o -`: stdout).
pub fn to_writer(out: &mut impl std::io::Write, req: &ExportTraceServiceRequest) -> Result<()> {
    out.write_all(&req.encode_to_vec())?;
    Ok(out.flush()?)
}

#[cfg(test)]
mod tests {
    use super::*;

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
