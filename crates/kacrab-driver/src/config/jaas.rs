//! `sasl.jaas.config`: one JAAS login-module entry in Java's syntax.
//!
//! The grammar is Kafka's `JaasConfig` (a `java.io.StreamTokenizer` set up by it):
//! `<loginModuleClass> <controlFlag> (<option>=<value>)* ;`. Bytes up to the space are
//! whitespace; `;` and `=` stand alone; `"` and `'` quote, with `StreamTokenizer`'s
//! escapes inside (`\n`, `\t`, `\"`, `\\`, octal `\101`, and `\x` for any other `x`);
//! `//`, `/* */` and a lone `/` start comments; everything else makes up words. A
//! client's property holds exactly one entry (`JaasContext.loadClientContext`).
//!
//! Departures, all towards refusing: a quoted string or a `/*` comment left open is an
//! error here, where `StreamTokenizer` ends it silently at the end of the line or input.
//!
//! Values can be passwords: no error here ever holds a value, only option names.

use std::collections::BTreeMap;

/// Why `sasl.jaas.config` does not parse. Never holds an option's value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JaasError {
    /// No login module at all.
    #[error("login module not specified in JAAS config")]
    NoLoginModule,
    /// More than one entry (a client takes exactly one).
    #[error("JAAS config property contains {0} login modules, should be 1 module")]
    ModuleCount(usize),
    /// The control flag is missing.
    #[error("login module control flag not specified in JAAS config")]
    MissingFlag,
    /// The control flag is none of `required`, `requisite`, `sufficient`, `optional`.
    #[error("invalid login module control flag {0:?} in JAAS config")]
    InvalidFlag(String),
    /// `key` without `=value`.
    #[error("value not specified for key {key:?} in JAAS config")]
    MissingValue {
        /// The option's name.
        key: String,
    },
    /// A `;` or `=` where an option name belongs.
    #[error("expected an option name in JAAS config, found {0:?}")]
    UnexpectedToken(char),
    /// The entry does not end with `;`.
    #[error("JAAS config entry not terminated by semi-colon")]
    NotTerminated,
    /// A quoted string without its closing quote on the same line.
    #[error("unterminated quoted string in JAAS config")]
    UnterminatedQuote,
    /// A `/*` comment without its `*/`.
    #[error("unterminated /* comment in JAAS config")]
    UnterminatedComment,
}

/// JAAS' control flag (`LoginModuleControlFlag`). A single client entry authenticates
/// whatever its flag; it is kept for fidelity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlFlag {
    /// `required`.
    Required,
    /// `requisite`.
    Requisite,
    /// `sufficient`.
    Sufficient,
    /// `optional`.
    Optional,
}

/// One parsed entry. Its options may hold secrets: it has no `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct JaasEntry {
    /// The login module's class name.
    pub(crate) login_module: String,
    /// Its control flag.
    #[allow(dead_code)] // kept for fidelity with Java's entry
    pub(crate) flag: ControlFlag,
    /// Options by name; a repeated name keeps its last value, as Java's `HashMap` does.
    pub(crate) options: BTreeMap<String, String>,
}

#[derive(Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Semi,
    Eq,
}

impl Token {
    /// The text of a word or quoted string (`StreamTokenizer.sval`).
    fn text(self) -> Option<String> {
        match self {
            Token::Word(s) | Token::Quoted(s) => Some(s),
            Token::Semi | Token::Eq => None,
        }
    }
}

struct Tokens<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

fn is_word_char(c: char) -> bool {
    c > ' ' && !matches!(c, ';' | '=' | '"' | '\'' | '/')
}

impl Tokens<'_> {
    fn skip_to_eol(&mut self) {
        for c in self.chars.by_ref() {
            if c == '\n' || c == '\r' {
                break;
            }
        }
    }

    fn next_token(&mut self) -> Result<Option<Token>, JaasError> {
        loop {
            let Some(c) = self.chars.next() else {
                return Ok(None);
            };
            match c {
                c if c <= ' ' => {}
                ';' => return Ok(Some(Token::Semi)),
                '=' => return Ok(Some(Token::Eq)),
                '/' => match self.chars.peek() {
                    Some('*') => {
                        self.chars.next();
                        let mut prev = '\0';
                        loop {
                            match self.chars.next() {
                                None => return Err(JaasError::UnterminatedComment),
                                Some('/') if prev == '*' => break,
                                Some(c) => prev = c,
                            }
                        }
                    }
                    // `//` and a lone `/` (the comment character) run to the end of the line.
                    _ => self.skip_to_eol(),
                },
                '"' | '\'' => return self.quoted(c).map(|s| Some(Token::Quoted(s))),
                c => {
                    let mut word = String::from(c);
                    while let Some(&c) = self.chars.peek() {
                        if !is_word_char(c) {
                            break;
                        }
                        word.push(c);
                        self.chars.next();
                    }
                    return Ok(Some(Token::Word(word)));
                }
            }
        }
    }

    /// A quoted string after its opening `quote`, with `StreamTokenizer`'s escapes.
    fn quoted(&mut self, quote: char) -> Result<String, JaasError> {
        let mut out = String::new();
        loop {
            let c = match self.chars.next() {
                None | Some('\n' | '\r') => return Err(JaasError::UnterminatedQuote),
                Some(c) if c == quote => return Ok(out),
                Some(c) => c,
            };
            if c != '\\' {
                out.push(c);
                continue;
            }
            let e = match self.chars.next() {
                None => return Err(JaasError::UnterminatedQuote),
                Some(e) => e,
            };
            match e {
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\u{b}'),
                '0'..='7' => {
                    // Up to three octal digits, two when the first is above 3 (a byte).
                    let max_digits = if e <= '3' { 3 } else { 2 };
                    let mut value = e as u32 - '0' as u32;
                    for _ in 1..max_digits {
                        match self.chars.peek() {
                            Some(&d @ '0'..='7') => {
                                value = value * 8 + (d as u32 - '0' as u32);
                                self.chars.next();
                            }
                            _ => break,
                        }
                    }
                    // At most 0o377: always a char.
                    out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
                }
                other => out.push(other),
            }
        }
    }
}

/// A name as an error may show it: an unquoted identifier as it is, anything else (which
/// may be a misplaced value, a password) as `[redacted]`.
fn printable_name(name: String, quoted: bool) -> String {
    let identifier = !quoted
        && !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if identifier {
        name
    } else {
        "[redacted]".to_owned()
    }
}

/// Parses a client's `sasl.jaas.config`: exactly one entry.
pub(crate) fn parse(text: &str) -> Result<JaasEntry, JaasError> {
    let mut tokens = Tokens {
        chars: text.chars().peekable(),
    };
    let mut entries = Vec::new();
    while let Some(first) = tokens.next_token()? {
        entries.push(parse_entry(&mut tokens, first)?);
    }
    match entries.len() {
        0 => Err(JaasError::NoLoginModule),
        1 => Ok(entries.swap_remove(0)),
        n => Err(JaasError::ModuleCount(n)),
    }
}

fn parse_entry(tokens: &mut Tokens<'_>, first: Token) -> Result<JaasEntry, JaasError> {
    let login_module = first.text().ok_or(JaasError::NoLoginModule)?;
    let flag = match tokens.next_token()? {
        None => return Err(JaasError::MissingFlag),
        Some(t @ (Token::Word(_) | Token::Quoted(_))) => {
            let quoted = matches!(t, Token::Quoted(_));
            let f = t.text().unwrap_or_default();
            match f.to_ascii_uppercase().as_str() {
                "REQUIRED" => ControlFlag::Required,
                "REQUISITE" => ControlFlag::Requisite,
                "SUFFICIENT" => ControlFlag::Sufficient,
                "OPTIONAL" => ControlFlag::Optional,
                _ => return Err(JaasError::InvalidFlag(printable_name(f, quoted))),
            }
        }
        Some(Token::Semi | Token::Eq) => return Err(JaasError::MissingFlag),
    };
    let mut options = BTreeMap::new();
    loop {
        let key = match tokens.next_token()? {
            None => return Err(JaasError::NotTerminated),
            Some(Token::Semi) => break,
            Some(Token::Eq) => return Err(JaasError::UnexpectedToken('=')),
            Some(Token::Word(k)) => (k, false),
            Some(Token::Quoted(k)) => (k, true),
        };
        let (key, quoted) = key;
        if tokens.next_token()? != Some(Token::Eq) {
            return Err(JaasError::MissingValue {
                key: printable_name(key, quoted),
            });
        }
        let Some(value) = tokens.next_token()?.and_then(Token::text) else {
            return Err(JaasError::MissingValue {
                key: printable_name(key, quoted),
            });
        };
        options.insert(key, value);
    }
    Ok(JaasEntry {
        login_module,
        flag,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

    fn opts(e: &JaasEntry) -> Vec<(&str, &str)> {
        e.options
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn kafkas_documented_form() {
        let e = parse(&format!(
            r#"{PLAIN} required username="alice" password="alice-secret";"#
        ))
        .unwrap();
        assert_eq!(e.login_module, PLAIN);
        assert_eq!(e.flag, ControlFlag::Required);
        assert_eq!(
            opts(&e),
            [("password", "alice-secret"), ("username", "alice")]
        );
    }

    #[test]
    fn quotes_escapes_words_and_comments() {
        let text = format!(
            "  {PLAIN}\n\tREQUIRED // a comment\n username='a\"b' /* block\n comment */ \
             password=\"p\\\"w\\\\d\\n\\t\\101\\x\" bare=word-with.dots:and$; "
        );
        let e = parse(&text).unwrap();
        assert_eq!(
            opts(&e),
            [
                ("bare", "word-with.dots:and$"),
                ("password", "p\"w\\d\n\tAx"),
                ("username", "a\"b"),
            ]
        );
        // A lone `/` is the comment character: the rest of the line is gone.
        let e = parse(&format!("{PLAIN} optional k=a/b\n;")).unwrap();
        assert_eq!(opts(&e), [("k", "a")]);
        // A repeated option keeps its last value; an empty quoted value is a value.
        let e = parse(&format!(r#"{PLAIN} sufficient k="1" k="2" e="";"#)).unwrap();
        assert_eq!(opts(&e), [("e", ""), ("k", "2")]);
        assert_eq!(e.flag, ControlFlag::Sufficient);
    }

    #[test]
    fn malformed_entries_are_refused_with_a_reason() {
        let cases: &[(&str, JaasError)] = &[
            ("", JaasError::NoLoginModule),
            ("  // only a comment", JaasError::NoLoginModule),
            ("M", JaasError::MissingFlag),
            ("M ;", JaasError::MissingFlag),
            ("M mandatory;", JaasError::InvalidFlag("mandatory".into())),
            ("M required username=\"u\"", JaasError::NotTerminated),
            (
                "M required username;",
                JaasError::MissingValue {
                    key: "username".into(),
                },
            ),
            (
                "M required username=;",
                JaasError::MissingValue {
                    key: "username".into(),
                },
            ),
            ("M required =\"x\";", JaasError::UnexpectedToken('=')),
            (
                "M required password=\"never-closed;",
                JaasError::UnterminatedQuote,
            ),
            (
                "M required password=\"line\nbreak\";",
                JaasError::UnterminatedQuote,
            ),
            ("M required /* open", JaasError::UnterminatedComment),
            ("A required; B required;", JaasError::ModuleCount(2)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text).err().as_ref(), Some(expected), "{text:?}");
        }
    }

    #[test]
    fn errors_never_hold_a_value() {
        for text in [
            "M required password=\"s3cr3t-value",
            "M required password=\"s3cr3t-value\"",
            "M required password=\"s3cr3t-value\" other;",
            // A value where a name belongs (a missing `=`): not echoed either.
            "M required username=\"u\" \"s3cr3t-value\";",
            "M \"s3cr3t-value\";",
            "M s3cr3t$value;",
        ] {
            let err = parse(text).err().expect("malformed");
            assert!(!format!("{err} {err:?}").contains("s3cr3t"), "{err:?}");
        }
    }
}
