//! `probe`: a tiny Spin HTTP component used only as a fixture by the host tests
//! (`host/tests/spin_semantics.rs`). Every route answers plain text so tests can
//! assert on the exact Spin host behaviour it observes:
//!
//! - `GET /hello`: `hello`
//! - `GET /sqlite?label=L[&q=SQL]`: opens database `L` (default `default`), then either runs `q`
//!   and prints the rows, or runs a CREATE/INSERT/SELECT round trip; errors print as
//!   `error: <variant>` (`access-denied`, `no-such-database`, `io: <message>`).
//! - `GET /var?name=N`: the Spin variable `N`, or `error: <variant>`.
//! - `GET /outbound?url=U`: an outbound GET; `status <code> <body>` or `error: <ErrorCode>`.
//! - `GET /loop`: never returns (tests the per-request time limit).
//! - `GET /alloc`: allocates until the memory limit is hit (tests the memory limit).
//! - `GET /tx`: BEGIN/INSERT/COMMIT and BEGIN/INSERT/ROLLBACK through `execute` on one connection.
//! - `GET /headers`: the `spin-*` headers the host passed in.
//!
//! It also exports `handle-cron-event` (Spin's cron trigger plugin): see `cron` below.
//!
//! Routes are matched on the `spin-path-info` header (the part after the trigger's route prefix).

use spin_sdk::http::{Request, Response};
use spin_sdk::http_component;
use spin_sdk::sqlite3::{Connection, Error as SqlError, QueryResult, Value};

#[http_component]
async fn handle(req: Request) -> anyhow::Result<Response> {
    let path = req
        .header("spin-path-info")
        .and_then(|v| v.as_str())
        .unwrap_or(req.path())
        .to_string();
    let query = req.query().to_string();
    let param = |name: &str| query_param(&query, name);
    let body = match path.as_str() {
        "/hello" => "hello".to_string(),
        "/sqlite" => sqlite(
            &param("label").unwrap_or_else(|| "default".into()),
            param("q"),
        ),
        "/var" => match spin_sdk::variables::get(&param("name").unwrap_or_default()) {
            Ok(value) => value,
            Err(e) => format!("error: {}", variable_error(&e)),
        },
        "/outbound" => outbound(&param("url").unwrap_or_default()).await,
        "/loop" => spin_forever(),
        "/alloc" => allocate_forever(),
        "/tx" => transaction(),
        "/headers" => req
            .headers()
            .filter(|(name, _)| name.starts_with("spin-"))
            .map(|(name, value)| format!("{name}: {}\n", value.as_str().unwrap_or("<bytes>")))
            .collect(),
        _ => return Ok(Response::new(404, format!("probe: no route {path}"))),
    };
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(body)
        .build())
}

fn sqlite(label: &str, statement: Option<String>) -> String {
    let conn = match Connection::open(label) {
        Ok(conn) => conn,
        Err(e) => return format!("error: {}", sql_error(&e)),
    };
    let run = |sql: &str, params: &[Value]| conn.execute(sql, params);
    if let Some(statement) = statement {
        return match run(&statement, &[]) {
            Ok(result) => render(&result),
            Err(e) => format!("error: {}", sql_error(&e)),
        };
    }
    let create =
        "CREATE TABLE IF NOT EXISTS probe_items (id INTEGER PRIMARY KEY, label TEXT NOT NULL)";
    if let Err(e) = run(create, &[]) {
        return format!("error: {}", sql_error(&e));
    }
    let insert = "INSERT INTO probe_items (label) VALUES (?)";
    if let Err(e) = run(insert, &[Value::Text(label.to_string())]) {
        return format!("error: {}", sql_error(&e));
    }
    let id = conn.last_insert_rowid();
    match run("SELECT count(*) FROM probe_items", &[]) {
        Ok(result) => format!(
            "ok rowid={id} changes={} count={}",
            conn.changes(),
            render(&result).trim()
        ),
        Err(e) => format!("error: {}", sql_error(&e)),
    }
}

fn transaction() -> String {
    let conn = match Connection::open("default") {
        Ok(conn) => conn,
        Err(e) => return format!("error: {}", sql_error(&e)),
    };
    let steps = [
        "CREATE TABLE IF NOT EXISTS probe_tx (id INTEGER PRIMARY KEY, note TEXT NOT NULL)",
        "BEGIN",
        "INSERT INTO probe_tx (note) VALUES ('committed')",
        "COMMIT",
        "BEGIN",
        "INSERT INTO probe_tx (note) VALUES ('rolled back')",
        "ROLLBACK",
    ];
    for sql in steps {
        if let Err(e) = conn.execute(sql, &[]) {
            return format!("error at {sql:?}: {}", sql_error(&e));
        }
    }
    match conn.execute("SELECT note FROM probe_tx ORDER BY id", &[]) {
        Ok(result) => format!("ok\n{}", render(&result)),
        Err(e) => format!("error: {}", sql_error(&e)),
    }
}

async fn outbound(url: &str) -> String {
    let request = spin_sdk::http::Request::get(url).build();
    match spin_sdk::http::send::<_, Response>(request).await {
        Ok(response) => format!(
            "status {} {}",
            response.status(),
            String::from_utf8_lossy(response.body())
        ),
        Err(e) => format!("error: {e:?}"),
    }
}

fn spin_forever() -> String {
    let mut counter = 0u64;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}

fn allocate_forever() -> String {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    loop {
        let chunk = vec![1u8; 8 << 20];
        chunks.push(std::hint::black_box(chunk));
    }
}

fn render(result: &QueryResult) -> String {
    let mut out = String::new();
    for row in &result.rows {
        let cells: Vec<String> = row
            .values
            .iter()
            .map(|value| match value {
                Value::Integer(i) => i.to_string(),
                Value::Real(r) => r.to_string(),
                Value::Text(t) => t.clone(),
                Value::Blob(b) => format!("<{} bytes>", b.len()),
                Value::Null => "NULL".to_string(),
            })
            .collect();
        out.push_str(&cells.join("|"));
        out.push('\n');
    }
    out
}

fn sql_error(e: &SqlError) -> String {
    match e {
        SqlError::NoSuchDatabase => "no-such-database".into(),
        SqlError::AccessDenied => "access-denied".into(),
        SqlError::InvalidConnection => "invalid-connection".into(),
        SqlError::DatabaseFull => "database-full".into(),
        SqlError::Io(message) => format!("io: {message}"),
    }
}

fn variable_error(e: &spin_sdk::variables::Error) -> String {
    use spin_sdk::variables::Error;
    match e {
        Error::InvalidName(m) => format!("invalid-name: {m}"),
        Error::Undefined(m) => format!("undefined: {m}"),
        Error::Provider(m) => format!("provider: {m}"),
        Error::Other(m) => format!("other: {m}"),
    }
}

/// The decoded value of `name` in an `a=1&b=2` query string.
fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| percent_decode(value))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push((hi * 16 + lo) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cron entry point (Spin's cron trigger plugin, `fermyon:spin-cron@2.0.0`): each firing
/// records its timestamp in `probe_cron` on the `default` database.
mod cron {
    use spin_sdk::sqlite3::{Connection, Value};

    spin_sdk::wit_bindgen::generate!({
        inline: "
            package fermyon:spin-cron@2.0.0;

            interface cron-types {
                record metadata { timestamp: u64 }
                variant error { other(string) }
            }

            world spin-cron {
                use cron-types.{metadata, error};
                export handle-cron-event: func(metadata: metadata) -> result<_, error>;
            }
        ",
        world: "spin-cron",
        runtime_path: "spin_sdk::wit_bindgen::rt",
    });

    struct Cron;

    impl Guest for Cron {
        fn handle_cron_event(metadata: Metadata) -> Result<(), Error> {
            let fail = |e: spin_sdk::sqlite3::Error| Error::Other(format!("{e:?}"));
            let conn = Connection::open("default").map_err(fail)?;
            conn.execute(
                "CREATE TABLE IF NOT EXISTS probe_cron (id INTEGER PRIMARY KEY, fired_at INTEGER NOT NULL)",
                &[],
            )
            .map_err(fail)?;
            let timestamp =
                i64::try_from(metadata.timestamp).map_err(|e| Error::Other(e.to_string()))?;
            conn.execute(
                "INSERT INTO probe_cron (fired_at) VALUES (?)",
                &[Value::Integer(timestamp)],
            )
            .map_err(fail)?;
            Ok(())
        }
    }

    export!(Cron);
}
