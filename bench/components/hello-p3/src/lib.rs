//! `hello-p3`: the trivial HTTP component of `cargo xtask bench` as a WASIp3 handler, the
//! generation of the app's gateway. Every request is answered `200 hello` (text/plain). Beside the
//! WASIp2 `hello`, its row shows what instance reuse saves a request that does nothing.

use wasip3::http::types::{ErrorCode, Fields, Request, Response};
use wasip3::{wit_future, wit_stream};

struct Hello;

wasip3::http::service::export!(Hello);

impl wasip3::exports::http::handler::Guest for Hello {
    async fn handle(_request: Request) -> Result<Response, ErrorCode> {
        let headers = Fields::from_list(&[
            ("content-type".to_string(), b"text/plain".to_vec()),
            ("content-length".to_string(), b"5".to_vec()),
        ])
        .map_err(|e| ErrorCode::InternalError(Some(format!("{e:?}"))))?;
        let (mut body_tx, body_rx) = wit_stream::new();
        let (trailers_tx, trailers_rx) = wit_future::new(|| Ok(None));
        let (response, _sent) = Response::new(headers, Some(body_rx), trailers_rx);
        wasip3::spawn(async move {
            body_tx.write_all(b"hello".to_vec()).await;
            drop(trailers_tx);
        });
        Ok(response)
    }
}
