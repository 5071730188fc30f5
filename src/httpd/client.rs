//! The client side: one HTTP/1.1 request (hyper) over a connection the caller opened, plain or
//! TLS, and its whole answer — what generator plugins, notification services and SCM providers'
//! APIs are asked with.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::rt::{Read, Write};
use hyper::{Request, Response};

/// Sends `request` over `io` and reads the whole answer: its status, headers and body.
///
/// # Errors
/// The handshake, the request or reading the answer failed.
pub async fn exchange<IO>(
    io: IO,
    request: Request<Full<Bytes>>,
) -> Result<Response<Bytes>, hyper::Error>
where
    IO: Read + Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    let driver = tokio::spawn(connection);
    let answered = async {
        let (head, body) = sender.send_request(request).await?.into_parts();
        let bytes = body.collect().await?.to_bytes();
        Ok(Response::from_parts(head, bytes))
    }
    .await;
    driver.abort();
    answered
}
