//! The gateway in-process: composed with its dependencies as `receta up` and Spin compose a WASIp3
//! handler, driven through `wasi:http/handler@0.3.0-rc-2026-03-15`, no socket. Like a host that
//! reuses instances, one instance serves every request of a `Gateway`, so a test also sees what
//! an instance keeps between requests.

use std::cell::RefCell;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use wasmtime::Store;
use wasmtime_wasi_http::p3::bindings::{Service, ServicePre, http::types::ErrorCode};
use wasmtime_wasi_http::p3::{Request as WasiRequest, WasiHttpView};

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
    pre: ServicePre<HostState>,
    base: Base,
    /// The instance every request runs on, made at the first request.
    instance: RefCell<Option<(Store<HostState>, Service)>>,
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
            let pre = linking::prepare(&s.engine, &s.linker, s.gateway()?, Composition::Static)?;
            ServicePre::new(pre).anyhow()
        })?;
        Ok(Self {
            pre,
            base: Base::new(variables)?,
            instance: RefCell::new(None),
        })
    }

    /// Sends `method path` with `headers` and `body`; returns the response once its body is read.
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
        let (request, request_io) = WasiRequest::from_http(request);
        self.on_instance(async move |store, guest| {
            store
                .run_concurrent(async move |accessor| -> wasmtime::Result<Response> {
                    let request = accessor
                        .with(|mut s| WasiHttpView::http(s.data_mut()).table.push(request))?;
                    let response = guest
                        .wasi_http_handler()
                        .call_handle(accessor, request)
                        .await?
                        .map_err(|code| {
                            wasmtime::format_err!("the guest answered with error {code:?}")
                        })?;
                    let response = accessor.with(|mut s| -> wasmtime::Result<_> {
                        let response = WasiHttpView::http(s.data_mut()).table.delete(response)?;
                        response.into_http(&mut s, request_io)
                    })?;
                    // The body streams from the guest while this loop runs: read it here.
                    let (parts, body) = response.into_parts();
                    let body = body
                        .collect()
                        .await
                        .map_err(|code| wasmtime::format_err!("response body: {code:?}"))?
                        .to_bytes()
                        .to_vec();
                    let headers = parts
                        .headers
                        .iter()
                        .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                        .collect();
                    Ok(Response {
                        status: parts.status.as_u16(),
                        headers,
                        body,
                    })
                })
                .await?
        })
    }

    /// Runs `f` on this gateway's instance (made on first use).
    fn on_instance<R>(
        &self,
        f: impl AsyncFnOnce(&mut Store<HostState>, &Service) -> wasmtime::Result<R>,
    ) -> Result<R> {
        let mut slot = self.instance.borrow_mut();
        if slot.is_none() {
            let pre = self.pre.clone();
            *slot = Some(self.base.reused(async move |store| {
                let guest = pre.instantiate_async(&mut *store).await?;
                Ok(guest)
            })?);
        }
        let (store, guest) = slot.as_mut().expect("made above");
        self.base
            .run_on(store, async move |store| f(store, guest).await)
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
