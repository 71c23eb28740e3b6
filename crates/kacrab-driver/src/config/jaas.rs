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
//! Values can be passwords, and a malformed line can put one anywhere: no error here
//! holds any text of the input, only what is wrong and where (the option's position).

use std::collections::BTreeMap;

/// Why `sasl.jaas.config` does not parse.
///
/// Holds no text of the input at all, only kinds and positions: a line that lost a
/// `password=` or left a value with spaces unquoted puts a password (or words of it)
/// where a login module, a control flag or an option name belongs, and the parser cannot
/// tell such a word from a mistyped name.
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
    #[error("invalid login module control flag in JAAS config: expected required, requisite, sufficient or optional (the word found is not shown: it may be a misplaced value)")]
    InvalidFlag,
    /// An option name without `=value`.
    #[error("option {option} of the JAAS config entry (counting from 1 after the control flag) has no =value; an unquoted value ends at whitespace, so a value with spaces must be quoted (the option's text is not shown: it may be part of a misplaced value)")]
    MissingValue {
        /// The option's position in the entry, from 1 (the first option after the
        /// control flag).
        option: usize,
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
    let flag = match tokens.next_token()?.map(Token::text) {
        None | Some(None) => return Err(JaasError::MissingFlag),
        Some(Some(f)) => match f.to_ascii_uppercase().as_str() {
            "REQUIRED" => ControlFlag::Required,
            "REQUISITE" => ControlFlag::Requisite,
            "SUFFICIENT" => ControlFlag::Sufficient,
            "OPTIONAL" => ControlFlag::Optional,
            _ => return Err(JaasError::InvalidFlag),
        },
    };
    let mut options = BTreeMap::new();
    // The position of the option being read, from 1, for errors (which hold no text).
    let mut option = 0;
    loop {
        option += 1;
        let key = match tokens.next_token()? {
            None => return Err(JaasError::NotTerminated),
            Some(Token::Semi) => break,
            Some(Token::Eq) => return Err(JaasError::UnexpectedToken('=')),
            Some(Token::Word(k) | Token::Quoted(k)) => k,
        };
        if tokens.next_token()? != Some(Token::Eq) {
            return Err(JaasError::MissingValue { option });
        }
        let Some(value) = tokens.next_token()?.and_then(Token::text) else {
            return Err(JaasError::MissingValue { option });
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
mod tests;
