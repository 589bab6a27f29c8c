use super::*;

/// Issue 53: `--remove-run ID` lists `<prefix>/ID-h` and removes only the hosts' prefixes,
/// `ID-h<N>/`.
#[test]
fn every_hosts_prefix_is_a_number_and_a_slash() {
    let base = "stormark/20261126-001739-11450-h";
    for key in ["h0/job/w0/r0", "h12/job/w1/r3", "h007/x"] {
        let key = format!("stormark/20261126-001739-11450-{key}");
        assert!(owned(base, true, &key), "{key}");
    }
    for key in ["h1x/a", "hx/b", "h/c", "hosts.csv", "h3", "h-1/d", "h 1/e"] {
        let key = format!("stormark/20261126-001739-11450-{key}");
        assert!(!owned(base, true, &key), "{key}");
    }
    assert!(!owned(base, true, "stormark/20261126-001739-1145-h0/x"));
    // One host's own prefix: everything under it.
    let one = "stormark/20261126-001739-11450-h0/";
    assert!(owned(
        one,
        false,
        "stormark/20261126-001739-11450-h0/job/w0/r0"
    ));
    assert!(!owned(one, false, "stormark/20261126-001739-11450-h01/x"));
}

#[test]
fn only_a_run_id_names_objects_to_remove() {
    assert!(is_run_id("20261126-001739-11450"));
    assert!(is_run_id(&crate::new_run_id()));
    for bad in [
        "",
        "2026",
        "20261126-001739",
        "20261126-001739-",
        "20261126-001739-1145x",
        "20261126-001739-11450-h0",
        "../20261126-001739-1",
        "2026112a-001739-1",
        "20261126-001739-12345678901",
    ] {
        assert!(!is_run_id(bad), "{bad}");
    }
}

#[test]
fn shares_add_up() {
    for (n, workers) in [(10u64, 3usize), (2, 4), (0, 1), (100, 7)] {
        let total: u64 = (0..workers).map(|w| share(n, w, workers)).sum();
        assert_eq!(total, n);
    }
}

mod listing_tests {
    use super::each_page;

    #[test]
    fn a_listing_ends_on_a_repeated_token_or_a_page_limit() {
        // A service that answers every page with the same token: stopped at the second.
        let mut calls = 0;
        let why = each_page(|_| {
            calls += 1;
            Ok(Some("again".into()))
        })
        .unwrap();
        assert_eq!(calls, 2);
        assert!(why.contains("same continuation token"), "{why}");
        // Tokens that never repeat: stopped at the limit, said.
        let mut n = 0u64;
        let why = each_page(|_| {
            n += 1;
            Ok(Some(n.to_string()))
        })
        .unwrap();
        assert!(why.contains("pages"), "{why}");
        // A listing that ends, ends.
        let mut left = 3;
        assert_eq!(
            each_page(|_| {
                left -= 1;
                Ok((left > 0).then(|| left.to_string()))
            }),
            None
        );
    }
}
