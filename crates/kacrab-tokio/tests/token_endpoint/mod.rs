//! The HTTP/1.1 half of a token endpoint the OIDC tests serve on loopback: one request
//! read per connection, one answer written, the connection closed (the producer's HTTP
//! client opens a new one per fetch or reuses none that was closed).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One request as the endpoint read it.
pub struct HttpRequest {
    /// The request line and headers.
    pub head: String,
    /// The body (`Content-Length` bytes).
    pub body: String,
}

impl HttpRequest {
    /// The value of header `name` (case-insensitive), empty when absent.
    pub fn header(&self, name: &str) -> String {
        self.head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_owned())
            })
            .unwrap_or_default()
    }
}

/// Reads one request; `None` if the client closed before sending its head.
pub async fn read_request(stream: &mut TcpStream) -> Option<HttpRequest> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 1024];
        let n = stream.read(&mut chunk).await.unwrap();
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let mut request = HttpRequest {
        head,
        body: String::new(),
    };
    let length: usize = request.header("content-length").parse().unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 1024];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the body ended early");
        buf.extend_from_slice(&chunk[..n]);
    }
    request.body = String::from_utf8_lossy(&buf[head_end..head_end + length]).into_owned();
    Some(request)
}

/// Writes a JSON answer with `status` and closes the connection.
pub async fn respond(stream: &mut TcpStream, status: u16, json: &str) {
    let answer = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    );
    stream.write_all(answer.as_bytes()).await.unwrap();
    stream.shutdown().await.unwrap();
}
