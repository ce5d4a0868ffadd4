//! A PostgreSQL store's URL: recognised in place of a file's path, and shown without its password.

use std::path::Path;

/// The PostgreSQL URL `path` holds, if it is one (`postgres://` or `postgresql://`).
pub fn postgres_url(path: &Path) -> Option<&str> {
    path.to_str()
        .filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// The URL as it may be shown: a password in it is replaced by `***`.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{scheme}://{name}:***@{host}")
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_and_passwords_hidden() {
        assert!(postgres_url(Path::new("postgres://a@h/db")).is_some());
        assert!(postgres_url(Path::new("postgresql://a@h/db")).is_some());
        assert!(postgres_url(Path::new("./postgres.db")).is_none());
        assert_eq!(
            redacted("postgres://u:secret@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(redacted("postgres://u@h/db"), "postgres://u@h/db");
    }
}
