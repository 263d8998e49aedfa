//! The screen of a full-screen client (`[tui]` profiles), as a person sees it.
//!
//! What the client writes to its terminal goes through a terminal emulator (the `vt100` crate),
//! so repaints, cursor moves and erases end up as the characters on screen, not as a stream.
//! Rules `on = "screen"` read the rendered text: the whole screen, a fixed `region`, or the box
//! drawn around a text (`box_containing`). Each row is its cells' text with trailing blanks
//! removed; rows are joined with `\n`.

use serde::{Deserialize, Serialize};

/// Corners and sides of boxes drawn with box-drawing characters (light, heavy, double,
/// rounded) or ASCII.
const TOP_LEFT: &[char] = &['┌', '┏', '╔', '╭', '+'];
const TOP_RIGHT: &[char] = &['┐', '┓', '╗', '╮', '+'];
const BOTTOM_LEFT: &[char] = &['└', '┗', '╚', '╰', '+'];
const BOTTOM_RIGHT: &[char] = &['┘', '┛', '╝', '╯', '+'];
const SIDE: &[char] = &['│', '┃', '║', '|', '├', '┤', '┣', '┫', '╟', '╢'];

/// A rectangle of the screen, 0-based: `rows` rows from `row`, `cols` columns from `col`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    pub row: u16,
    pub col: u16,
    pub rows: u16,
    pub cols: u16,
}

impl Region {
    /// Why this region does not fit a `rows`×`cols` screen, if it does not.
    pub fn outside(&self, rows: u16, cols: u16) -> Option<String> {
        let (bottom, right) = (
            u32::from(self.row) + u32::from(self.rows),
            u32::from(self.col) + u32::from(self.cols),
        );
        if self.rows == 0 || self.cols == 0 {
            return Some("it is empty (`rows` and `cols` must be at least 1)".into());
        }
        (bottom > u32::from(rows) || right > u32::from(cols)).then(|| {
            format!(
                "rows {}..{bottom} × columns {}..{right} lie outside the {rows}×{cols} screen ([tui] rows, cols)",
                self.row, self.col
            )
        })
    }
}

fn nonzero(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
}

/// A terminal emulator the client's output is fed to.
pub struct Screen {
    parser: vt100::Parser,
}

impl Screen {
    pub fn new(rows: u16, cols: u16) -> Self {
        Screen {
            parser: vt100::Parser::new(nonzero(rows), nonzero(cols), 0),
        }
    }

    /// Bytes the client wrote to its terminal.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
    }

    /// Whether the client asked for application cursor keys (arrows as `ESC O x`).
    pub fn app_cursor(&self) -> bool {
        self.parser.screen().application_cursor()
    }

    pub fn size(&self) -> (u16, u16) {
        let (rows, cols) = self.parser.screen().size();
        (rows.get(), cols.get())
    }

    fn char_at(&self, row: u16, col: u16) -> char {
        self.parser
            .screen()
            .cell(row, col)
            .and_then(|c| c.contents().chars().next())
            .unwrap_or(' ')
    }

    /// The text of `region` (the whole screen for `None`).
    pub fn text(&self, region: Option<Region>) -> String {
        let (rows, cols) = self.size();
        let r = region.unwrap_or(Region {
            row: 0,
            col: 0,
            rows,
            cols,
        });
        let mut lines: Vec<String> = Vec::new();
        for row in r.row..r.row.saturating_add(r.rows).min(rows) {
            let mut line = String::new();
            for col in r.col..r.col.saturating_add(r.cols).min(cols) {
                match self.parser.screen().cell(row, col) {
                    Some(c) if c.is_wide_continuation() => {}
                    Some(c) if c.has_contents() => line.push_str(c.contents()),
                    _ => line.push(' '),
                }
            }
            lines.push(line.trim_end().to_owned());
        }
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        lines.join("\n")
    }

    /// Whether nothing is drawn.
    pub fn blank(&self) -> bool {
        self.text(None).trim().is_empty()
    }

    /// The inside of the innermost box drawn around the first place `needle` is shown (on one
    /// row), without its border.
    pub fn box_containing(&self, needle: &str) -> Option<Region> {
        let (rows, cols) = self.size();
        let (row, at) = (0..rows).find_map(|row| {
            let line = self.text(Some(Region {
                row,
                col: 0,
                rows: 1,
                cols,
            }));
            line.find(needle)
                .map(|byte| (row, line[..byte].chars().count() as u16))
        })?;
        // The nearest side characters that belong to one box (corners above and below in both
        // columns): a `|` inside the text (`cat … | curl …`) is not a side.
        for left in (0..at)
            .rev()
            .filter(|&c| SIDE.contains(&self.char_at(row, c)))
        {
            for right in (at + 1..cols).filter(|&c| SIDE.contains(&self.char_at(row, c))) {
                let top = (0..row).rev().find(|&r| {
                    TOP_LEFT.contains(&self.char_at(r, left))
                        && TOP_RIGHT.contains(&self.char_at(r, right))
                });
                let bottom = (row + 1..rows).find(|&r| {
                    BOTTOM_LEFT.contains(&self.char_at(r, left))
                        && BOTTOM_RIGHT.contains(&self.char_at(r, right))
                });
                if let (Some(top), Some(bottom)) = (top, bottom) {
                    return Some(Region {
                        row: top + 1,
                        col: left + 1,
                        rows: bottom - top - 1,
                        cols: right - left - 1,
                    });
                }
            }
        }
        None
    }

    /// The text of every row with a highlighted cell (inverse video or a background colour),
    /// top to bottom: a selection bar is one of them, a status bar may be another.
    pub fn highlighted_rows(&self) -> Vec<String> {
        let (rows, cols) = self.size();
        (0..rows)
            .filter(|&row| {
                (0..cols).any(|col| {
                    self.parser.screen().cell(row, col).is_some_and(|c| {
                        c.has_contents()
                            && c.contents() != " "
                            && (c.inverse() || c.bgcolor() != vt100::Color::Default)
                    })
                })
            })
            .map(|row| {
                self.text(Some(Region {
                    row,
                    col: 0,
                    rows: 1,
                    cols,
                }))
            })
            .collect()
    }

    /// The text of the highlighted row inside `region` (the whole screen for `None`): the row
    /// with the most cells drawn in inverse video, as a selection bar or a focused button is;
    /// without any, the row with the most cells on a background colour. `None` when no row is
    /// highlighted. (A client that paints every cell on a colour can mark the selection by
    /// inverse video alone.)
    pub fn highlighted(&self, region: Option<Region>) -> Option<String> {
        let (rows, cols) = self.size();
        let r = region.unwrap_or(Region {
            row: 0,
            col: 0,
            rows,
            cols,
        });
        let marked = |row: u16, mark: &dyn Fn(&vt100::Cell) -> bool| {
            (r.col..r.col.saturating_add(r.cols).min(cols))
                .filter(|&col| {
                    self.parser
                        .screen()
                        .cell(row, col)
                        .is_some_and(|c| c.has_contents() && mark(c))
                })
                .count()
        };
        let best = |mark: &dyn Fn(&vt100::Cell) -> bool| {
            (r.row..r.row.saturating_add(r.rows).min(rows))
                .map(|row| (marked(row, mark), row))
                .filter(|(n, _)| *n > 0)
                .max_by_key(|(n, row)| (*n, std::cmp::Reverse(*row)))
                .map(|(_, row)| row)
        };
        let row = best(&|c| c.inverse() && c.contents() != " ")
            .or_else(|| best(&|c| c.inverse() || c.bgcolor() != vt100::Color::Default))?;
        Some(self.text(Some(Region {
            row,
            col: r.col,
            rows: 1,
            cols: r.cols,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(bytes: &str) -> Screen {
        let mut s = Screen::new(10, 30);
        s.feed(bytes.as_bytes());
        s
    }

    #[test]
    fn repaints_leave_only_what_is_shown() {
        // Draw "Allow once", then move back and overwrite it: only the new text is on screen.
        let s = screen("\x1b[2J\x1b[1;1HAllow once\x1b[1;1H\x1b[2KThinking…");
        assert_eq!(s.text(None), "Thinking…");
        assert!(!s.blank());
        assert!(Screen::new(3, 3).blank());
    }

    #[test]
    fn a_box_and_a_region_are_read_alone() {
        let s = screen(
            "header\r\n┌──────────┐\r\n│ Run ls?  │  side\r\n│ 1) Allow │\r\n└──────────┘\r\nfooter",
        );
        let inside = s.box_containing("Run ls").unwrap();
        assert_eq!(
            inside,
            Region {
                row: 2,
                col: 1,
                rows: 2,
                cols: 10
            }
        );
        assert_eq!(s.text(Some(inside)), " Run ls?\n 1) Allow");
        assert_eq!(s.box_containing("footer"), None);
        // A `|` in the boxed text is not a side of the box.
        let piped = screen("┌────────────────┐\r\n│ Run: a | b 1>2 │\r\n└────────────────┘");
        let inside = piped.box_containing("Run:").unwrap();
        assert_eq!(piped.text(Some(inside)), " Run: a | b 1>2");
        let last = Region {
            row: 5,
            col: 0,
            rows: 1,
            cols: 30,
        };
        assert_eq!(s.text(Some(last)), "footer");
    }

    #[test]
    fn the_highlighted_row_is_the_inverse_one() {
        let s = screen("  Allow once\r\n\x1b[7m> Allow always\x1b[0m\r\n  Reject");
        assert_eq!(s.highlighted(None).as_deref(), Some("> Allow always"));
        assert_eq!(s.highlighted_rows(), ["> Allow always"]);
        assert_eq!(screen("plain\r\ntext").highlighted(None), None);
        // Every cell on a colour (as Textual paints): the inverse label is the highlight.
        let s = screen(
            "\x1b[44m  Allow once    \r\n  \x1b[7mAlways allow\x1b[27m  \r\n  Reject        \x1b[0m",
        );
        assert_eq!(s.highlighted(None).as_deref(), Some("  Always allow"));
        // Without inverse video, the row on a background colour.
        let s = screen("  Allow once\r\n\x1b[42m> Always allow\x1b[0m\r\n  Reject");
        assert_eq!(s.highlighted(None).as_deref(), Some("> Always allow"));
    }

    #[test]
    fn a_region_outside_the_screen_says_where() {
        let r = Region {
            row: 20,
            col: 0,
            rows: 5,
            cols: 10,
        };
        let why = r.outside(24, 80).unwrap();
        assert!(why.contains("rows 20..25"), "{why}");
        assert!(r.outside(25, 80).is_none());
    }
}
