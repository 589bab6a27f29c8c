//! `stormark s3 --embedded`: an S3 server inside the process (s3s with its filesystem backend)
//! on a directory of its own, so that the command can be tried with nothing installed. It
//! serves path-style S3 over plain HTTP/1.1 on the threads of its own runtime (named
//! `s3-embedded`, so that a profile or a benchmark can tell them from the client's), signs with
//! keys made for this run, and removes its directory when it stops.

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;

use std::sync::Arc;

use hyper::service::Service;
use hyper_util::rt::TokioIo;
use s3s::auth::SimpleAuth;
use s3s::service::{S3Service, S3ServiceBuilder};
use tokio::sync::{watch, RwLock};

use crate::Credentials;

/// Why the embedded server could not start.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// Its data directory could not be made.
    #[error("--embedded: cannot make its data directory in {dir}: {cause}")]
    Directory {
        /// The parent directory.
        dir: String,
        /// What the system said.
        cause: std::io::Error,
    },
    /// The listening address could not be bound.
    #[error("--embedded-listen {addr}: cannot listen there: {cause}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        cause: std::io::Error,
    },
    /// Its runtime or its filesystem backend failed to start.
    #[error("--embedded: cannot start the server: {0}")]
    Start(String),
}

/// A running embedded server. Dropping it stops the server and removes its directory with
/// every object in it.
#[derive(Debug)]
pub struct EmbeddedServer {
    endpoint: String,
    credentials: Credentials,
    stop: Option<watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
    // Dropped last: the server has stopped writing by then.
    dir: tempfile::TempDir,
}

impl EmbeddedServer {
    /// Starts a server on `listen` (port 0: any free port) with a fresh directory under
    /// `parent` holding one empty bucket, `bucket`.
    pub fn start(
        listen: SocketAddr,
        parent: &Path,
        bucket: &str,
    ) -> Result<EmbeddedServer, EmbeddedError> {
        let dir = tempfile::Builder::new()
            .prefix("stormark-embedded-s3-")
            .tempdir_in(parent)
            .map_err(|cause| EmbeddedError::Directory {
                dir: parent.display().to_string(),
                cause,
            })?;
        std::fs::create_dir(dir.path().join(bucket)).map_err(|cause| EmbeddedError::Directory {
            dir: dir.path().display().to_string(),
            cause,
        })?;
        let listener = std::net::TcpListener::bind(listen)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|cause| EmbeddedError::Listen {
                addr: listen,
                cause,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|e| EmbeddedError::Start(e.to_string()))?;
        let credentials = Credentials {
            access_key: format!("stormark{}", random_hex(6)?),
            secret_key: random_hex(20)?,
        };
        let fs = s3s_fs::FileSystem::new(dir.path())
            .map_err(|e| EmbeddedError::Start(format!("{e:?}")))?;
        let mut builder = S3ServiceBuilder::new(fs);
        builder.set_auth(SimpleAuth::from_single(
            credentials.access_key.clone(),
            credentials.secret_key.clone(),
        ));
        let service = builder.build();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("s3-embedded")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| EmbeddedError::Start(e.to_string()))?;
        let (stop, mut stopped) = watch::channel(false);
        let lock = Arc::new(RwLock::new(()));
        let thread = std::thread::Builder::new()
            .name("s3-embedded".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    loop {
                        let socket = tokio::select! {
                            accepted = listener.accept() => match accepted {
                                Ok((socket, _)) => socket,
                                // Out of descriptors and the like: the clients see it as
                                // refused or reset connections, counted by kind.
                                Err(_) => continue,
                            },
                            _ = stopped.changed() => break,
                        };
                        let _ = socket.set_nodelay(true);
                        let service = ListsAlone {
                            inner: service.clone(),
                            lock: lock.clone(),
                        };
                        tokio::spawn(async move {
                            let _ = hyper::server::conn::http1::Builder::new()
                                .keep_alive(true)
                                .serve_connection(TokioIo::new(socket), service)
                                .await;
                        });
                    }
                });
                // Connections still open are dropped with the runtime.
            })
            .map_err(|e| EmbeddedError::Start(e.to_string()))?;
        Ok(EmbeddedServer {
            endpoint: format!("http://{addr}"),
            credentials,
            stop: Some(stop),
            thread: Some(thread),
            dir,
        })
    }

    /// `http://ADDR:PORT`, the address it listens on.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The keys it accepts (made for this run).
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Its data directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// s3s-fs lists by walking its directory and fails (HTTP 500) when an object is deleted
/// during the walk, so a listing here runs alone: it waits for the requests in flight and
/// holds the others back until it is done. Every other request runs concurrently.
#[derive(Clone)]
struct ListsAlone {
    inner: S3Service,
    lock: Arc<RwLock<()>>,
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for ListsAlone {
    type Response =
        <S3Service as hyper::service::Service<http::Request<hyper::body::Incoming>>>::Response;
    type Error =
        <S3Service as hyper::service::Service<http::Request<hyper::body::Incoming>>>::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn call(&self, req: http::Request<hyper::body::Incoming>) -> Self::Future {
        let list = req.method() == http::Method::GET
            && req
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|p| p == "list-type=2"));
        let inner = self.inner.clone();
        let lock = self.lock.clone();
        Box::pin(async move {
            if list {
                let _alone = lock.write().await;
                Service::call(&inner, req).await
            } else {
                let _shared = lock.read().await;
                Service::call(&inner, req).await
            }
        })
    }
}

/// `bytes` random bytes from the kernel, as hex.
fn random_hex(bytes: usize) -> Result<String, EmbeddedError> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| EmbeddedError::Start(format!("cannot read /dev/urandom: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}
