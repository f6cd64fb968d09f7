//! Exports `fixture:echo/echo` (`wit/echo.wit`).

wit_bindgen::generate!({ world: "echo-dependency", path: "wit" });

use exports::fixture::echo::echo::{Guest, Note, Volume};

struct Echo;

impl Guest for Echo {
    fn shout(note: Note, volume: Volume) -> Result<Note, String> {
        if note.text.is_empty() {
            return Err("nothing to echo".into());
        }
        let text = match volume {
            Volume::Quiet => note.text,
            Volume::Loud => note.text.to_uppercase(),
        };
        Ok(Note {
            count: u32::try_from(text.len()).ok(),
            bytes: note.bytes.into_iter().rev().collect(),
            text,
        })
    }
}

export!(Echo);
