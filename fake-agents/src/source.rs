//! Positions in a source file: byte offsets to `line:column`, and offsets inside a TOML string
//! back to offsets in the file.
//!
//! Scenario frames are JSON written inside TOML literal strings (`'…'`, `'''…'''`), whose content
//! is the file's bytes unchanged, so a JSON error or a template variable inside a frame can be
//! reported at its exact place in the file. Basic strings (`"…"`) have escapes, so positions
//! inside them point at the string's start instead.

use std::ops::Range;

/// A source text with its line starts, for turning byte offsets into 1-based `line:column`.
/// Columns count characters (Unicode scalar values), as editors do.
pub struct SourceText<'a> {
    text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> SourceText<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut line_starts = vec![0];
        // A char search (memchr), not a byte-by-byte filter: a long scenario's text is megabytes.
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceText { text, line_starts }
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// 1-based line and column of a byte offset (clamped to the text).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_starts.partition_point(|&s| s <= offset);
        let start = self.line_starts[line - 1];
        let col = self.text[start..offset].chars().count() + 1;
        (line, col)
    }

    /// 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> usize {
        // The line alone needs no column (no character count): every step asks for its line.
        self.line_starts
            .partition_point(|&s| s <= offset.min(self.text.len()))
    }
}

/// Where a TOML string value sits in the file, and where its content starts if the content is the
/// file's bytes unchanged (literal strings whose text decodes to itself).
#[derive(Debug, Clone)]
pub struct StrLoc {
    /// The whole string token, quotes included.
    pub span: Range<usize>,
    /// Offset of the first content byte, if content offsets map 1:1 onto the file.
    content_start: Option<usize>,
}

impl StrLoc {
    /// `span` is the token's span as reported by `toml::Spanned`; `value` is the decoded string.
    pub fn new(src: &str, span: Range<usize>, value: &str) -> Self {
        let token = src.get(span.clone()).unwrap_or("");
        let content = if let Some(rest) = token.strip_prefix("'''") {
            // TOML drops a newline right after the opening delimiter.
            let skip = if rest.starts_with("\r\n") {
                2
            } else if rest.starts_with('\n') {
                1
            } else {
                0
            };
            Some((3 + skip, 3))
        } else if token.starts_with('\'') {
            Some((1, 1))
        } else {
            None
        };
        let content_start = content.and_then(|(open, close)| {
            let start = span.start + open;
            let end = span.end.checked_sub(close)?;
            // Only trust a 1:1 mapping if the raw bytes really are the value (a parser that
            // normalised CRLF would break it).
            (src.get(start..end) == Some(value)).then_some(start)
        });
        StrLoc {
            span,
            content_start,
        }
    }

    /// File offset of a byte offset inside the string's content; the string's start if the
    /// content does not map 1:1.
    pub fn at(&self, content_offset: usize) -> usize {
        match self.content_start {
            Some(start) => (start + content_offset).min(self.span.end),
            None => self.span.start,
        }
    }

    /// File offset of a serde_json error position (1-based line; column = bytes into the line,
    /// pointing just past the offending byte; 0 = at the end of the previous line).
    pub fn at_json(&self, content: &str, line: usize, column: usize) -> usize {
        let mut line_start = 0;
        for _ in 1..line {
            match content[line_start..].find('\n') {
                Some(i) => line_start += i + 1,
                None => break,
            }
        }
        let offset = if column == 0 {
            line_start.saturating_sub(1)
        } else {
            line_start + column - 1
        };
        self.at(offset.min(content.len()))
    }

    pub fn start(&self) -> usize {
        self.span.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let s = SourceText::new("ab\néx\n\nz");
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(2), (1, 3));
        assert_eq!(s.line_col(3), (2, 1));
        // 'é' is two bytes; 'x' is the second character of line 2.
        assert_eq!(s.line_col(5), (2, 2));
        // Mid-character offsets land on the character.
        assert_eq!(s.line_col(4), (2, 1));
        assert_eq!(s.line_col(8), (4, 1));
        assert_eq!(s.line_col(100), (4, 2));
    }

    #[test]
    fn literal_strings_map_one_to_one() {
        let src = "a = '''\n{x}'''\nb = 'yz'\nc = \"q\"";
        let a = StrLoc::new(src, 4..14, "{x}");
        assert_eq!(&src[a.at(0)..a.at(1)], "{");
        let b = StrLoc::new(src, 19..23, "yz");
        assert_eq!(&src[b.at(1)..b.at(2)], "z");
        let c = StrLoc::new(src, 28..31, "q");
        assert_eq!(c.at(0), 28);
    }

    #[test]
    fn json_positions_map_into_the_content() {
        let content = "{\"a\":1,\n \"b\":}";
        let err = serde_json::from_str::<serde_json::Value>(content).unwrap_err();
        let src = format!("x = '''{content}'''");
        let loc = StrLoc::new(&src, 4..src.len(), content);
        let at = loc.at_json(content, err.line(), err.column());
        assert_eq!(&src[at..at + 1], "}");
    }
}
