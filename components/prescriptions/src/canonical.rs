//! Canonical JSON: the one byte sequence a JSON value is signed as.
//!
//! Object keys are sorted (by their UTF-8 bytes, which is code-point order), there is no whitespace,
//! strings are escaped minimally (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control characters as
//! `\u00xx`; everything else is written as UTF-8) and integers are written in decimal. For documents
//! with ASCII keys and no fractional numbers this is exactly RFC 8785 (JCS), so the signature of a
//! stored document can be checked with any JCS implementation. It does not depend on how
//! `serde_json::Map` orders keys (the `preserve_order` feature changes that).

use serde_json::Value;

/// The canonical text of `value`.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(key, out);
                out.push(':');
                write(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_str(s, out),
        // Null, booleans and numbers: serde_json's text is already minimal.
        other => out.push_str(&other.to_string()),
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_at_every_level_without_whitespace() {
        let v = json!({"b": 1, "a": {"z": [3, {"y": true, "x": null}], "m": "n"}, "A": -2});
        assert_eq!(
            to_string(&v),
            r#"{"A":-2,"a":{"m":"n","z":[3,{"x":null,"y":true}]},"b":1}"#
        );
    }

    #[test]
    fn escapes_minimally_and_keeps_utf8() {
        let v = json!({"s": "Ñuñoa \"q\" \\ \n\t\u{01} 東京 😀 </script>"});
        assert_eq!(
            to_string(&v),
            "{\"s\":\"Ñuñoa \\\"q\\\" \\\\ \\n\\t\\u0001 東京 😀 </script>\"}"
        );
    }

    #[test]
    fn round_trips_and_is_independent_of_input_order() {
        let a: Value =
            serde_json::from_str(r#"{"x": 1, "y": [1, 2], "z": {"b": "", "a": 0}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"z": {"a": 0, "b": ""}, "y": [1, 2], "x": 1}"#).unwrap();
        assert_eq!(to_string(&a), to_string(&b));
        let parsed: Value = serde_json::from_str(&to_string(&a)).unwrap();
        assert_eq!(parsed, a);
    }

    #[test]
    fn array_order_is_kept() {
        assert_eq!(to_string(&json!([3, 1, 2])), "[3,1,2]");
        assert_eq!(to_string(&json!([])), "[]");
        assert_eq!(to_string(&json!({})), "{}");
    }
}
