//! PLAIN (RFC 4616): one message, `authzid NUL authcid NUL passwd`, with an empty
//! authorization id as Kafka's clients send it.

use crate::secret::Secret;

/// The PLAIN message for `username` and `password`.
pub(super) fn message(username: &str, password: &Secret) -> Vec<u8> {
    let mut out = Vec::with_capacity(username.len() + password.expose().len() + 2);
    out.push(0);
    out.extend_from_slice(username.as_bytes());
    out.push(0);
    out.extend_from_slice(password.expose().as_bytes());
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc_4616_layout() {
        let m = super::message("tim", &"tanstaaftanstaaf".into());
        assert_eq!(m, b"\0tim\0tanstaaftanstaaf");
    }
}
