//! Text for people, shared by every renderer: a metric's name as words, and text escaped
//! for HTML. A leaf: it imports no other module of the report.

/// A metric's name for people: `wakeup_latency` -> `wake-up latency`.
pub fn metric_name(metric: &str) -> String {
    metric
        .replace("wakeup", "wake-up")
        .replace("roundtrip", "round trip")
        .replace("dsp", "DSP")
        .replace('_', " ")
}

/// A cause's kind (`--why`'s `kind`) in words: `idle_exit` -> `idle exit`, `self` ->
/// `own running`; the others are words already.
pub fn cause_kind(kind: &str) -> String {
    match kind {
        "idle_exit" => "idle exit".into(),
        "self" => "own running".into(),
        k => k.replace('_', " "),
    }
}

/// Escapes text for HTML, its backquoted parts (`` `audiolat jitter --why` ``) as
/// `<code>`; an unpaired backquote stays as it is.
pub fn escape_code(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return escape(s);
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i % 2 == 1 {
                format!("<code>{}</code>", escape(p))
            } else {
                escape(p)
            }
        })
        .collect()
}

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn backquoted_parts_become_code_and_everything_is_escaped() {
        assert_eq!(
            super::escape_code("run `audiolat jitter --why` <now>"),
            "run <code>audiolat jitter --why</code> &lt;now&gt;"
        );
        assert_eq!(super::escape_code("a `<b>"), "a `&lt;b&gt;");
    }
}
