//! Keeps secrets out of every string mtr stores or logs. A provider may echo the request's
//! `Authorization` header in its error body, a URL may carry `user:password@`, and both would
//! otherwise reach `items.jsonl`, the cache and `-vv` logs verbatim. This module is the one
//! place that knows the secrets: [`register_secret`] (called by [`crate::Llm::new`] for every
//! configured key and every password in a `base_url`) and [`redact`], applied where provider
//! text enters mtr (error bodies, answers) and by [`RedactingWriter`] on every log line.

use std::borrow::Cow;
use std::io::Write;
use std::sync::RwLock;

/// What a secret is replaced with.
pub(crate) const MASK: &str = "***";

/// Secrets shorter than this are not registered (they would mask ordinary words).
const MIN_SECRET_LEN: usize = 4;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Adds a secret to mask from now on in this process (keys, passwords). Idempotent; secrets
/// shorter than 4 characters are ignored.
pub(crate) fn register_secret(secret: &str) {
    let s = secret.trim();
    if s.chars().count() < MIN_SECRET_LEN {
        return;
    }
    if let Ok(mut all) = SECRETS.write()
        && !all.iter().any(|x| x == s)
    {
        all.push(s.to_string());
        // longest first, so a secret containing another is masked whole
        all.sort_by_key(|x| std::cmp::Reverse(x.len()));
    }
}

/// Registers the credentials of a URL's `user:password@` part: the password, the raw
/// `user:password` and its base64 form (what a server echoing a Basic `Authorization` shows).
pub(crate) fn register_url_credentials(url: &str) {
    if let Some((user, password)) = url_userinfo(url) {
        register_secret(password);
        let pair = format!("{user}:{password}");
        register_secret(&base64(pair.as_bytes()));
        register_secret(&pair);
    }
}

/// `text` with every registered secret and every URL's `user:password@` masked.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Ok(all) = SECRETS.read() {
        for s in all.iter() {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), MASK));
            }
        }
    }
    match mask_url_credentials(&out) {
        Cow::Borrowed(_) => out,
        Cow::Owned(o) => Cow::Owned(o),
    }
}

/// [`redact`] into an owned string.
pub(crate) fn redact_owned(text: String) -> String {
    match redact(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(o) => o,
    }
}

/// Every `scheme://user:password@host` in `text` written `scheme://user:***@host` (a URL
/// with only a user name, `scheme://token@host`, gets `scheme://***@host`: the name may be the
/// token).
pub fn mask_url_credentials(text: &str) -> Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '`') || c.is_whitespace()
            })
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match authority.rfind('@') {
            Some(a) => {
                let userinfo = &authority[..a];
                match userinfo.split_once(':') {
                    Some((user, _)) => {
                        out.push_str(user);
                        out.push(':');
                        out.push_str(MASK);
                    }
                    None => out.push_str(MASK),
                }
                out.push_str(&authority[a..]);
                changed = true;
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// The `(user, password)` of `scheme://user:password@host...`, if any.
fn url_userinfo(url: &str) -> Option<(&str, &str)> {
    let (_, tail) = url.split_once("://")?;
    let end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    let authority = &tail[..end];
    let (userinfo, _) = authority.rsplit_once('@')?;
    Some(userinfo.split_once(':').unwrap_or(("", userinfo)))
}

/// Standard base64 with padding (only for registering Basic-auth forms).
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(T[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A log writer that masks secrets in everything written through it (install it with
/// `tracing_subscriber::fmt().with_writer(|| RedactingWriter(std::io::stderr()))`). The fmt
/// layer writes each event in one call, so a secret is never split across writes.
pub struct RedactingWriter<W: Write>(pub W);

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(s) => {
                let r = redact(s);
                self.0.write_all(r.as_bytes())?;
            }
            Err(_) => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_registered_secrets_and_url_credentials() {
        register_secret("sk-test-redact-0123456789");
        let s = "HTTP 401: bad key Bearer sk-test-redact-0123456789 for http://bob:hunter2pass@10.0.0.1:8000/v1/chat";
        let r = redact(s);
        assert!(!r.contains("sk-test-redact-0123456789"), "{r}");
        assert!(!r.contains("hunter2pass"), "{r}");
        assert!(r.contains("Bearer ***"), "{r}");
        assert!(r.contains("http://bob:***@10.0.0.1:8000/v1/chat"), "{r}");
        assert_eq!(redact("nothing here"), "nothing here");
        assert_eq!(
            mask_url_credentials("see https://tok123@h/x and http://h2/y"),
            "see https://***@h/x and http://h2/y"
        );
        // an `@` after the authority is not a credential
        assert_eq!(
            mask_url_credentials("http://h/v1?mail=a@b"),
            "http://h/v1?mail=a@b"
        );
    }

    #[test]
    fn url_passwords_and_their_basic_auth_form_are_registered() {
        register_url_credentials("http://alice:s3cr3t-url-pass@127.0.0.1:9/v1");
        assert_eq!(
            base64(b"alice:s3cr3t-url-pass"),
            "YWxpY2U6czNjcjN0LXVybC1wYXNz"
        );
        let r = redact("Authorization: Basic YWxpY2U6czNjcjN0LXVybC1wYXNz; pw s3cr3t-url-pass");
        assert!(!r.contains("s3cr3t") && !r.contains("YWxpY2U6"), "{r}");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"a"), "YQ==");
    }

    #[test]
    fn short_strings_are_not_secrets() {
        register_secret("ab");
        assert_eq!(redact("ab cd"), "ab cd");
    }

    #[test]
    fn the_log_writer_masks() {
        register_secret("sk-writer-secret-42");
        let mut w = RedactingWriter(Vec::new());
        w.write_all(b"debug: key=sk-writer-secret-42\n").unwrap();
        assert_eq!(String::from_utf8(w.0).unwrap(), "debug: key=***\n");
    }
}
