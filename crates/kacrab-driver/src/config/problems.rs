//! Loading a whole configuration (property pairs, a Java `.properties` text or file) and
//! reporting every problem in it at once, in file order.
//!
//! Java's `ConfigDef.parse` reports one bad value at a time, but a key it does not know
//! is only a warning (`AbstractConfig.logUnused`: "These configurations '...' were
//! supplied but are not used yet"); kacrab refuses typos of its own keys, so a file with
//! several problems would otherwise be fixed one run at a time, in an order that depends
//! on its lines. Every line is tried, each refusal is kept with its line and key, and the
//! combination is validated (`SessionConfigBuilder::build`) only when every line was
//! accepted: a refused line may be the one that would have made the combination valid.

use std::fmt;
use std::path::Path;

use super::properties::parse_entries;
use super::{SessionConfigBuilder, SessionConfigError};

/// One refused line of a configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigProblem {
    /// The 1-based line of a properties text; `None` for property pairs, or for a
    /// problem of the combination found when it was validated.
    pub line: Option<usize>,
    /// The key as written (empty for a problem of the combination).
    pub key: String,
    /// Why it was refused (never a secret value).
    pub error: SessionConfigError,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.key.is_empty()) {
            (Some(line), false) => write!(f, "line {line} ({}): {}", self.key, self.error),
            (Some(line), true) => write!(f, "line {line}: {}", self.error),
            (None, false) => write!(f, "{}: {}", self.key, self.error),
            (None, true) => write!(f, "{}", self.error),
        }
    }
}

/// Every problem of a configuration, in file order (see
/// [`SessionConfigError::Problems`]). Never empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblems(Vec<ConfigProblem>);

impl ConfigProblems {
    /// The problems, in file order.
    #[must_use]
    pub fn problems(&self) -> &[ConfigProblem] {
        &self.0
    }
}

impl fmt::Display for ConfigProblems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        let plural = if n == 1 { "" } else { "s" };
        write!(f, "{n} problem{plural} in the configuration:")?;
        for p in &self.0 {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

/// Tries every entry: the builder if all were accepted. One problem is returned as
/// itself unless it has a line, several (or a line's) as
/// [`SessionConfigError::Problems`].
pub(super) fn load<'a>(
    entries: impl IntoIterator<Item = (Option<usize>, &'a str, Result<&'a str, SessionConfigError>)>,
) -> Result<SessionConfigBuilder, SessionConfigError> {
    let mut builder = SessionConfigBuilder::default();
    let mut problems = Vec::new();
    for (line, key, value) in entries {
        if let Err(error) = value.and_then(|v| builder.set(key, v).map(|_| ())) {
            problems.push(ConfigProblem {
                line,
                key: key.to_owned(),
                error,
            });
        }
    }
    if problems.is_empty() {
        return Ok(builder);
    }
    debug_assert!(!problems.is_empty());
    // A lone problem of property pairs is the error itself, as before lists existed; a
    // line of a file keeps its line number.
    if problems.len() == 1 && problems[0].line.is_none() {
        return Err(problems.remove(0).error);
    }
    Err(SessionConfigError::Problems(ConfigProblems(problems)))
}

/// [`SessionConfigBuilder::from_java_properties`].
pub(super) fn from_text(text: &str) -> Result<SessionConfigBuilder, SessionConfigError> {
    let entries = parse_entries(text);
    load(entries.iter().map(|entry| match entry {
        Ok(e) => (Some(e.line), e.key.as_str(), Ok(e.value.as_str())),
        Err(malformed) => (Some(malformed.line), "", Err((*malformed).into())),
    }))
}

/// [`SessionConfigBuilder::from_properties_file`].
pub(super) fn from_file(path: &Path) -> Result<SessionConfigBuilder, SessionConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| SessionConfigError::ReadFile {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    from_text(&text)
}
