//! `ListObjectsV2` answers: the keys, and where the next page starts.

/// One page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The keys on this page, in the service's order.
    pub keys: Vec<String>,
    /// Where the next page starts, when the listing was truncated.
    pub next: Option<String>,
}

/// Reads the keys and the continuation token of a `ListBucketResult` document. A document
/// that is not one yields an empty listing.
pub fn parse_list(xml: &str) -> Listing {
    let mut keys = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<Key>") {
        let after = &rest[start + 5..];
        let Some(end) = after.find("</Key>") else {
            break;
        };
        keys.push(unescape(&after[..end]));
        rest = &after[end + 6..];
    }
    let truncated = element(xml, "IsTruncated").is_some_and(|t| t == "true");
    let next = element(xml, "NextContinuationToken")
        .filter(|_| truncated)
        .map(|t| unescape(&t));
    Listing { keys, next }
}

/// The text of the first `<name>` element.
/// S3's error `<Code>` of an answer: an identifier (`NoSuchBucket`, `SlowDown`), else
/// `(unprintable code)`: the service's text is printed and recorded, and must carry no
/// escape sequence or forged line.
pub(crate) fn error_code(xml: &str) -> Option<String> {
    let code = element(xml, "Code")?;
    let plain = !code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    Some(if plain {
        code
    } else {
        "(unprintable code)".into()
    })
}

pub(crate) fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{name}>"))? + start;
    Some(xml[start..end].to_string())
}

/// XML's five predefined entities and numeric references.
fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let Some(end) = tail.find(';') else {
            out.push_str(tail);
            return out;
        };
        let entity = &tail[1..end];
        let ch = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            e if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16)
                .ok()
                .and_then(char::from_u32),
            e if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match ch {
            Some(c) => out.push(c),
            None => out.push_str(&tail[..=end]),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_code_is_an_identifier_or_withheld() {
        let xml = |c: &str| format!("<Error><Code>{c}</Code><Message>m</Message></Error>");
        assert_eq!(error_code(&xml("SlowDown")).as_deref(), Some("SlowDown"));
        assert_eq!(
            error_code(&xml("Busy\x1b[2J\nstatus: ok")).as_deref(),
            Some("(unprintable code)")
        );
        assert_eq!(error_code("<Error></Error>"), None);
    }

    #[test]
    fn a_page_and_its_token() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>a+b/c=</NextContinuationToken><Contents><Key>p/1</Key><Size>4</Size></Contents><Contents><Key>p/a&amp;b</Key></Contents></ListBucketResult>"#;
        let l = parse_list(xml);
        assert_eq!(l.keys, vec!["p/1", "p/a&b"]);
        assert_eq!(l.next.as_deref(), Some("a+b/c="));
        let done =
            parse_list("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
        assert_eq!(done, Listing::default());
        assert_eq!(parse_list("garbage <Key>unterminated"), Listing::default());
        assert_eq!(unescape("&#65;&#x42;&bogus;&"), "AB&bogus;&");
    }
}
