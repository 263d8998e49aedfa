//! Helpers shared by the scenario and profile parsers: TOML errors as `file:line:col`, ordered
//! string maps, and JSON-in-TOML strings parsed with exact positions.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use toml::Spanned;

use crate::error::ScenarioError;
use crate::source::{SourceText, StrLoc};
use crate::template::{self, VarUse};

/// A parsed source file: its display path and text, to build positioned errors.
pub struct Src<'a> {
    pub file: &'a str,
    pub text: SourceText<'a>,
}

impl<'a> Src<'a> {
    pub fn new(file: &'a str, text: &'a str) -> Self {
        Src {
            file,
            text: SourceText::new(text),
        }
    }

    /// An error at a byte offset of the file.
    pub fn err(&self, offset: usize, message: impl Into<String>) -> ScenarioError {
        let (line, col) = self.text.line_col(offset);
        ScenarioError {
            file: self.file.to_owned(),
            line,
            col,
            message: message.into(),
        }
    }

    /// Deserializes the whole file; TOML syntax and shape errors get toml's span.
    pub fn toml<T: DeserializeOwned>(&self) -> Result<T, ScenarioError> {
        toml::from_str(self.text.text()).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            self.err(offset, e.message().trim_end().to_owned())
        })
    }

    /// Where a spanned string sits (for positions inside it).
    pub fn loc(&self, s: &Spanned<String>) -> StrLoc {
        StrLoc::new(self.text.text(), s.span(), s.get_ref())
    }

    /// Parses a JSON value written in a TOML string; a JSON error points at its exact place when
    /// the string is a literal string.
    pub fn json(&self, s: &Spanned<String>, what: &str) -> Result<Value, ScenarioError> {
        serde_json::from_str(s.get_ref()).map_err(|e| self.json_error(s, what, &e))
    }

    /// A JSON error in the string `s`, at its place in the file.
    pub fn json_error(
        &self,
        s: &Spanned<String>,
        what: &str,
        e: &serde_json::Error,
    ) -> ScenarioError {
        let at = self.loc(s).at_json(s.get_ref(), e.line(), e.column());
        let msg = e.to_string();
        // serde_json appends " at line L column C" (positions inside the string): the file
        // position replaces them.
        let msg = msg.split(" at line ").next().unwrap_or(&msg);
        self.err(at, format!("invalid JSON in {what}: {msg}"))
    }
}

impl Src<'_> {
    /// Checks every template variable used in a JSON value parsed from `s` against `rule`; the
    /// first refusal is reported at that variable's place in the file.
    pub fn check_json_vars(
        &self,
        s: &Spanned<String>,
        value: &Value,
        rule: impl FnMut(&VarUse) -> Result<(), String>,
    ) -> Result<(), ScenarioError> {
        self.check_var_uses(s, template::uses(value), rule)
    }

    /// [`Self::check_json_vars`] over the uses already collected (or the first template error).
    pub fn check_var_uses(
        &self,
        s: &Spanned<String>,
        uses: Result<Vec<VarUse>, template::ValueTemplateError>,
        mut rule: impl FnMut(&VarUse) -> Result<(), String>,
    ) -> Result<(), ScenarioError> {
        let loc = self.loc(s);
        let raw = s.get_ref();
        let uses = uses.map_err(|e| {
            // The decoded string appears verbatim in the raw text unless it has JSON escapes.
            let at = raw
                .find(&e.string)
                .map_or(loc.start(), |o| loc.at(o + e.error.offset));
            self.err(at, e.error.message.clone())
        })?;
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for u in &uses {
            let n = match seen.iter_mut().find(|(name, _)| *name == u.name) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    seen.push((&u.name, 0));
                    0
                }
            };
            if let Err(message) = rule(u) {
                let at = template::find_var(raw, &u.name, n).map_or(loc.start(), |o| loc.at(o));
                return Err(self.err(at, message));
            }
        }
        Ok(())
    }

    /// Same for a plain text template (`text`, `[vars]` values).
    pub fn check_text_vars(
        &self,
        s: &Spanned<String>,
        mut rule: impl FnMut(&str) -> Result<(), String>,
    ) -> Result<(), ScenarioError> {
        let loc = self.loc(s);
        let uses = template::uses_in_str(s.get_ref())
            .map_err(|e| self.err(loc.at(e.offset), e.message))?;
        for (name, offset) in uses {
            rule(name).map_err(|m| self.err(loc.at(offset), m))?;
        }
        Ok(())
    }
}

/// A TOML table kept in file order, with values of one type (`[vars]`, `capture = {…}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Ordered<V>(pub Vec<(String, V)>);

impl<V> Default for Ordered<V> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V2<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V2<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V2(PhantomData))
    }
}

/// Accepts only `true` (for `handshake = true`, `cancelled = true`, …).
pub fn expect_true(src: &Src, v: &Spanned<bool>, key: &str) -> Result<(), ScenarioError> {
    if *v.get_ref() {
        Ok(())
    } else {
        Err(src.err(
            v.span().start,
            format!("`{key}` can only be `true` (leave it out instead)"),
        ))
    }
}
