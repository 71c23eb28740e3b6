//! A string that must never be printed: passwords, tokens, private keys.

use std::fmt;

/// A secret string (a password, a token, a private key).
///
/// Its [`Debug`](fmt::Debug) and [`Display`](fmt::Display) print `[redacted]`; nothing
/// else in this crate formats it. [`Secret::expose`] is the only way to the text, and is
/// used where the secret must go: into a mechanism's computation or onto the wire.
///
/// The memory is not wiped on drop: the bytes live in ordinary `String`s elsewhere too
/// (the properties the application parsed), so wiping one copy would promise what the
/// process cannot keep.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    #[must_use]
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret text, for the code that must use it.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_print_no_secret() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "[redacted]");
        assert_eq!(format!("{s}"), "[redacted]");
        assert_eq!(format!("{s:#?}"), "[redacted]");
        assert_eq!(s.expose(), "hunter2");
    }
}
