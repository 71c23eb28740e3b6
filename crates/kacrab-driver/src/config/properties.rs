//! Reading a Java `.properties` file as `java.util.Properties.load(Reader)` reads it, so
//! a Java producer's `producer.properties` feeds [`SessionConfig::from_properties`]
//! unchanged.
//!
//! The rules (`java.util.Properties#load(Reader)`'s documentation and `LineReader`):
//! a line whose first non-blank character is `#` or `!` is a comment; blank lines are
//! skipped; a line ending in an odd number of backslashes continues on the next line,
//! whose leading blanks are dropped; the key ends at the first unescaped `=`, `:` or
//! blank, then blanks and at most one `=`/`:` (and the blanks after it) separate it from
//! the value; `\t`, `\n`, `\r`, `\f` and `\uXXXX` are escapes, and a backslash before
//! any other character stands for that character. Blanks are space, tab and form feed.
//!
//! [`SessionConfig::from_properties`]: super::SessionConfig::from_properties

/// A `\uXXXX` escape without four hex digits (Java's `IllegalArgumentException:
/// Malformed \uxxxx encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed \\uxxxx escape in the properties text, in the entry starting on line {line}")]
#[non_exhaustive]
pub struct MalformedProperties {
    /// The 1-based line the entry starts on.
    pub line: usize,
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

/// Parses a Java properties text into `(key, value)` pairs in file order (a later pair
/// for the same key wins, as in [`SessionConfig::from_properties`]).
///
/// # Errors
/// [`MalformedProperties`] for a `\u` escape not followed by four hex digits.
///
/// [`SessionConfig::from_properties`]: super::SessionConfig::from_properties
pub fn parse_java_properties(text: &str) -> Result<Vec<(String, String)>, MalformedProperties> {
    parse_entries(text)
        .into_iter()
        .map(|entry| entry.map(|e| (e.key, e.value)))
        .collect()
}

/// One entry of a properties text, with the line it starts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The 1-based line the entry starts on.
    pub(crate) line: usize,
    pub(crate) key: String,
    pub(crate) value: String,
}

/// Every entry of a properties text in file order, a malformed one in its place, so a
/// caller can report every problem of a file at once.
pub(crate) fn parse_entries(text: &str) -> Vec<Result<Entry, MalformedProperties>> {
    let mut entries = Vec::new();
    let mut logical = String::new();
    let mut start_line = 0;
    let mut continuing = false;
    // `split` on '\n' and trimming one trailing '\r' handles \n and \r\n; a lone \r
    // ends a line too.
    for (i, raw) in text
        .split('\n')
        .flat_map(|l| {
            let l = l.strip_suffix('\r').unwrap_or(l);
            l.split('\r')
        })
        .enumerate()
    {
        let line = raw.trim_start_matches(is_blank);
        if !continuing {
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            start_line = i + 1;
        }
        let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
        if trailing % 2 == 1 {
            logical.push_str(&line[..line.len() - 1]);
            continuing = true;
            continue;
        }
        logical.push_str(line);
        continuing = false;
        entries.push(split_entry(&logical, start_line));
        logical.clear();
    }
    if continuing && !logical.is_empty() {
        entries.push(split_entry(&logical, start_line));
    }
    entries
}

/// Splits one logical line into its unescaped key and value.
fn split_entry(line: &str, line_no: usize) -> Result<Entry, MalformedProperties> {
    let chars: Vec<char> = line.chars().collect();
    let mut key_end = chars.len();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == '=' || c == ':' || is_blank(c) => {
                key_end = i;
                break;
            }
            _ => i += 1,
        }
    }
    let mut v = key_end.min(chars.len());
    while v < chars.len() && is_blank(chars[v]) {
        v += 1;
    }
    if v < chars.len() && (chars[v] == '=' || chars[v] == ':') {
        v += 1;
        while v < chars.len() && is_blank(chars[v]) {
            v += 1;
        }
    }
    let key = unescape(&chars[..key_end.min(chars.len())], line_no)?;
    let value = unescape(&chars[v.min(chars.len())..], line_no)?;
    Ok(Entry {
        line: line_no,
        key,
        value,
    })
}

fn unescape(chars: &[char], line: usize) -> Result<String, MalformedProperties> {
    let mut out = String::with_capacity(chars.len());
    let mut it = chars.iter().copied();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = it.by_ref().take(4).collect();
                let code = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or(MalformedProperties { line })?;
                // A lone surrogate half can not be a Rust char; Java keeps it, we use
                // U+FFFD (no Kafka key or sensible value contains one).
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, String)> {
        parse_java_properties(text).unwrap()
    }

    fn pair(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn separators_comments_and_blanks() {
        assert_eq!(
            parse("# c\n  ! c\n\n a=1\nb: 2\nc 3\nd\t=\t4 \ne\nf=\n"),
            vec![
                pair("a", "1"),
                pair("b", "2"),
                pair("c", "3"),
                pair("d", "4 "),
                pair("e", ""),
                pair("f", "")
            ]
        );
        assert_eq!(
            parse("a==b\r\nc:=d\re=f"),
            vec![pair("a", "=b"), pair("c", "=d"), pair("e", "f")]
        );
    }

    #[test]
    fn continuations_and_escapes() {
        assert_eq!(
            parse("list = a,\\\n        b,\\\r\n   c\nx=ends\\\\\ny=1"),
            vec![pair("list", "a,b,c"), pair("x", "ends\\"), pair("y", "1")]
        );
        assert_eq!(
            parse("k\\ ey\\:x = t\\tu\\u00e9\\q"),
            vec![pair("k ey:x", "t\tu\u{e9}q")]
        );
        // A comment line does not continue.
        assert_eq!(parse("# a \\\nb=1"), vec![pair("b", "1")]);
        assert_eq!(
            parse_java_properties("a=\\u12"),
            Err(MalformedProperties { line: 1 })
        );
    }
}
