//! No secret in any file or log line: an endpoint that echoes the request's `Authorization`
//! header in its error body (as some providers do), configured with a key and a `base_url`
//! holding `user:password@`. The key and the password must appear in no output file, no cache
//! row, no log line (at `-vv`), and not in `mtr config show`.

use std::path::Path;

use assert_cmd::Command;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KEY: &str = "sk-e2e-echoed-key-8f3a1c";
const PASSWORD: &str = "pw-e2e-in-url-51d0";

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

/// A minimal HTTP/1.1 server on loopback answering every request with a 401 whose body
/// echoes every request header (so both the Bearer key and the Basic form of the URL's
/// credentials come back). Returns its base URL with `user:PASSWORD@` in it.
async fn echo_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // headers, then as many body bytes as Content-Length says
                let head_end = loop {
                    let Ok(n) = sock.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break p;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap_or(0))
                    })
                    .unwrap_or(0);
                while buf.len() < head_end + 4 + len {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let headers: Vec<&str> = head.lines().skip(1).collect();
                let body = serde_json::json!({"error": {"message": format!("invalid credentials; you sent {}", headers.join("; ")), "type": "invalid_request_error"}}).to_string();
                let resp = format!(
                    "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    format!("http://mtr-user:{PASSWORD}@127.0.0.1:{port}/v1")
}

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn assert_clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for secret in [KEY, PASSWORD] {
        assert!(
            !text.contains(secret),
            "{what} holds the secret {secret}:\n{}",
            text.chars().take(3000).collect::<String>()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_key_and_url_password_reach_no_file_and_no_log() {
    let base_url = echo_server().await;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("mtr.toml");
    std::fs::write(
        &cfg,
        format!(
            "[llm]\ncache = \"{}\"\n[llm.retry]\nmax_attempts = 2\nbase_delay_ms = 1\nparse_retries = 0\n\
             [[llm.endpoints]]\nname = \"echo\"\nbase_url = \"{base_url}\"\nmodel = \"echo-model\"\napi_key_env = \"MTR_E2E_ECHO_KEY\"\nmax_concurrency = 4\ntimeout_s = 30\n\
             [llm.roles]\njudges = [\"echo\"]\n[audit]\nresamples = 50\n",
            tmp.path().join("cache.sqlite").display()
        ),
    )
    .unwrap();

    // config show: the URL's password is masked like a key
    let shown = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["config", "show"])
        .env("MTR_E2E_ECHO_KEY", KEY)
        .output()
        .unwrap();
    assert!(shown.status.success());
    assert_clean("config show", &shown.stdout);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("mtr-user:***@127.0.0.1"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );

    // an audit whose every call gets the echo back, logged at -vv
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/mtrag");
    let out = tmp.path().join("audit");
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["-vv", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out)
        .args(["--dimensions", "alignment", "--resamples", "50"])
        .env("MTR_E2E_ECHO_KEY", KEY)
        .env_remove("MTR_LOG")
        .output()
        .unwrap();
    let log = [o.stdout.as_slice(), o.stderr.as_slice()].concat();
    assert_clean("stdout/stderr at -vv", &log);
    let log_text = String::from_utf8_lossy(&log);
    assert!(
        log_text.contains("Bearer ***"),
        "the echo reached the log, masked: {}",
        log_text.chars().take(3000).collect::<String>()
    );
    let mut files = Vec::new();
    if out.is_dir() {
        files_under(&out, &mut files);
    }
    files_under(tmp.path(), &mut files);
    assert!(files.iter().any(|f| f.ends_with("cache.sqlite")));
    for f in files.iter().filter(|f| **f != cfg) {
        // (the configuration file holds the URL with its password: that is where it belongs)
        assert_clean(&f.display().to_string(), &std::fs::read(f).unwrap());
    }
}

/// A malformed response body that a retry recovers from is no error: nothing at ERROR, and
/// the raw body is not dumped into the log (async-openai logs it whole at ERROR).
#[test]
fn a_retried_malformed_body_is_not_logged_as_an_error() {
    use mtr_llm::fake::{FakeReply, FakeServer};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let body = format!(
        "{{\"id\": \"x\", \"choices\": [{{\"message\": {{\"content\": \"{}",
        "RAWBODYMARK ".repeat(50)
    );
    let fake = rt
        .block_on(
            FakeServer::builder()
                .script([FakeReply::RawBody(body)])
                .respond(|_| FakeReply::json(serde_json::json!({"grade": 1})))
                .start(),
        )
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("mtr.toml"),
        format!(
            "[llm]\ncache = \"{}\"\n[llm.retry]\nbase_delay_ms = 1\n[[llm.endpoints]]\nname = \"a\"\nbase_url = \"{}\"\nmodel = \"m\"\n[llm.roles]\njudges = [\"a\"]\ngenerator = [\"a\"]\n",
            tmp.path().join("cache.sqlite").display(),
            fake.base_url()
        ),
    )
    .unwrap();
    let o = mtr()
        .current_dir(tmp.path())
        .args(["local", "ask", "is this relevant?"])
        .env_remove("MTR_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(fake.chat_calls(), 2, "the malformed body was retried");
    assert!(!stderr.contains("ERROR"), "{stderr}");
    assert!(!stderr.contains("RAWBODYMARK"), "{stderr}");
}
