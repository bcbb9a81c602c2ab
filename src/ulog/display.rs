//! Text formatting shared by reasons, summaries, the inspector and the HTML report: byte sizes
//! (`41.2 MB`), thousands separators (`1,146,099`) and HTML/SVG escaping, which the report's
//! pages and the plots' state band and ground lane all write through.

/// A byte count the way people say file sizes: `612 bytes`, `4.1 kB`, `41.2 MB`, `1.07 GB`
/// (powers of 1,000, like file managers).
pub fn human_size(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1_000 {
        format!("{bytes} bytes")
    } else if bytes < 1_000_000 {
        format!("{:.1} kB", b / 1e3)
    } else if bytes < 1_000_000_000 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.2} GB", b / 1e9)
    }
}

/// An integer with comma thousands separators.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Escapes text for HTML and SVG.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
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
    use super::*;

    #[test]
    fn sizes_and_groups() {
        assert_eq!(human_size(612), "612 bytes");
        assert_eq!(human_size(41_234_567), "41.2 MB");
        assert_eq!(human_size(4_053), "4.1 kB");
        assert_eq!(grouped(1_146_099), "1,146,099");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(0), "0");
    }

    #[test]
    fn escapes_and_quotes() {
        assert_eq!(esc("<a&'\">"), "&lt;a&amp;&#39;&quot;&gt;");
    }
}
