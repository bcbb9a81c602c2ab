//! How a verb's error is written for the operator: the error and each of its causes, once.
//!
//! Library errors name their cause in their own message (`{file}: cannot read: {source}`), so
//! that a plain `{}` of them says everything; anyhow's `{:#}` then appends the same cause again
//! from the chain (`... (os error 2): No such file or directory (os error 2)`). Here a cause
//! already written by the message before it is left out.

/// The error's chain, `: `-separated, without a cause its predecessor's message already holds.
pub fn chain(error: &anyhow::Error) -> String {
    let mut text = String::new();
    let mut previous = String::new();
    for cause in error.chain() {
        let message = cause.to_string();
        if previous.contains(&message) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&message);
        previous = message;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[derive(Debug, thiserror::Error)]
    #[error("{file}: cannot read: {source}")]
    struct Unreadable {
        file: String,
        source: std::io::Error,
    }

    fn missing() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory")
    }

    #[test]
    fn a_cause_the_message_names_is_written_once() {
        let e = anyhow::Error::new(Unreadable {
            file: "/etc/range.toml".into(),
            source: missing(),
        });
        assert_eq!(
            format!("{e:#}"),
            "/etc/range.toml: cannot read: No such file or directory: No such file or directory",
            "anyhow's own chain repeats it (what this module is for)"
        );
        assert_eq!(
            chain(&e),
            "/etc/range.toml: cannot read: No such file or directory"
        );
    }

    #[test]
    fn context_and_causes_the_message_does_not_name_are_all_kept() {
        let e = Err::<(), _>(missing())
            .context("reading the flight log")
            .context("sortie")
            .unwrap_err();
        assert_eq!(
            chain(&e),
            "sortie: reading the flight log: No such file or directory"
        );
    }
}
