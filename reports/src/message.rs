//! A check's failure message, split for the HTML report.
//!
//! Messages are plain text (harness checks, `Trial::message`): the finding, then one line per
//! cited frame (`#12 agent → client {…}`), then `repro: <command>`. The report shows the cited
//! frames and the repro command itself, so only the finding is kept here, with every `#N` that
//! names a cited frame turned into a link. `#N` that names no cited frame (a spec rule such as
//! `(#43)`, an issue such as `bb#1719`) stays text.

/// A piece of a finding line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    /// A reference to a cited transcript frame: the text as written (`#12`) and the index.
    Frame {
        text: String,
        index: usize,
    },
}

impl Segment {
    /// The text as written (for templates).
    pub fn text(&self) -> &str {
        match self {
            Segment::Text(t) | Segment::Frame { text: t, .. } => t,
        }
    }

    /// The frame index, for links.
    pub fn frame(&self) -> Option<usize> {
        match self {
            Segment::Frame { index, .. } => Some(*index),
            Segment::Text(_) => None,
        }
    }
}

/// Arrows the harness writes before a cited frame (`Direction::arrow`).
const ARROWS: &[&str] = &[
    "client → agent",
    "agent → client",
    "harness → adapter",
    "adapter → harness",
    "harness note",
];

/// True for the lines the harness appends after the finding: cited frames and the repro line.
fn is_appendix(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("repro: ") {
        return true;
    }
    let Some(rest) = t.strip_prefix('#') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    digits > 0
        && ARROWS
            .iter()
            .any(|a| rest[digits..].trim_start().starts_with(a))
}

/// The finding lines of `message`, with links to the frames in `cited`.
pub fn finding(message: &str, cited: &[usize]) -> Vec<Vec<Segment>> {
    message
        .lines()
        .filter(|l| !is_appendix(l) && !l.trim().is_empty())
        .map(|l| link_frames(l.trim().trim_start_matches("- "), cited))
        .collect()
}

/// A finding line split into what was observed and what was expected (h2spec's Actual /
/// Expected): checks write "<what happened>. Expected <what should have>." Lines without an
/// "Expected" sentence have an empty `expected`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub observed: Vec<Segment>,
    pub expected: Vec<Segment>,
}

/// Splits a finding line at its first sentence that starts with "Expected ".
pub fn split_expected(line: Vec<Segment>) -> Split {
    let mut observed = Vec::new();
    let mut expected = Vec::new();
    let mut found = false;
    for segment in line {
        match segment {
            Segment::Text(text) if !found => match expected_at(&text) {
                Some(at) => {
                    found = true;
                    let (before, after) = text.split_at(at);
                    if !before.trim().is_empty() {
                        observed.push(Segment::Text(before.trim_end().to_owned()));
                    }
                    expected.push(Segment::Text(after.to_owned()));
                }
                None => observed.push(Segment::Text(text)),
            },
            other if found => expected.push(other),
            other => observed.push(other),
        }
    }
    Split { observed, expected }
}

/// Byte offset of "Expected " where it starts the text or follows the end of a sentence.
fn expected_at(text: &str) -> Option<usize> {
    if text.starts_with("Expected ") {
        return Some(0);
    }
    [". Expected ", ": Expected ", "; Expected "]
        .iter()
        .filter_map(|p| text.find(p).map(|at| at + 2))
        .min()
}

/// The first finding line as plain text (for tooltips, tables and JUnit messages).
pub fn headline(message: &str) -> String {
    message
        .lines()
        .find(|l| !is_appendix(l) && !l.trim().is_empty())
        .map(|l| l.trim().trim_start_matches("- ").to_owned())
        .unwrap_or_default()
}

fn link_frames(line: &str, cited: &[usize]) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('#') {
        let (before, from_hash) = rest.split_at(at);
        text.push_str(before);
        let digits: String = from_hash[1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        // `bb#1719` is an issue, not a frame: a frame reference starts a word.
        let starts_word = !text.chars().last().is_some_and(char::is_alphanumeric);
        let index = digits.parse::<usize>().ok().filter(|i| cited.contains(i));
        match index {
            Some(index) if starts_word => {
                if !text.is_empty() {
                    out.push(Segment::Text(std::mem::take(&mut text)));
                }
                out.push(Segment::Frame {
                    text: format!("#{digits}"),
                    index,
                });
                rest = &from_hash[1 + digits.len()..];
            }
            _ => {
                text.push('#');
                rest = &from_hash[1..];
            }
        }
    }
    text.push_str(rest);
    if !text.is_empty() {
        out.push(Segment::Text(text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &str = "- [fail] approval #16 for request #14 shows subject \"command\". Expected \"file_change\" (#43).\n\
        - [fail] see bb#14 and #99\n\
        #14 agent → client {\"jsonrpc\":\"2.0\"}\n\
        #16 adapter → harness {\"type\":\"approval\"}\n\
        repro: acp-harness replay x";

    #[test]
    fn cited_frames_become_links_and_the_appendix_is_dropped() {
        let lines = finding(MESSAGE, &[14, 16]);
        assert_eq!(lines.len(), 2);
        let frames: Vec<usize> = lines[0].iter().filter_map(Segment::frame).collect();
        assert_eq!(frames, vec![16, 14]);
        let text: String = lines[0].iter().map(Segment::text).collect();
        assert!(text.ends_with("(#43)."), "{text}");
        // bb#14 is an issue reference; #99 is not cited.
        assert!(
            lines[1].iter().all(|s| s.frame().is_none()),
            "{:?}",
            lines[1]
        );
        let text: String = lines[1].iter().map(Segment::text).collect();
        assert_eq!(text, "[fail] see bb#14 and #99");
    }

    #[test]
    fn headline_is_the_first_finding_line() {
        assert_eq!(
            headline(MESSAGE),
            "[fail] approval #16 for request #14 shows subject \"command\". Expected \"file_change\" (#43)."
        );
        assert_eq!(headline(""), "");
        assert_eq!(headline("#3 client → agent {}\nrepro: x"), "");
    }

    #[test]
    fn findings_split_into_observed_and_expected() {
        let line = finding(MESSAGE, &[14, 16]).remove(0);
        let split = split_expected(line);
        let observed: String = split.observed.iter().map(Segment::text).collect();
        let expected: String = split.expected.iter().map(Segment::text).collect();
        assert_eq!(
            observed,
            "[fail] approval #16 for request #14 shows subject \"command\"."
        );
        assert_eq!(expected, "Expected \"file_change\" (#43).");
        assert_eq!(split.observed.iter().filter_map(Segment::frame).count(), 2);
        let plain = split_expected(vec![Segment::Text("no expectation here".into())]);
        assert!(plain.expected.is_empty());
        let frame_after = split_expected(vec![
            Segment::Text("x. Expected y at ".into()),
            Segment::Frame {
                text: "#3".into(),
                index: 3,
            },
        ]);
        assert_eq!(frame_after.expected.len(), 2);
    }

    #[test]
    fn odd_text_never_panics() {
        for text in ["#", "##", "#12", "é#1é", "# 1", "#99999999999999999999999"] {
            let _ = finding(text, &[1, 12]);
        }
        assert_eq!(finding("#12", &[12])[0][0].frame(), Some(12));
    }
}
