//! Newline-delimited framing (ACP over stdio: one JSON-RPC message per line).
//!
//! The reader hands out raw bytes, never parsed JSON: bad input is what the harness exists to
//! catch, so framing must not repair or drop anything. Only the `\n` terminator is removed; a `\r`
//! before it stays, so a client that writes CRLF is recorded as doing so.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// Default largest frame accepted: 16 MiB. Real frames (a whole file in `fs/read_text_file`) are
/// far smaller; the bound keeps a client that never writes `\n` from exhausting memory.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// One unit read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, without its `\n`.
    Line(Vec<u8>),
    /// A line longer than the maximum; its bytes were discarded up to and including the next `\n`
    /// (or EOF). `len` is its length without the `\n`.
    TooLong { len: usize },
    /// Bytes after the last `\n`, at EOF: the peer closed mid-line.
    Unterminated(Vec<u8>),
}

/// Reads newline-delimited frames from an async byte stream with bounded memory.
pub struct FrameReader<R> {
    inner: BufReader<R>,
    max: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// `max` is the largest frame (without `\n`) returned as [`Frame::Line`].
    pub fn new(reader: R, max: usize) -> Self {
        FrameReader {
            inner: BufReader::new(reader),
            max,
        }
    }

    /// The next frame, or `None` at a clean EOF (nothing after the last `\n`).
    pub async fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        let mut line = Vec::new();
        let mut len = 0usize;
        let mut too_long = false;
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                return Ok(match (len, too_long) {
                    (0, _) => None,
                    (_, true) => Some(Frame::TooLong { len }),
                    (_, false) => Some(Frame::Unterminated(line)),
                });
            }
            let (part, used, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            len = len.saturating_add(part.len());
            if !too_long {
                if len > self.max {
                    // Stop keeping bytes, but keep counting until the newline so the length
                    // can be reported and the next frame starts at the right place.
                    too_long = true;
                    line = Vec::new();
                } else {
                    line.extend_from_slice(part);
                }
            }
            self.inner.consume(used);
            if done {
                return Ok(Some(if too_long {
                    Frame::TooLong { len }
                } else {
                    Frame::Line(line)
                }));
            }
        }
    }
}

/// Writes one frame plus `\n` in a single write, then flushes, so a frame is never split by us
/// unless a scenario asks for it (see [`write_chunk`]).
pub async fn write_frame<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    frame: &[u8],
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(frame.len() + 1);
    buf.extend_from_slice(frame);
    buf.push(b'\n');
    w.write_all(&buf).await?;
    w.flush().await
}

/// Writes bytes as they are (no newline added) and flushes: one deliberate partial write.
pub async fn write_chunk<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    bytes: &[u8],
) -> io::Result<()> {
    w.write_all(bytes).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        // A tiny buffer forces lines to span several reads.
        let reader = tokio::io::BufReader::with_capacity(3, input);
        let mut fr = FrameReader::new(reader, max);
        let mut out = Vec::new();
        while let Some(f) = fr.next_frame().await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn splits_on_newline_and_keeps_bytes_verbatim() {
        let got = frames(b"{\"a\":1}\r\n\n\xff\xfe\nlast", 100).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"{\"a\":1}\r".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Line(vec![0xff, 0xfe]),
                Frame::Unterminated(b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn overlong_line_is_reported_and_skipped() {
        let got = frames(b"short\n0123456789abcdef\nok\n0123456789", 8).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"short".to_vec()),
                Frame::TooLong { len: 16 },
                Frame::Line(b"ok".to_vec()),
                Frame::TooLong { len: 10 },
            ]
        );
    }

    #[tokio::test]
    async fn exactly_max_is_accepted() {
        let got = frames(b"12345678\n", 8).await;
        assert_eq!(got, vec![Frame::Line(b"12345678".to_vec())]);
    }

    #[tokio::test]
    async fn writer_appends_newline() {
        let mut out = Vec::new();
        write_frame(&mut out, b"{}").await.unwrap();
        write_chunk(&mut out, b"{\"x\"").await.unwrap();
        assert_eq!(out, b"{}\n{\"x\"");
    }
}
