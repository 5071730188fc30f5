//! The client side: one HTTP/1.1 request (hyper) over a connection the caller opened, plain or
//! TLS, and its whole answer — what generator plugins and notification services are asked with.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::rt::{Read, Write};
use hyper::{Request, StatusCode};

/// Sends `request` over `io` and reads the whole answer: its status and body.
///
/// # Errors
/// The handshake, the request or reading the answer failed.
pub async fn exchange<IO>(
    io: IO,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, Bytes), hyper::Error>
where
    IO: Read + Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    let driver = tokio::spawn(connection);
    let answered = async {
        let response = sender.send_request(request).await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        Ok((status, bytes))
    }
    .await;
    driver.abort();
    answered
}
