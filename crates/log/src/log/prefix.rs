//! Reading the start of a bundle (decision 0346): the header and the
//! events up to the one asked for, chained and checked as `bundle::parse`
//! checks them, and the footer found from the file's end, without parsing
//! the events in between. `show --at N`, `fork --at N` and `history`'s
//! first pages cost the events they show, not the run's length.

use super::bundle::{self, BundleError, HeldBundle, Reader};
use std::io::{BufRead as _, Read as _, Seek as _, SeekFrom};
use std::path::Path;

/// The most bytes read back from the end to find the footer line (its
/// stdout, stderr and output are bounded, decision 0040).
const FOOTER_MAX: u64 = 64 * 1024 * 1024;

/// The bundle at `path` with only its first `upto` events (all of them
/// when it has fewer, or when it has no footer: an incomplete run's end is
/// known only by reading it), model requests held compact as the lines
/// hold them (decision 0380); its footer's own hash is checked, but not
/// that it ends the chain (`verify` and `replay` read everything).
pub fn read_held(path: &Path, upto: u64) -> Result<HeldBundle, BundleError> {
    let (header, reader) = read_lines(path, upto)?;
    Ok(reader.finish_held(header))
}

/// The header and the lines [`read_held`] reads (every line, when the footer
/// is not found from the end).
fn read_lines(path: &Path, upto: u64) -> Result<(bundle::Header, Reader<'_>), BundleError> {
    let err = |line: usize, message: String| BundleError {
        path: path.display().to_string(),
        line,
        message,
    };
    let mut file = worldline_case::bounded::open(path)
        .map_err(|e| err(0, format!("cannot read bundle: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| err(0, format!("cannot read bundle: {e}")))?
        .len();
    // Past the cap the file is not read at all (it was read to the cap).
    if len > worldline_case::bounded::BUNDLE {
        return Err(err(
            0,
            format!(
                "cannot read bundle: {}",
                worldline_case::bounded::Refused::TooLarge(worldline_case::bounded::BUNDLE)
            ),
        ));
    }
    let mut lines = std::io::BufReader::new((&mut file).take(worldline_case::bounded::BUNDLE));
    let mut buf = Vec::new();
    let mut header = None;
    let mut line_hash = String::new();
    let mut reader = Reader::new(path);
    let (mut n, mut consumed) = (0, 0);
    loop {
        buf.clear();
        // The header line is looked for no further than its cap.
        let read = match header {
            None => (&mut lines)
                .take(bundle::HEADER_MAX)
                .read_until(b'\n', &mut buf),
            Some(_) => lines.read_until(b'\n', &mut buf),
        };
        read.map_err(|e| err(n + 1, format!("cannot read bundle: {e}")))?;
        n += 1;
        consumed += buf.len() as u64;
        if !buf.ends_with(b"\n") {
            // The end, or a torn last line, or a footer that lost its newline.
            if header.is_some()
                && reader.footer.is_none()
                && let Some(line) = bundle::unended_footer(&buf)
            {
                reader.line(n, line)?;
            }
            break;
        }
        let line = std::str::from_utf8(&buf).map_err(|e| err(n, format!("not UTF-8: {e}")))?;
        match &header {
            None => {
                line_hash = bundle::header_line_hash(line);
                header = Some(bundle::header_of(line, path)?);
            }
            Some(_) => reader.line(n, line)?,
        }
        if header.is_some() && reader.events.len() as u64 >= upto && reader.footer.is_none() {
            // Enough: the footer from the end, if the run has one.
            if let Some(footer) = last_footer(&mut file, consumed, len, path)? {
                reader.footer = Some(footer);
                break;
            }
            return bundle::read_lines_of(path);
        }
    }
    let Some(header) = header else {
        let mut start = [0u8; 64];
        let read = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut start))
            .unwrap_or(0);
        if let Some(said) = bundle::an_export(&start[..read]) {
            return Err(err(1, said));
        }
        if consumed >= bundle::HEADER_MAX {
            return Err(err(1, bundle::header_too_long()));
        }
        return Err(err(
            1,
            "no header: the run was cut off as its bundle was created (killed, or the disk was full); nothing of it was recorded".into(),
        ));
    };
    bundle::check_header(reader.footer.as_ref(), &line_hash).map_err(|m| err(1, m))?;
    Ok((header, reader))
}

/// The footer on the last line of the file (`len` bytes, `read` of them
/// already read), when it is one: `None` for a run without a footer.
fn last_footer(
    file: &mut std::fs::File,
    read: u64,
    len: u64,
    path: &Path,
) -> Result<Option<bundle::Footer>, BundleError> {
    let err = |message: String| BundleError {
        path: path.display().to_string(),
        line: 0,
        message,
    };
    let mut window = 64 * 1024;
    loop {
        let start = len.saturating_sub(window).max(read);
        file.seek(SeekFrom::Start(start))
            .map_err(|e| err(format!("cannot read bundle: {e}")))?;
        let mut tail = Vec::with_capacity((len - start) as usize);
        file.take(len - start)
            .read_to_end(&mut tail)
            .map_err(|e| err(format!("cannot read bundle: {e}")))?;
        if !tail.ends_with(b"\n") {
            let last = tail.iter().rposition(|&b| b == b'\n');
            if last.is_none() && start > read && window < FOOTER_MAX {
                window *= 4;
                continue;
            }
            // A footer whole but for its newline.
            let torn = &tail[last.map_or(0, |i| i + 1)..];
            if let Some(line) = bundle::unended_footer(torn) {
                return bundle::footer_of_line(line.as_bytes())
                    .map(Some)
                    .map_err(err);
            }
            // Torn: no footer was written whole, unless the torn bytes
            // come after one, which no run writes.
            let whole = last.map(|end| &tail[..end]);
            if whole.is_some_and(|w| {
                let from = w.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                w[from..].starts_with(b"{\"footer\":")
            }) {
                return Err(err("data after the footer".into()));
            }
            return Ok(None);
        }
        let body = &tail[..tail.len() - 1];
        let line = match body.iter().rposition(|&b| b == b'\n') {
            Some(i) => &body[i + 1..],
            None if start == read => body,
            None if window >= FOOTER_MAX => {
                return Err(err(format!(
                    "its last line is over {FOOTER_MAX} bytes: not a footer worldline writes"
                )));
            }
            None => {
                window *= 4;
                continue;
            }
        };
        if !line.starts_with(b"{\"footer\":") {
            return Ok(None);
        }
        return bundle::footer_of_line(line).map(Some).map_err(err);
    }
}
