use super::*;
use crate::{ClientOptions, Mode, NetError, Session};

/// A session of `opts` that writes 64 KiB on each stream: what the server counted.
fn run(opts: &ClientOptions) -> Result<Vec<u64>, NetError> {
    let mut session = Session::open(opts)?;
    for s in &mut session.streams {
        s.write_all(&[7u8; 64 << 10])
            .map_err(|e| NetError::Lost(e.to_string()))?;
    }
    match session.finish() {
        Some(ServerLine::End { bytes, .. }) => Ok(bytes),
        other => Err(NetError::Lost(format!("no end report: {other:?}"))),
    }
}

fn client(server: SocketAddr, bind: Option<std::net::IpAddr>) -> ClientOptions {
    ClientOptions {
        server,
        mode: Mode::Throughput,
        streams: 2,
        time: Duration::from_millis(300),
        reverse: false,
        msg_size: 64 << 10,
        stop: Arc::new(AtomicBool::new(false)),
        udp: false,
        bitrate: 0,
        bidir: false,
        token: Some("mesh-token-0123456789".into()),
        rate: None,
        bind,
    }
}

#[test]
fn a_port_for_one_host_serves_that_host_only() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let opts = ServerOptions {
        once: false,
        stop: stop.clone(),
        token: Some("mesh-token-0123456789".into()),
        allow: vec!["127.0.0.2".parse().unwrap()],
    };
    let refused = Mutex::new(Vec::new());
    let (stranger, allowed, no_token) = std::thread::scope(|scope| {
        scope.spawn(|| {
            serve(listener, &opts, &|line| {
                refused.lock().unwrap().push(line.to_string())
            })
        });
        let me: std::net::IpAddr = "127.0.0.2".parse().unwrap();
        let stranger = run(&client(addr, None));
        let allowed = run(&client(addr, Some(me)));
        let mut no_token = client(addr, Some(me));
        no_token.token = None;
        let no_token = run(&no_token);
        stop.store(true, Ordering::Relaxed);
        (stranger, allowed, no_token)
    });
    // From another address of this host: dropped unread (closed, or reset when its
    // hello was already there).
    assert!(
        matches!(stranger, Err(NetError::Lost(ref why)) if why.contains("closed") || why.contains("reset")),
        "{stranger:?}"
    );
    // From the allowed one, the test runs.
    let allowed = allowed.expect("the allowed host's test");
    assert_eq!(allowed, [64 << 10, 64 << 10]);
    // The right address without the token: refused.
    assert!(
        matches!(no_token, Err(NetError::Refused(_))),
        "{no_token:?}"
    );
    let log = refused.into_inner().unwrap();
    assert!(
        log.iter()
            .any(|l| l.contains("127.0.0.1") && l.contains("not a host of this run")),
        "{log:?}"
    );
}
