//! One email over SMTP (RFC 5321): to the server's port, TLS from the start on port 465,
//! otherwise plaintext upgraded with STARTTLS whenever the server offers it (the certificate
//! verified against the system's roots); `AUTH PLAIN` when a user name is configured, never
//! over an unencrypted connection to another host than loopback. The message is UTF-8 text (or
//! HTML), its subject encoded per RFC 2047 when it is not ASCII. Bounded by [`SMTP_TIMEOUT`].

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::controller::http_clients::plugin_tls::PluginTls;
use flotilla_core::notify::argo::payload::Email;

/// How long one email may take, from the connection to the server's acceptance.
pub const SMTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an email was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum SmtpError {
    #[error("{host}:{port}: {message}")]
    Failed {
        host: String,
        port: u16,
        message: String,
    },
}

trait Connection: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Connection for T {}

type Stream = BufReader<Box<dyn Connection>>;

/// Sends `email`.
///
/// # Errors
/// No connection, a TLS failure, a refused authentication or recipient, or an answer other
/// than the protocol's, with the server's words; no acceptance within [`SMTP_TIMEOUT`].
pub async fn send_email(email: &Email) -> Result<(), SmtpError> {
    let failed = |message: String| SmtpError::Failed {
        host: email.host.clone(),
        port: email.port,
        message,
    };
    match tokio::time::timeout(SMTP_TIMEOUT, exchange(email)).await {
        Ok(result) => result.map_err(failed),
        Err(_) => Err(failed(format!(
            "no answer within {}s",
            SMTP_TIMEOUT.as_secs()
        ))),
    }
}

async fn tls(stream: Box<dyn Connection>, host: &str) -> Result<Box<dyn Connection>, String> {
    let name =
        ServerName::try_from(host.to_owned()).map_err(|e| format!("host name for TLS: {e}"))?;
    let tls = PluginTls::system()?;
    let stream = tls
        .connector()
        .connect(name, stream)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    Ok(Box::new(stream))
}

/// Reads one reply: its code and lines.
async fn reply(stream: &mut Stream) -> Result<(u16, Vec<String>), String> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if stream
            .read_line(&mut line)
            .await
            .map_err(|e| e.to_string())?
            == 0
        {
            return Err("the server closed the connection".to_owned());
        }
        let line = line.trim_end().to_owned();
        let code = line
            .get(..3)
            .and_then(|c| c.parse::<u16>().ok())
            .ok_or_else(|| format!("not an SMTP reply: {line:?}"))?;
        let last = line.as_bytes().get(3) != Some(&b'-');
        lines.push(line.get(4..).unwrap_or_default().to_owned());
        if last {
            return Ok((code, lines));
        }
    }
}

/// Sends `command` (shown as `shown`) and expects a reply of class `class` (2 or 3).
async fn command(
    stream: &mut Stream,
    command: &str,
    shown: &str,
    class: u16,
) -> Result<Vec<String>, String> {
    stream
        .get_mut()
        .write_all(format!("{command}\r\n").as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let (code, lines) = reply(stream).await?;
    if code / 100 == class {
        Ok(lines)
    } else {
        Err(format!(
            "{shown}: the server answered {code} {}",
            lines.join(" ")
        ))
    }
}

async fn exchange(email: &Email) -> Result<(), String> {
    let tcp = TcpStream::connect((email.host.as_str(), email.port))
        .await
        .map_err(|e| format!("no connection: {e}"))?;
    let implicit = email.port == 465;
    let mut connection: Box<dyn Connection> = Box::new(tcp);
    if implicit {
        connection = tls(connection, &email.host).await?;
    }
    let mut stream = BufReader::new(connection);
    let (code, lines) = reply(&mut stream).await?;
    if code != 220 {
        return Err(format!("greeted with {code} {}", lines.join(" ")));
    }
    let mut extensions = command(&mut stream, "EHLO flotilla", "EHLO", 2).await?;
    let mut encrypted = implicit;
    if !encrypted
        && extensions
            .iter()
            .any(|e| e.eq_ignore_ascii_case("STARTTLS"))
    {
        command(&mut stream, "STARTTLS", "STARTTLS", 2).await?;
        stream = BufReader::new(tls(stream.into_inner(), &email.host).await?);
        extensions = command(&mut stream, "EHLO flotilla", "EHLO", 2).await?;
        encrypted = true;
    }
    if let Some(username) = &email.username {
        let loopback = matches!(email.host.as_str(), "localhost" | "127.0.0.1" | "::1");
        if !encrypted && !loopback {
            return Err(
                "the server offers no STARTTLS: the password is not sent unencrypted".to_owned(),
            );
        }
        if !extensions
            .iter()
            .any(|e| e.to_ascii_uppercase().starts_with("AUTH"))
        {
            return Err("a user name is configured but the server offers no AUTH".to_owned());
        }
        let password = email.password.clone().unwrap_or_default();
        let token = STANDARD.encode(format!("\0{username}\0{password}"));
        command(&mut stream, &format!("AUTH PLAIN {token}"), "AUTH PLAIN", 2).await?;
    }
    command(
        &mut stream,
        &format!("MAIL FROM:<{}>", email.from),
        "MAIL FROM",
        2,
    )
    .await?;
    command(
        &mut stream,
        &format!("RCPT TO:<{}>", email.to),
        "RCPT TO",
        2,
    )
    .await?;
    command(&mut stream, "DATA", "DATA", 3).await?;
    command(&mut stream, &message(email), "the message", 2).await?;
    // The message is accepted; a failed QUIT changes nothing.
    let _ = command(&mut stream, "QUIT", "QUIT", 2).await;
    Ok(())
}

/// The message's text, dot-stuffed and ending with the lone dot (without its last CRLF).
fn message(email: &Email) -> String {
    // A header is one line: a rendered subject's line breaks become spaces.
    let subject = email.subject.replace(['\r', '\n'], " ").trim().to_owned();
    let subject = if subject.is_ascii() {
        subject
    } else {
        format!("=?UTF-8?B?{}?=", STANDARD.encode(&subject))
    };
    let kind = if email.html { "html" } else { "plain" };
    let date = jiff::fmt::rfc2822::to_string(&jiff::Zoned::now()).unwrap_or_default();
    let mut text = format!(
        "From: {}\r\nTo: {}\r\nSubject: {subject}\r\nDate: {date}\r\nMIME-Version: 1.0\r\nContent-Type: text/{kind}; charset=UTF-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n",
        email.from, email.to
    );
    for line in email.body.lines() {
        if line.starts_with('.') {
            text.push('.');
        }
        text.push_str(line);
        text.push_str("\r\n");
    }
    text.push('.');
    text
}
