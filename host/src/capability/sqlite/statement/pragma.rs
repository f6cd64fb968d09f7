//! A `PRAGMA` as this host reads it: whether it sets `busy_timeout`, and whether a libSQL server
//! runs it at all.

/// What the host asks of a `PRAGMA`.
pub(super) struct Pragma {
    /// It sets `busy_timeout` (`= n` or `(n)`).
    pub busy_timeout: bool,
    /// A libSQL server runs it ([`libsql_runs_pragma`]).
    pub libsql: bool,
}

/// A `PRAGMA`, read as its name (without `main.`) and whether it has a value (`= v` or `(v)`).
pub(super) fn read(text: &str) -> Pragma {
    let rest = text.trim().trim_end_matches(';');
    let rest = rest.get(6..).unwrap_or_default().trim_start();
    let rest = match rest.get(..5) {
        Some(schema) if schema.eq_ignore_ascii_case("main.") => &rest[5..],
        _ => rest,
    };
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let name = rest[..end].to_ascii_lowercase();
    let has_value = rest[end..].trim_start().starts_with(['=', '(']);
    Pragma {
        busy_timeout: name == "busy_timeout" && has_value,
        libsql: libsql_runs_pragma(&name, has_value),
    }
}

/// Whether a libSQL server (`sqld`, Turso) runs a `PRAGMA` over its remote protocol: it refuses
/// ("SQL string could not be parsed: unsupported statement") every pragma that would change its
/// shared connection's settings. Its rule (`libsql-server`'s query analysis, `pragma_kind`):
/// read-only and schema pragmas run with or without a value, settings run only when read (no
/// value), anything else never. Spin's libSQL backend sends statements as they are, so a guest
/// meant for both gets these refusals from this host too (`remote::Connection::execute`).
fn libsql_runs_pragma(name: &str, has_value: bool) -> bool {
    const ANY: [&str; 25] = [
        "table_list",
        "index_list",
        "table_info",
        "table_xinfo",
        "index_info",
        "index_xinfo",
        "pragma_list",
        "compile_options",
        "database_list",
        "function_list",
        "module_list",
        "encoding",
        "defer_foreign_keys",
        "foreign_keys",
        "foreign_key_list",
        "foreign_key_check",
        "collation_list",
        "data_version",
        "freelist_count",
        "integrity_check",
        "legacy_file_format",
        "page_count",
        "quick_check",
        "stats",
        "user_version",
    ];
    const READ_ONLY: [&str; 29] = [
        "schema_version",
        "analysis_limit",
        "application_id",
        "auto_vacuum",
        "automatic_index",
        "busy_timeout",
        "cache_size",
        "cache_spill",
        "cell_size_check",
        "checkpoint_fullfsync",
        "fullfsync",
        "hard_heap_limit",
        "journal_mode",
        "journal_size_limit",
        "legacy_alter_table",
        "locking_mode",
        "max_page_count",
        "mmap_size",
        "page_size",
        "query_only",
        "read_uncommitted",
        "recursive_triggers",
        "reverse_unordered_selects",
        "secure_delete",
        "soft_heap_limit",
        "synchronous",
        "temp_store",
        "threads",
        "trusted_schema",
    ];
    ANY.contains(&name)
        || (!has_value && (READ_ONLY.contains(&name) || name == "wal_autocheckpoint"))
}
