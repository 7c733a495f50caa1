//! How the server runs, and where requests find their files.

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::endpoint::EndpointOptions;
use crate::http;
use crate::http::Body;
use crate::policy::PolicySource;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// UDP address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// Files are served from here.
    pub root: PathBuf,
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
    /// Where the policy comes from.
    pub policy: PolicySource,
    /// qlog, key log, stats and idle timeout, as the client has them.
    pub endpoint: EndpointOptions,
    /// Store uploaded bodies here; without it they are counted and dropped.
    pub upload_dir: Option<PathBuf>,
    /// Concurrent bidirectional streams a client may open (quiche raises
    /// the limit as streams complete).
    pub max_streams: u64,
}

impl ServerConfig {
    /// The file `path` names under the root, or an error response.
    pub(super) fn open_file(&self, path: &str) -> (u16, Body) {
        let not_found = || (404, Body::bytes(b"not found\n".to_vec()));
        let Some(file_path) = http::resolve(&self.root, path) else { return not_found() };
        let Ok(file) = File::open(&file_path) else { return not_found() };
        match file.metadata() {
            Ok(metadata) if metadata.is_file() => (200, Body::file(file, metadata.len())),
            _ => not_found(),
        }
    }

    /// Where the body of an upload to `path` goes: a new file under the
    /// upload directory, or nowhere (counted and dropped).
    pub(super) fn upload_sink(&self, path: &str) -> Option<BufWriter<File>> {
        let name = http::resolve(self.upload_dir.as_ref()?, path)?;
        File::create(name).ok().map(BufWriter::new)
    }
}
