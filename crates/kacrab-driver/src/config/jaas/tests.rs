//! The JAAS grammar, its refusals, and that no refusal shows any part of a value.

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
        ("M mandatory;", JaasError::InvalidFlag),
        ("M required username=\"u\"", JaasError::NotTerminated),
        (
            "M required username;",
            JaasError::MissingValue { option: 1 },
        ),
        (
            "M required username=;",
            JaasError::MissingValue { option: 1 },
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

/// The text of every refusal `line` draws, from the parser and from the login module's
/// options as `sasl.jaas.config` reads them: `Display` and `Debug`.
fn refusals(line: &str) -> Option<String> {
    let mut shown = String::new();
    if let Err(e) = parse(line) {
        shown.push_str(&format!("{e} {e:?} "));
    }
    let mut sasl = crate::config::sasl::SaslConfig::default();
    if let Err(e) = sasl.set("sasl.jaas.config", line) {
        shown.push_str(&format!("{e} {e:?}"));
    }
    (!shown.is_empty()).then_some(shown)
}

/// The pieces of `secret` a reader could learn it by: each whitespace-separated word, and
/// each run between the grammar's own characters (where the tokenizer cuts a word), of
/// three characters or more.
fn pieces(secret: &str) -> Vec<&str> {
    let mut out: Vec<&str> = secret.split(char::is_whitespace).collect();
    out.extend(secret.split(|c: char| c.is_whitespace() || ";=\"'/".contains(c)));
    out.retain(|p| p.chars().count() >= 3);
    out
}

fn assert_not_shown(line: &str, secret: &str) {
    let Some(shown) = refusals(line) else {
        return;
    };
    for piece in pieces(secret) {
        assert!(
            !shown.contains(piece),
            "{piece:?} of the value is shown by the refusal of {line:?}: {shown}"
        );
    }
}

/// A password written unquoted with spaces (Java's `JaasConfig` ends a word at
/// whitespace, so `horse` becomes the next option's name): the refusal names no word of
/// it, only the option's position.
#[test]
fn an_unquoted_password_with_spaces_is_not_shown() {
    let line = format!("{PLAIN} required username=\"u\" password=correct horse battery staple;");
    assert_not_shown(&line, "correct horse battery staple");
    // Still useful: the third option (`horse`) has no value.
    assert_eq!(
        parse(&line).err(),
        Some(JaasError::MissingValue { option: 3 })
    );
}

/// A line whose `password=` was lost: the password stands where an option name belongs,
/// or where the control flag or the login module does.
#[test]
fn a_password_out_of_place_is_not_shown() {
    for line in [
        format!("{PLAIN} required username=\"u\" correcthorse;"),
        format!("{PLAIN} required username=\"u\" correcthorse"),
        format!("{PLAIN} correcthorse;"),
        "correcthorse required;".to_owned(),
        "correcthorse;".to_owned(),
        format!("{PLAIN} required username=\"u\" correcthorse=;"),
    ] {
        assert!(refusals(&line).is_some(), "{line:?}");
        assert_not_shown(&line, "correcthorse");
    }
    assert_eq!(
        parse(&format!("{PLAIN} required username=\"u\" correcthorse;")).err(),
        Some(JaasError::MissingValue { option: 2 })
    );
    assert_eq!(
        parse(&format!("{PLAIN} correcthorse;")).err(),
        Some(JaasError::InvalidFlag)
    );
}

/// A value that names an OAUTHBEARER claim (`unsecuredLoginPrincipalClaimName`) is a
/// value too: the refusal says which option, not what it holds.
#[test]
fn an_oauthbearer_option_value_is_not_shown() {
    let line = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
                unsecuredLoginPrincipalClaimName=\"correcthorse\";";
    assert!(refusals(line).is_some());
    assert_not_shown(line, "correcthorse");
}

mod hostile_lines {
    use proptest::prelude::*;

    use super::{assert_not_shown, PLAIN};

    /// Pieces of characters of which no refusal's own text holds three in a row, so that
    /// a piece found in a refusal can only have come from the value.
    /// As an identifier is spelled, or not.
    fn piece(len: &'static str) -> impl Strategy<Value = String> {
        let regex = |chars: &str| {
            proptest::string::string_regex(&format!("{chars}{len}")).expect("a regex")
        };
        prop_oneof![regex("[QXZqxzjJ_-]"), regex("[QXZqxzjJ#$%&@!~^*+?|_-]")]
    }

    /// A secret of one to four words, which may hold the grammar's own characters (`;`,
    /// `=`, quotes, `/`) and a backslash.
    fn secret() -> impl Strategy<Value = String> {
        let glue = prop_oneof![
            4 => Just(""),
            1 => Just(";"),
            1 => Just("="),
            1 => Just("\""),
            1 => Just("'"),
            1 => Just("/"),
            1 => Just("\\"),
        ];
        prop::collection::vec((piece("{3,10}"), glue, piece("{0,6}")), 1..4).prop_map(|words| {
            words
                .into_iter()
                .map(|(a, glue, b)| format!("{a}{glue}{b}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    /// One token of a line: the grammar's, a name, or the secret in some shape.
    fn token(secret: String) -> impl Strategy<Value = String> {
        prop_oneof![
            Just(PLAIN.to_owned()),
            Just("org.apache.kafka.common.security.scram.ScramLoginModule".to_owned()),
            Just("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule".to_owned()),
            Just("required".to_owned()),
            Just("username".to_owned()),
            Just("password".to_owned()),
            Just("unsecuredLoginPrincipalClaimName".to_owned()),
            Just("unsecuredLoginStringClaim_sub".to_owned()),
            Just("unsecuredLoginNumberClaim_n".to_owned()),
            Just("unsecuredLoginExtension_e".to_owned()),
            Just("=".to_owned()),
            Just(";".to_owned()),
            Just("\"u\"".to_owned()),
            Just("/*".to_owned()),
            Just("//".to_owned()),
            Just("\n".to_owned()),
            Just(secret.clone()),
            Just(format!("\"{secret}\"")),
            Just(format!("'{secret}")),
            Just(format!("\"{secret}")),
            Just(format!("password={secret}")),
            Just(format!("unsecuredLoginPrincipalClaimName={secret}")),
            Just(format!("unsecuredLoginExtension_{secret}=v")),
        ]
    }

    fn line() -> impl Strategy<Value = (String, String)> {
        secret().prop_flat_map(|secret| {
            let head = prop_oneof![
                Just(String::new()),
                Just(format!("{PLAIN} required ")),
                Just(format!("{PLAIN} required username=\"u\" ")),
                Just(
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                        .to_owned()
                ),
            ];
            let tail = prop_oneof![Just(""), Just(";"), Just(" ;")];
            (
                head,
                prop::collection::vec(token(secret.clone()), 0..5),
                tail,
                Just(secret),
            )
                .prop_map(|(head, tokens, tail, secret)| {
                    (format!("{head}{}{tail}", tokens.join(" ")), secret)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the line and wherever the secret stands in it, no refusal shows a
        /// piece of the secret.
        #[test]
        fn no_refusal_shows_a_piece_of_a_value((line, secret) in line()) {
            assert_not_shown(&line, &secret);
        }
    }
}
