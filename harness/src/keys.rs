//! Keys as data: what a `[tui]` profile types (its prompt, `[[choose]]` inputs, `[cancel] stdin`,
//! `quit`), written as text with key names in angle brackets: `y<Enter>`, `<Down><Down><Enter>`,
//! `<Esc>`, `<C-c>`. `<lt>` is a literal `<`. An unknown name is a profile error.

/// The bytes a terminal sends for `text`. `app_cursor`: the client switched the terminal to
/// application cursor keys (arrows are `ESC O x` then, not `ESC [ x`).
pub fn parse(text: &str, app_cursor: bool) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.extend_from_slice(&rest.as_bytes()[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else {
            return Err(format!(
                "{text:?}: `<` without `>` (write <lt> for a literal `<`)"
            ));
        };
        out.extend(key(&after[..close], app_cursor).ok_or_else(|| {
            format!(
                "{text:?}: unknown key <{}> (Enter, Esc, Tab, Backspace, Space, Up, Down, Left, Right, Home, End, PageUp, PageDown, Delete, C-<letter>, lt)",
                &after[..close]
            )
        })?);
        rest = &after[close + 1..];
    }
    out.extend_from_slice(rest.as_bytes());
    Ok(out)
}

fn key(name: &str, app_cursor: bool) -> Option<Vec<u8>> {
    let arrow = |c: u8| {
        if app_cursor {
            vec![0x1b, b'O', c]
        } else {
            vec![0x1b, b'[', c]
        }
    };
    Some(match name {
        "Enter" | "CR" => b"\r".to_vec(),
        "Esc" | "Escape" => b"\x1b".to_vec(),
        "Tab" => b"\t".to_vec(),
        "Backspace" | "BS" => b"\x7f".to_vec(),
        "Space" => b" ".to_vec(),
        "lt" => b"<".to_vec(),
        "Up" => arrow(b'A'),
        "Down" => arrow(b'B'),
        "Right" => arrow(b'C'),
        "Left" => arrow(b'D'),
        "Home" => arrow(b'H'),
        "End" => arrow(b'F'),
        "PageUp" => b"\x1b[5~".to_vec(),
        "PageDown" => b"\x1b[6~".to_vec(),
        "Delete" | "Del" => b"\x1b[3~".to_vec(),
        _ => {
            let letter = name.strip_prefix("C-")?;
            let mut chars = letter.chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                return None;
            };
            if !c.is_ascii_alphabetic() && !"[\\]^_@".contains(c) {
                return None;
            }
            vec![(c.to_ascii_uppercase() as u8) & 0x1f]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_the_bytes_a_terminal_sends() {
        assert_eq!(parse("y<Enter>", false).unwrap(), b"y\r");
        assert_eq!(parse("<Down><Enter>", false).unwrap(), b"\x1b[B\r");
        assert_eq!(parse("<Down>", true).unwrap(), b"\x1bOB");
        assert_eq!(parse("<C-c><Esc>", false).unwrap(), b"\x03\x1b");
        assert_eq!(parse("a<lt>b", false).unwrap(), b"a<b");
        assert_eq!(parse("plain é", false).unwrap(), "plain é".as_bytes());
    }

    #[test]
    fn unknown_names_are_errors() {
        assert!(
            parse("<Entr>", false)
                .unwrap_err()
                .contains("unknown key <Entr>")
        );
        assert!(parse("<C-ab>", false).is_err());
        assert!(parse("a<b", false).unwrap_err().contains("without `>`"));
    }
}
