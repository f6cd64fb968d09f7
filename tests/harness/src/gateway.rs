//! The gateway in-process: composed with its dependencies as `receta up` composes it (linked
//! lazily), each request a fresh store driven through `wasi:http/incoming-handler`, no socket.

use anyhow::{Context, Result, anyhow};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::sync::oneshot;
use wasmtime_wasi_http::p2::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};

use receta_host::runtime::engine::WasmtimeResultExt;
use receta_host::runtime::linking::{self, Composition};
use receta_host::runtime::store::HostState;

use crate::base::Base;
use crate::outbound::Outbound;
use crate::shared::{GATEWAY, shared};

/// The host name requests are sent to.
const HOST: &str = "receta.test";

/// The gateway under test.
pub struct Gateway {
    pre: ProxyPre<HostState>,
    base: Base,
}

/// A response, read whole.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers (names lowercase).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Gateway {
    /// The gateway with spin.toml's variable defaults.
    pub fn new() -> Result<Self> {
        Self::with_variables(&[])
    }

    /// The gateway with these application variables (name, value) over spin.toml's defaults.
    pub fn with_variables(variables: &[(&str, &str)]) -> Result<Self> {
        let pre = shared()?.pre(GATEWAY, |s| {
            let pre = linking::prepare(&s.engine, &s.linker, s.gateway()?, Composition::Lazy)?;
            ProxyPre::new(pre).anyhow()
        })?;
        Ok(Self {
            pre,
            base: Base::new(variables)?,
        })
    }

    /// Sends `method path` with `headers` and `body`; returns once the guest is done, including
    /// its work after the response (a new prescription's email and webhooks).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Response> {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("http://{HOST}{path}"))
            .header("host", HOST)
            .header("spin-full-url", format!("http://{HOST}{path}"))
            .header("spin-client-addr", "127.0.0.1:40000");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(
                Full::new(Bytes::copy_from_slice(body))
                    .map_err(|never| -> ErrorCode { match never {} }),
            )
            .context("not a valid request")?;
        let pre = self.pre.clone();
        self.base.run(async move |store| {
            let (sender, receiver) = oneshot::channel();
            let request = store
                .data_mut()
                .http()
                .new_incoming_request(Scheme::Http, request)?;
            let out = store.data_mut().http().new_response_outparam(sender)?;
            let guest = async {
                let proxy = pre.instantiate_async(&mut *store).await?;
                proxy
                    .wasi_http_incoming_handler()
                    .call_handle(&mut *store, request, out)
                    .await
            };
            // The body streams while the guest runs: read it alongside.
            let read = async {
                let response = receiver
                    .await
                    .map_err(|_| anyhow!("the guest set no response"))?
                    .map_err(|code| anyhow!("the guest answered with error {code:?}"))?;
                let (parts, body) = response.into_parts();
                let body = body.collect().await?.to_bytes().to_vec();
                let headers = parts
                    .headers
                    .iter()
                    .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                    .collect();
                anyhow::Ok(Response {
                    status: parts.status.as_u16(),
                    headers,
                    body,
                })
            };
            let (ran, read) = tokio::join!(guest, read);
            ran?;
            read.map_err(wasmtime::Error::from_anyhow)
        })
    }

    /// `GET path`, with `token` as `Authorization: Token …` when given.
    pub fn get(&self, path: &str, token: Option<&str>) -> Result<Response> {
        let authorization = token.map(|t| format!("Token {t}"));
        let headers: Vec<(&str, &str)> = authorization
            .iter()
            .map(|a| ("authorization", a.as_str()))
            .collect();
        self.request("GET", path, &headers, b"")
    }

    /// `method path` with a JSON `body`, and `token` as `Authorization: Token …` when given.
    pub fn json(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &str,
    ) -> Result<Response> {
        let authorization = token.map(|t| format!("Token {t}"));
        let mut headers = vec![("content-type", "application/json")];
        if let Some(authorization) = &authorization {
            headers.push(("authorization", authorization.as_str()));
        }
        self.request(method, path, &headers, body.as_bytes())
    }

    /// A connection to the app's database.
    pub fn db(&self) -> Result<rusqlite::Connection> {
        self.base.db()
    }

    /// The app's outbound HTTP.
    pub fn outbound(&self) -> &Outbound {
        &self.base.outbound
    }
}
