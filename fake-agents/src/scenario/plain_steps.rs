//! A fast reader for the common shape of a large scenario: from the first `[[step]]` on, only
//! `[[step]]` tables of one-line `key = scalar` entries (what a generated stream of 10⁵ `send`
//! steps is). The toml crate spends about 2.5 µs a step building its document tree and reading
//! it back through serde; this reads such steps straight into [`RawStep`]s.
//!
//! It only ever *accepts* text whose meaning it knows for certain, and declines (returns `None`)
//! on anything else — a multi-line or escaped string, an inline table, a dotted or quoted key,
//! a key of the wrong type or given twice, a `\r`, a control character. On `None` the caller
//! reads the whole file with the toml crate as before, so every TOML or shape error keeps its
//! text and position. What it accepts it reads to exactly what toml and serde give, spans
//! included (the tests compare both on every shipped scenario and on mutated copies).

use acp_vocab::split_work;
use toml::Spanned;

use super::raw::{BoxedStep, RawFile, RawStep, S};

/// The file read through the fast path, or `None` when the caller must use the toml crate.
pub fn read(text: &str) -> Option<RawFile> {
    let tail_start = first_step_header(text)?;
    if text.as_bytes()[tail_start..].contains(&b'\r') {
        return None;
    }
    let steps = read_tail(text, tail_start)?;
    // The part before the first `[[step]]` is a whole TOML document by itself (it ends at a line
    // start outside any header), with the same byte offsets: the toml crate reads it. A string
    // or array left open there is an error here, and then the whole file is read by toml.
    let mut raw: RawFile = toml::from_str(&text[..tail_start]).ok()?;
    if raw.step.is_some() {
        // `step` was defined before the `[[step]]` headers (a TOML error in the whole file).
        return None;
    }
    raw.step = Some(steps);
    Some(raw)
}

const HEADER: &str = "[[step]]";

/// The offset of the first line that starts with `[[step]]`.
fn first_step_header(text: &str) -> Option<usize> {
    if text.starts_with(HEADER) {
        return Some(0);
    }
    text.match_indices("\n[[step]]")
        .next()
        .map(|(at, _)| at + 1)
}

/// A tail shorter than this is read on one thread (a thread costs tens of microseconds, about
/// what 10 KB of steps take; hand-written scenarios are a few KB).
const PARALLEL_FROM_BYTES: usize = 256 << 10;

/// Every step from `start` to the end of the text. A long tail is read in two halves at once,
/// cut at a `[[step]]` header: each line is read alone and each half starts a step, so the two
/// halves read to what one pass reads.
fn read_tail(text: &str, start: usize) -> Option<Vec<Spanned<BoxedStep>>> {
    // Asked only of a long tail: on Linux the answer reads the cgroup's files.
    let cores = || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mut halfway = start + (text.len() - start) / 2;
    while !text.is_char_boundary(halfway) {
        halfway += 1; // the end of the text is a boundary
    }
    let mid = (text.len() - start >= PARALLEL_FROM_BYTES && cores() > 1)
        .then(|| text[halfway..].find("\n[[step]]"))
        .flatten()
        .map(|n| halfway + n + 1);
    let Some(mid) = mid else {
        return read_steps(text, start, text.len());
    };
    // The second half on another thread (or here, after the first, if none can be started).
    let (first, second) = split_work::alongside(
        "scenario-read",
        || read_steps(text, start, mid),
        [(mid, text.len())],
        |(from, to)| read_steps(text, from, to),
    );
    let mut steps = first?;
    for half in second {
        steps.extend(half?);
    }
    Some(steps)
}

/// Every step from `start` (a `[[step]]` header) to `end` (a line start or the end of the
/// text), or `None` if any line is not a plain header, comment, blank or `key = scalar` line.
fn read_steps(text: &str, start: usize, end: usize) -> Option<Vec<Spanned<BoxedStep>>> {
    let mut steps: Vec<Spanned<BoxedStep>> = Vec::new();
    let mut line_start = start;
    while line_start < end {
        let line_end = text[line_start..end]
            .find('\n')
            .map_or(end, |n| line_start + n);
        let line = Line {
            text,
            at: skip_ws(text.as_bytes(), line_start, line_end),
            end: line_end,
        };
        read_line(line, &mut steps)?;
        line_start = line_end + 1;
    }
    Some(steps)
}

/// One line of the tail, from its first non-blank byte.
#[derive(Clone, Copy)]
struct Line<'t> {
    text: &'t str,
    at: usize,
    end: usize,
}

impl<'t> Line<'t> {
    fn rest(&self) -> &'t [u8] {
        &self.text.as_bytes()[self.at..self.end]
    }
}

fn read_line(line: Line<'_>, steps: &mut Vec<Spanned<BoxedStep>>) -> Option<()> {
    let rest = line.rest();
    match rest.first() {
        None => Some(()),
        Some(b'#') => plain_comment(rest),
        Some(b'[') => {
            if !rest.starts_with(HEADER.as_bytes()) {
                return None;
            }
            let after = line.at + HEADER.len();
            line_end_ok(line.text.as_bytes(), after, line.end)?;
            steps.push(Spanned::new(line.at..after, Box::default()));
            Some(())
        }
        Some(_) => {
            let step = steps.last_mut()?.get_mut();
            read_entry(line, step)
        }
    }
}

/// `key = value`, with an optional comment after it.
fn read_entry(line: Line<'_>, step: &mut RawStep) -> Option<()> {
    let bytes = line.text.as_bytes();
    let key_len = line
        .rest()
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        .count();
    if key_len == 0 {
        return None;
    }
    let key = &line.text[line.at..line.at + key_len];
    let eq = skip_ws(bytes, line.at + key_len, line.end);
    if bytes.get(eq) != Some(&b'=') || eq >= line.end {
        return None;
    }
    let value_at = skip_ws(bytes, eq + 1, line.end);
    let (value, value_end) = scalar(line.text, value_at, line.end)?;
    line_end_ok(bytes, value_end, line.end)?;
    set(step, key, value)
}

/// A one-line scalar value.
enum Scalar {
    Str(S),
    Bool(Spanned<bool>),
    Int(Spanned<u64>),
}

/// The scalar starting at `at` and where it ends; `None` for any value this reader does not
/// take (multi-line or escaped strings, floats, dates, signed or `_` numbers, arrays, tables).
fn scalar(text: &str, at: usize, end: usize) -> Option<(Scalar, usize)> {
    let bytes = &text.as_bytes()[..end];
    match bytes.get(at)? {
        quote @ (b'\'' | b'"') => {
            if bytes.get(at + 1) == Some(quote) && bytes.get(at + 2) == Some(quote) {
                return None; // a multi-line string
            }
            let len = text[at + 1..end].find(char::from(*quote))?;
            let content = &text[at + 1..at + 1 + len];
            // In a basic string a backslash starts an escape; control characters other than
            // tab are not allowed in either kind. (One pass without an early exit: it
            // vectorises, and a frame is a few hundred bytes.)
            let basic = *quote == b'"';
            let refused = content.bytes().fold(false, |refused, b| {
                refused | is_control(b) | (basic & (b == b'\\'))
            });
            if refused {
                return None;
            }
            let close = at + 1 + len + 1;
            Some((
                Scalar::Str(Spanned::new(at..close, content.to_owned())),
                close,
            ))
        }
        b't' | b'f' => {
            let word = bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric())
                .count();
            let value = match &bytes[at..at + word] {
                b"true" => true,
                b"false" => false,
                _ => return None,
            };
            Some((Scalar::Bool(Spanned::new(at..at + word, value)), at + word))
        }
        b'0'..=b'9' => {
            let len = bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let digits = &text[at..at + len];
            if len > 1 && digits.starts_with('0') {
                return None; // leading zeros are a TOML error
            }
            // TOML integers are i64; anything after the digits (`.`, `e`, `_`, `-`, `:`) makes
            // it something else, which the end-of-line check refuses.
            let value: i64 = digits.parse().ok()?;
            let value = u64::try_from(value).ok()?;
            Some((Scalar::Int(Spanned::new(at..at + len, value)), at + len))
        }
        _ => None,
    }
}

/// Puts `value` into the step's slot for `key`; `None` for a key this reader does not take
/// (tables, arrays, unknown keys), a value of the wrong type or a key given twice.
fn set(step: &mut RawStep, key: &str, value: Scalar) -> Option<()> {
    fn put<T>(slot: &mut Option<T>, value: T) -> Option<()> {
        if slot.is_some() {
            return None;
        }
        *slot = Some(value);
        Some(())
    }
    match value {
        Scalar::Str(s) => {
            let slot = match key {
                "expect" => &mut step.expect,
                "reply_to" => &mut step.reply_to,
                "send" => &mut step.send,
                "await" => &mut step.await_,
                "fault" => &mut step.fault,
                "user" => &mut step.user,
                "as" => &mut step.as_,
                "match" => &mut step.match_,
                "reply" => &mut step.reply,
                "reply_error" => &mut step.reply_error,
                "result" => &mut step.result,
                "error" => &mut step.error,
                "frame" => &mut step.frame,
                "line" => &mut step.line,
                "session" => &mut step.session,
                "cwd" => &mut step.cwd,
                "text" => &mut step.text,
                "request" => &mut step.request,
                "kind" => &mut step.kind,
                "option" => &mut step.option,
                "pending" => &mut step.pending,
                "session_id" => &mut step.session_id,
                "mode" => &mut step.mode,
                "config" => &mut step.config,
                "value" => &mut step.value,
                _ => return None,
            };
            put(slot, Box::new(s))
        }
        Scalar::Bool(b) => {
            let slot = match key {
                "handshake" => &mut step.handshake,
                "each" => &mut step.each,
                _ => return None,
            };
            put(slot, b)
        }
        Scalar::Int(n) => {
            let slot = match key {
                "delay_ms" => &mut step.delay_ms,
                "timeout_ms" => &mut step.timeout_ms,
                "at" => &mut step.at,
                _ => return None,
            };
            put(slot, n)
        }
    }
}

/// After a header or a value: only blanks, then an optional comment.
fn line_end_ok(bytes: &[u8], at: usize, end: usize) -> Option<()> {
    let at = skip_ws(bytes, at, end);
    if at == end {
        return Some(());
    }
    (bytes[at] == b'#').then_some(())?;
    plain_comment(&bytes[at..end])
}

/// A comment holds no control character other than tab.
fn plain_comment(comment: &[u8]) -> Option<()> {
    (!comment.iter().any(|&b| is_control(b))).then_some(())
}

fn is_control(b: u8) -> bool {
    (b < 0x20) & (b != b'\t') | (b == 0x7f)
}

fn skip_ws(bytes: &[u8], mut at: usize, end: usize) -> usize {
    while at < end && matches!(bytes[at], b' ' | b'\t') {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests;
