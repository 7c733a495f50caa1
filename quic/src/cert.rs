//! Self-signed TLS certificates for tests, demos and `flowshare cert`.

use std::fs;
use std::io;
use std::path::Path;
use std::path::PathBuf;

/// Paths of a certificate and its private key in PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertFiles {
    /// The certificate chain (`cert.pem`).
    pub cert: PathBuf,
    /// The private key (`key.pem`).
    pub key: PathBuf,
}

/// Writes a self-signed certificate for `names` (DNS names or IP addresses)
/// to `dir/cert.pem` and `dir/key.pem`, creating `dir` if needed.
pub fn write_self_signed(dir: &Path, names: &[String]) -> io::Result<CertFiles> {
    let certified = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("cannot make a certificate: {e}")))?;
    fs::create_dir_all(dir)?;
    let files = CertFiles { cert: dir.join("cert.pem"), key: dir.join("key.pem") };
    fs::write(&files.cert, certified.cert.pem())?;
    write_private(&files.key, certified.key_pair.serialize_pem().as_bytes())?;
    Ok(files)
}

/// Writes a file readable only by its owner.
fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    file.write_all(contents)
}

/// A directory that is removed, with its contents, when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Creates a fresh directory under the system's temporary directory.
    pub fn new(label: &str) -> io::Result<ScratchDir> {
        use std::sync::atomic::AtomicU64;
        use std::sync::atomic::Ordering;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("flowshare-{label}-{}-{unique}", std::process::id()));
        fs::create_dir_all(&path)?;
        Ok(ScratchDir { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_pem_certificate_and_a_private_key() {
        let dir = ScratchDir::new("cert-test").unwrap();
        let files = write_self_signed(dir.path(), &["localhost".into(), "127.0.0.1".into()]).unwrap();
        assert!(fs::read_to_string(&files.cert).unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(fs::read_to_string(&files.key).unwrap().contains("PRIVATE KEY-----"));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&files.key).unwrap().permissions().mode() & 0o777, 0o600);
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }
}
