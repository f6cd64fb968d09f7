//! `GET /echo/<text>`: calls `fixture:echo/echo.shout` on the dependency and answers
//! `<text>|<bytes>|<count>` (200), or the dependency's error (400).

wit_bindgen::generate!({ world: "echo-front", path: "../echo/wit" });

use fixture::echo::echo::{Note, Volume, shout};
use spin_sdk::http::{Request, Response};

#[spin_sdk::http_component]
fn handle(req: Request) -> anyhow::Result<Response> {
    let text = req.path().trim_start_matches("/echo/").to_string();
    let note = Note {
        text,
        bytes: b"abc".to_vec(),
        count: None,
    };
    Ok(match shout(&note, Volume::Loud) {
        Ok(echoed) => {
            let bytes = String::from_utf8_lossy(&echoed.bytes).into_owned();
            let count = echoed.count.map_or("none".into(), |c| c.to_string());
            Response::new(200, format!("{}|{bytes}|{count}", echoed.text))
        }
        Err(message) => Response::new(400, message),
    })
}
