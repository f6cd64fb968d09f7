//! The virtual outbound HTTP of a test (`spin test`'s `http-handler`): the test says what a URL
//! answers; every request the component sends is recorded, answered or not. The component's
//! `allowed_outbound_hosts` still apply: a denied request never gets here.

use std::sync::{Arc, Mutex};

use receta_host::capability::outbound::{InterceptedResponse, Interceptor};

pub use receta_host::capability::outbound::InterceptedRequest as Sent;

#[derive(Default)]
struct Calls {
    answers: Vec<(String, InterceptedResponse)>,
    sent: Vec<Sent>,
}

/// A test's outbound HTTP.
#[derive(Clone, Default)]
pub struct Outbound(Arc<Mutex<Calls>>);

impl Outbound {
    /// Requests to exactly `url` get `status` and `body` (the last answer set for a URL wins).
    /// A request to a URL with no answer fails as `destination-not-found`.
    pub fn respond(&self, url: &str, status: u16, body: &str) {
        let answer = InterceptedResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        };
        self.lock().answers.push((url.to_string(), answer));
    }

    /// Every request sent so far, in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.lock().sent.clone()
    }

    /// The store's interceptor.
    pub fn interceptor(&self) -> Interceptor {
        let calls = self.0.clone();
        Arc::new(move |request: Sent| {
            let mut calls = calls.lock().unwrap_or_else(|e| e.into_inner());
            let answer = calls
                .answers
                .iter()
                .rev()
                .find(|(url, _)| *url == request.url)
                .map(|(_, answer)| answer.clone());
            calls.sent.push(request);
            answer
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
