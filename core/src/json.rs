//! Just enough JSON for the WebAssembly interface and the IDL: a parser into `Value`
//! and a writer, with no dependencies. Numbers keep their text: the
//! interface writes every `u64` as a decimal string (JavaScript's numbers
//! hold 53 bits), and reads either form.

use std::string::{String, ToString};
use std::vec::Vec;

/// A parsed JSON value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Null,
    Bool(bool),
    /// A number, as written.
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

/// The most nested arrays and objects a document may hold.
const MAX_DEPTH: usize = 32;

impl Value {
    /// Parses a whole document; the error says where and what.
    pub fn parse(text: &str) -> Result<Value, String> {
        let mut p = Parser {
            bytes: text.as_bytes(),
            at: 0,
        };
        let v = p.value(0)?;
        p.space();
        if p.at != p.bytes.len() {
            return Err(p.error("the end of the document"));
        }
        Ok(v)
    }

    /// An object's field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A whole number that fits a `u64`, written as a number or a string.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(s) | Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, wanted: &str) -> String {
        std::format!("invalid JSON at byte {}: expected {wanted}", self.at)
    }

    fn space(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, word: &str) -> bool {
        let found = self.bytes[self.at..].starts_with(word.as_bytes());
        if found {
            self.at += word.len();
        }
        found
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("at most 32 nested arrays and objects"));
        }
        self.space();
        match self.bytes.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                let mut fields = Vec::new();
                self.space();
                if self.eat("}") {
                    return Ok(Value::Object(fields));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    self.space();
                    if !self.eat(":") {
                        return Err(self.error("':'"));
                    }
                    fields.push((key, self.value(depth + 1)?));
                    self.space();
                    if self.eat("}") {
                        return Ok(Value::Object(fields));
                    }
                    if !self.eat(",") {
                        return Err(self.error("',' or '}'"));
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.eat("]") {
                    return Ok(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.space();
                    if self.eat("]") {
                        return Ok(Value::Array(items));
                    }
                    if !self.eat(",") {
                        return Err(self.error("',' or ']'"));
                    }
                }
            }
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                self.at += 1;
                while matches!(
                    self.bytes.get(self.at),
                    Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                ) {
                    self.at += 1;
                }
                let text = core::str::from_utf8(&self.bytes[start..self.at]).unwrap_or("");
                Ok(Value::Number(text.to_string()))
            }
            _ if self.eat("true") => Ok(Value::Bool(true)),
            _ if self.eat("false") => Ok(Value::Bool(false)),
            _ if self.eat("null") => Ok(Value::Null),
            _ => Err(self.error("a value")),
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .bytes
            .get(self.at..self.at + 4)
            .ok_or_else(|| self.error("4 hex digits"))?;
        let text = core::str::from_utf8(digits).map_err(|_| self.error("4 hex digits"))?;
        let v = u32::from_str_radix(text, 16).map_err(|_| self.error("4 hex digits"))?;
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        if !self.eat("\"") {
            return Err(self.error("a string"));
        }
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.bytes.get(self.at) else {
                return Err(self.error("the string's closing quote"));
            };
            self.at += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.bytes.get(self.at) else {
                        return Err(self.error("an escape"));
                    };
                    self.at += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let high = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&high) && self.eat("\\u") {
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return Err(self.error("a low surrogate"));
                                }
                                0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                            } else {
                                high
                            };
                            char::from_u32(code).ok_or_else(|| self.error("a character"))?
                        }
                        _ => {
                            self.at -= 1;
                            return Err(self.error("an escape"));
                        }
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1f => return Err(self.error("no control character in a string")),
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.error("UTF-8"))
    }
}

/// Writes `s` as a JSON string.
pub fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&std::format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// An object written field by field.
pub struct Object {
    out: String,
    first: bool,
}

impl Default for Object {
    fn default() -> Self {
        Object {
            out: String::from("{"),
            first: true,
        }
    }
}

impl Object {
    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        string(&mut self.out, key);
        self.out.push(':');
    }

    /// A field whose value is already JSON.
    pub fn raw(mut self, key: &str, json: &str) -> Self {
        self.key(key);
        self.out.push_str(json);
        self
    }

    pub fn str(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        string(&mut self.out, value);
        self
    }

    /// A `u32` or smaller, as a number.
    pub fn num(self, key: &str, value: u64) -> Self {
        self.raw(key, &value.to_string())
    }

    /// A `u64`, as a decimal string.
    pub fn big(self, key: &str, value: u64) -> Self {
        let text = value.to_string();
        self.str(key, &text)
    }

    pub fn bool(self, key: &str, value: bool) -> Self {
        self.raw(key, if value { "true" } else { "false" })
    }

    pub fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }
}

/// Items already written as JSON, as an array.
pub fn array<I: IntoIterator<Item = String>>(items: I) -> String {
    let items: Vec<String> = items.into_iter().collect();
    std::format!("[{}]", items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_hosts_send_and_refuses_the_rest_in_words() {
        let v = Value::parse(
            r#" {"a": [1, "2", true, null, {"b": "x\n\u00e9\ud83d\ude00"}], "n": -3.5e2} "#,
        )
        .unwrap();
        let a = v.get("a").and_then(Value::as_array).unwrap();
        assert_eq!(a[0].as_u64(), Some(1));
        assert_eq!(a[1].as_u64(), Some(2));
        assert_eq!(a[2].as_bool(), Some(true));
        assert_eq!(a[3], Value::Null);
        assert_eq!(a[4].get("b").and_then(Value::as_str), Some("x\né😀"));
        assert_eq!(v.get("n"), Some(&Value::Number("-3.5e2".into())));
        assert_eq!(v.get("n").and_then(Value::as_u64), None);
        for (bad, words) in [
            ("", "invalid JSON at byte 0: expected a value"),
            ("{\"a\" 1}", "invalid JSON at byte 5: expected ':'"),
            ("[1,]", "invalid JSON at byte 3: expected a value"),
            ("\"\\x\"", "invalid JSON at byte 2: expected an escape"),
            (
                "[1] 2",
                "invalid JSON at byte 4: expected the end of the document",
            ),
        ] {
            assert_eq!(Value::parse(bad).unwrap_err(), words, "{bad}");
        }
        let deep = "[".repeat(40) + &"]".repeat(40);
        assert!(Value::parse(&deep)
            .unwrap_err()
            .contains("at most 32 nested"));
    }

    #[test]
    fn writes_what_it_parses() {
        let text = Object::default()
            .str("s", "a\"b\\c\n\u{1}é")
            .num("n", 7)
            .big("u64", u64::MAX)
            .bool("t", true)
            .raw("list", &array(["1".into(), "2".into()]))
            .finish();
        assert_eq!(
            text,
            r#"{"s":"a\"b\\c\n\u0001é","n":7,"u64":"18446744073709551615","t":true,"list":[1,2]}"#
        );
        let v = Value::parse(&text).unwrap();
        assert_eq!(v.get("s").and_then(Value::as_str), Some("a\"b\\c\n\u{1}é"));
        assert_eq!(v.get("u64").and_then(Value::as_u64), Some(u64::MAX));
    }
}
