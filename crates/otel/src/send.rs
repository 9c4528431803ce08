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

/// The URL spans are posted to: the endpoint as given when it ends in
/// `/v1/traces`, else with that path appended (as OTLP exporters do with
/// `OTEL_EXPORTER_OTLP_ENDPOINT`).
pub fn traces_url(endpoint: &str) -> String {
    let e = endpoint.trim_end_matches('/');
    if e.ends_with("/v1/traces") {
        e.to_string()
    } else {
        format!("{e}/v1/traces")
    }
}

/// POST the request; the HTTP status on success.
pub fn post(endpoint: &str, req: &ExportTraceServiceRequest) -> Result<u16> {
    let url = traces_url(endpoint);
    let body = req.encode_to_vec();
    let fail = |m: String| InputError::new(&url, m);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = reqwest::Client::builder()
        .user_agent(concat!("worldline/", env!("CARGO_PKG_VERSION")))
        .build()?;
    let sent = rt.block_on(async {
        tokio::time::timeout(LIMIT, async {
            let resp = client
                .post(&url)
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
            "cannot send spans: {e} (is an OTLP/HTTP collector listening there?)"
        ))
        .into()),
        Ok(Ok((status, _))) if (200..300).contains(&status) => Ok(status),
        Ok(Ok((status, text))) => Err(fail(format!(
            "the collector answered HTTP {status}: {}",
            text.chars().take(300).collect::<String>()
        ))
        .into()),
    }
}

/// Write the request as OTLP protobuf bytes (a new file, or a regular one
/// replaced).
pub fn write(path: &Path, req: &ExportTraceServiceRequest) -> Result<()> {
    Ok(worldline_case::output::write(path, &req.encode_to_vec())?)
}
