//! What the client fetches: the requests of `flowshare get` checked,
//! resolved and spread over connections, each a [`Plan`].

use std::net::Ipv6Addr;
use std::net::SocketAddr;
use std::net::ToSocketAddrs;
use std::path::PathBuf;

use crate::http::Protocol;
use crate::http::Url;
use crate::policy::WEIGHT_HEADER;

/// One connection and what it fetches.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Local address to bind (port 0 for any).
    pub local: SocketAddr,
    /// The server.
    pub server: SocketAddr,
    /// TLS server name.
    pub server_name: Option<String>,
    /// `:authority` of the requests.
    pub authority: String,
    /// The requests.
    pub requests: Vec<Request>,
}

/// One request.
#[derive(Clone, Debug)]
pub struct Request {
    /// Path (with query).
    pub path: String,
    /// Where the response body goes.
    pub sink: Sink,
    /// Upload this file with PUT instead of downloading (HTTP/3 only).
    pub upload: Option<PathBuf>,
}

/// Where a response body goes.
#[derive(Clone, Debug)]
pub enum Sink {
    /// Written to this file.
    File(PathBuf),
    /// Counted and dropped.
    Discard,
}

/// What `flowshare get` is asked to fetch, as given on its command line.
#[derive(Clone, Debug)]
pub struct Fetch {
    /// URLs (https://host:port/path), all of the same server.
    pub urls: Vec<String>,
    /// Directory the downloads are written to, under their file names.
    pub out: Option<PathBuf>,
    /// Upload this file to every URL (PUT) instead of downloading.
    pub upload: Option<PathBuf>,
    /// Application protocol.
    pub protocol: Protocol,
    /// Spread the URLs over this many connections (round robin), all at once.
    pub connections: usize,
    /// Open a new connection for each URL, one after the other, instead.
    pub connection_per_url: bool,
    /// Fetch the first URL on one connection, then the rest on a second
    /// connection that resumes the first one's TLS session.
    pub resume: bool,
    /// Local addresses for the connections, in turn; none for any.
    pub bind: Vec<SocketAddr>,
    /// Send to this address instead of resolving the URLs' host.
    pub connect: Option<SocketAddr>,
    /// TLS server name, instead of the URLs' host.
    pub sni: Option<String>,
    /// Ask the server for at most this weight.
    pub weight: Option<f64>,
    /// Extra request headers, each `name: value`.
    pub headers: Vec<String>,
}

/// A fetch ready to run.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The server's `host:port`, as the URLs name it.
    pub authority: String,
    /// Connections to open: all of a batch at once, one batch after the
    /// other.
    pub batches: Vec<Vec<Plan>>,
    /// Extra request headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// Number of requests in all batches.
    pub requests: usize,
}

impl Fetch {
    /// Checks the fetch, resolves the server, creates the output directory
    /// and spreads the requests over connections.
    pub fn prepare(&self) -> Result<Schedule, String> {
        let urls = self.urls.iter().map(|url| Url::parse(url)).collect::<Result<Vec<_>, _>>()?;
        let first = urls.first().ok_or("no URL to fetch")?;
        if let Some(other) = urls.iter().find(|url| url.authority() != first.authority()) {
            return Err(format!("all URLs must name the same server: {first} and {other}"));
        }
        if self.upload.is_some() && self.protocol != Protocol::H3 {
            return Err("--upload needs --alpn h3 (hq-interop has no uploads)".into());
        }
        if self.upload.is_none() && self.out.is_none() {
            return Err("--out DIR is required for downloads".into());
        }
        let server = match self.connect {
            Some(address) => address,
            None => (first.host.as_str(), first.port)
                .to_socket_addrs()
                .map_err(|e| format!("resolving {}: {e}", first.host))?
                .next()
                .ok_or_else(|| format!("{} has no address", first.host))?,
        };
        let headers = self.request_headers()?;
        if let Some(out) = &self.out {
            std::fs::create_dir_all(out).map_err(|e| format!("--out {}: {e}", out.display()))?;
        }
        let mut requests = Vec::with_capacity(urls.len());
        for url in &urls {
            let sink = match &self.out {
                Some(out) if self.upload.is_none() => Sink::File(out.join(url.file_name()?)),
                _ => Sink::Discard,
            };
            requests.push(Request { path: url.path.clone(), sink, upload: self.upload.clone() });
        }
        let server_name = self.sni.clone().or_else(|| first.server_name().map(str::to_string));
        let local_default: SocketAddr =
            if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { (Ipv6Addr::UNSPECIFIED, 0).into() };
        let local =
            |index: usize| if self.bind.is_empty() { local_default } else { self.bind[index % self.bind.len()] };
        let plan = |index: usize, requests: Vec<Request>| Plan {
            local: local(index),
            server,
            server_name: server_name.clone(),
            authority: first.authority(),
            requests,
        };
        let batches: Vec<Vec<Plan>> = if self.resume {
            if requests.len() < 2 {
                return Err("--resume needs at least two URLs: one to start the session, one to resume it".into());
            }
            let rest = requests.split_off(1);
            vec![vec![plan(0, requests)], vec![plan(1, rest)]]
        } else if self.connection_per_url {
            requests.into_iter().enumerate().map(|(index, request)| vec![plan(index, vec![request])]).collect()
        } else {
            let connections = self.connections.min(requests.len()).max(1);
            let mut per_connection: Vec<Vec<Request>> = vec![Vec::new(); connections];
            for (index, request) in requests.into_iter().enumerate() {
                per_connection[index % connections].push(request);
            }
            vec![per_connection.into_iter().enumerate().map(|(index, requests)| plan(index, requests)).collect()]
        };
        Ok(Schedule { authority: first.authority(), batches, headers, requests: urls.len() })
    }

    /// The weight request and the extra headers, as request headers.
    fn request_headers(&self) -> Result<Vec<(String, String)>, String> {
        let mut headers = Vec::new();
        if let Some(weight) = self.weight {
            if !(weight > 0.0 && weight.is_finite()) {
                return Err(format!("--weight {weight}: must be a positive number"));
            }
            headers.push((WEIGHT_HEADER.to_string(), weight.to_string()));
        }
        for header in &self.headers {
            let (name, value) =
                header.split_once(':').ok_or_else(|| format!("--header {header:?}: write name: value"))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
        Ok(headers)
    }
}
