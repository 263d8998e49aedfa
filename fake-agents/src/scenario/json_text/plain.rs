//! A reader for the common shape of a `send` frame: JSON that is already compact, so that the
//! text written is, byte for byte, the text [`super::compile`] would write out again. A long
//! generated scenario is 10⁵ such frames; `serde_json` reading each one and writing every string
//! escaped again was most of the cost of compiling it.
//!
//! It only ever *accepts* text whose compact form it knows to be the text itself, and declines
//! (returns `None`) on anything else: whitespace between tokens, a backslash or a control
//! character in a string, a number other than a plain unsigned integer of up to 19 digits (a
//! sign, a fraction, an exponent, a leading zero), a repeated key or a template in a key (kept
//! as written, see the module above), nesting deeper than [`MAX_DEPTH`], anything that is not
//! JSON. On `None` the caller reads the text with `serde_json`, so every JSON error keeps its
//! text and position. What it accepts, it reads to the same [`Compiled`] as `serde_json` does
//! (the tests compare both on many frames and every one-character edit of them).

use std::ops::Range;

use super::{Compiled, Compiler, Segment};

/// Deeper frames are left to `serde_json` (whose own limit is 128): the reader recurses once
/// a level, and no frame a scenario sends comes near this.
const MAX_DEPTH: usize = 64;

/// The frame compiled from `text`, or `None` when `serde_json` must read it.
pub(super) fn compile(text: &str) -> Option<Compiled> {
    // The compact text is the text: the compiler's tokens are at the text's own offsets.
    let mut c = Compiler::new(text.as_bytes().to_vec());
    let read = Reader { text, c: &mut c }.value(0, 0);
    match read {
        Some((end, is_object)) if end == text.len() && !c.mirrorless => {
            Some(c.into_compiled(text, is_object))
        }
        _ => {
            c.finish();
            None
        }
    }
}

/// Reads values of `text` into a compiler whose output already holds `text`.
struct Reader<'t, 'c> {
    text: &'t str,
    c: &'c mut Compiler,
}

impl Reader<'_, '_> {
    fn byte(&self, at: usize) -> Option<u8> {
        self.text.as_bytes().get(at).copied()
    }

    /// The value at `at`: where it ends and whether it is an object.
    fn value(&mut self, at: usize, depth: usize) -> Option<(usize, bool)> {
        match self.byte(at)? {
            b'{' => Some((self.object(at, depth + 1)?, true)),
            b'[' => Some((self.array(at, depth + 1)?, false)),
            b'"' => {
                let (token, dollar) = self.string(at)?;
                let end = token.end;
                // Without a `$` it holds no template: nothing to note.
                if dollar {
                    let content = &self.text[token.start + 1..token.end - 1];
                    self.c.string_at(content, token);
                }
                Some((end, false))
            }
            b'0'..=b'9' => Some((self.unsigned(at)?, false)),
            b't' => Some((self.word(at, "true")?, false)),
            b'f' => Some((self.word(at, "false")?, false)),
            b'n' => Some((self.word(at, "null")?, false)),
            _ => None,
        }
    }

    /// `{` at `at` … its `}`; returns the offset after it.
    fn object(&mut self, at: usize, depth: usize) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        let first = self.c.keys.len();
        let mut at = at + 1;
        if self.byte(at)? == b'}' {
            return Some(at + 1);
        }
        loop {
            let (token, dollar) = self.string(at)?;
            if dollar {
                // Perhaps a template in a key: left to serde (the text is kept as written).
                return None;
            }
            at = token.end;
            self.c.key_token(token, first);
            if self.c.mirrorless || self.byte(at)? != b':' {
                return None;
            }
            let (end, _) = self.value(at + 1, depth)?;
            self.c.path.pop();
            match self.byte(end)? {
                b',' => at = end + 1,
                b'}' => {
                    self.c.keys.truncate(first);
                    return Some(end + 1);
                }
                _ => return None,
            }
        }
    }

    /// `[` at `at` … its `]`; returns the offset after it.
    fn array(&mut self, at: usize, depth: usize) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut at = at + 1;
        if self.byte(at)? == b']' {
            return Some(at + 1);
        }
        let mut i = 0;
        loop {
            self.c.path.push(Segment::Index(i));
            let (end, _) = self.value(at, depth)?;
            self.c.path.pop();
            match self.byte(end)? {
                b',' => at = end + 1,
                b']' => return Some(end + 1),
                _ => return None,
            }
            i += 1;
        }
    }

    /// The string token at `at` (quotes included), if it holds no escape and no control
    /// character: then it is what `serde_json` writes for its content. And whether it holds
    /// a `$`.
    fn string(&self, at: usize) -> Option<(Range<usize>, bool)> {
        if self.byte(at)? != b'"' {
            return None;
        }
        // One loop over a string that is nearly always short (a key, an enum word, an id):
        // a call to memchr and a second pass would cost more than they save.
        let mut dollar = false;
        for (i, &b) in self.text.as_bytes()[at + 1..].iter().enumerate() {
            match b {
                b'"' => return Some((at..at + i + 2, dollar)),
                b'\\' | 0x7f | 0..=0x1f => return None,
                b'$' => dollar = true,
                _ => {}
            }
        }
        None
    }

    /// An unsigned integer at `at` that `serde_json` reads as a `u64` and writes as written.
    fn unsigned(&self, at: usize) -> Option<usize> {
        let digits = self.text.as_bytes()[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let end = at + digits;
        let leading_zero = digits > 1 && self.byte(at) == Some(b'0');
        // 19 digits always fit a u64; a `.` or an exponent makes it a float.
        let plain = !matches!(self.byte(end), Some(b'.' | b'e' | b'E'));
        (digits <= 19 && !leading_zero && plain).then_some(end)
    }

    /// The literal `word` at `at`.
    fn word(&self, at: usize, word: &str) -> Option<usize> {
        self.text.as_bytes()[at..]
            .starts_with(word.as_bytes())
            .then_some(at + word.len())
    }
}

#[cfg(test)]
mod tests;
