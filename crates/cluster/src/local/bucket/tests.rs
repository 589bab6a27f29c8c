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
    assert!(is_run_id("20261126-001739-0a1b2c3d4e5f"));
    assert!(is_run_id(&crate::new_run_id()));
    // Issue 52: a run's id is not predictable from the time and the PID.
    assert_ne!(crate::new_run_id(), crate::new_run_id());
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
        "20261126-001739-0A1B2C3D4E5F",
        "20261126-001739-0a1b2c3d4e5g",
        "20261126-001739-0a1b2c3d4e5",
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
    use super::cleanup::{each_page, list_pages, MAX_LIST_PAGES};

    #[test]
    fn a_listing_ends_on_a_repeated_token_or_a_page_limit() {
        // A service that answers every page with the same token: stopped at the second.
        let mut calls = 0;
        let why = each_page(MAX_LIST_PAGES, None, |_| {
            calls += 1;
            Ok(Some("again".into()))
        })
        .unwrap();
        assert_eq!(calls, 2);
        assert!(why.contains("same continuation token"), "{why}");
        // Tokens that never repeat: stopped at the limit, said.
        let mut n = 0u64;
        let why = each_page(MAX_LIST_PAGES, None, |_| {
            n += 1;
            Ok(Some(n.to_string()))
        })
        .unwrap();
        assert!(why.contains("pages"), "{why}");
        // A listing that ends, ends.
        let mut left = 3;
        assert_eq!(
            each_page(MAX_LIST_PAGES, None, |_| {
                left -= 1;
                Ok((left > 0).then(|| left.to_string()))
            }),
            None
        );
    }

    /// Issue 54: a listing of a host's own prefix that a service keeps handing new tokens for
    /// went on for a hundred thousand pages: it stops once the pages could hold every key
    /// the host wrote there, a tenth of a page each, and ten more.
    #[test]
    fn a_listing_of_what_a_host_wrote_stops_once_it_could_hold_it_all() {
        assert_eq!(list_pages(0), 10);
        assert_eq!(list_pages(1500), 25);
        assert_eq!(list_pages(u64::MAX), MAX_LIST_PAGES);
        let mut n = 0u32;
        let why = each_page(list_pages(1500), Some(1500), |_| {
            n += 1;
            Ok(Some(n.to_string()))
        })
        .unwrap();
        assert_eq!(n, 25);
        assert!(why.contains("the 1500 objects this host wrote"), "{why}");
    }
}
