-- 0001: the catalog: hospitals (with their uploaded images), medics, and the memberships linking them.
--
-- Every migration is safe to run more than once (`IF NOT EXISTS`), because real Spin's
-- `spin up --sqlite @migrations/<file>.sql` runs it on every start; the project's host applies each
-- file once and records it in `_receta_migrations`.

-- A hospital, office or clinic whose data heads and foots the prescription PDF.
CREATE TABLE IF NOT EXISTS hospitals (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at      TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    patron          TEXT    NOT NULL,
    location        TEXT    NOT NULL,
    contact         TEXT    NOT NULL,
    headline        TEXT    NOT NULL DEFAULT '',
    page_size       INTEGER NOT NULL DEFAULT 0 CHECK (page_size IN (0, 1)), -- 0 Letter, 1 Half Letter
    page_template   TEXT    NOT NULL DEFAULT 'classic',
    is_active       INTEGER NOT NULL DEFAULT 1,
    info            INTEGER NOT NULL DEFAULT 0,
    send_emails     INTEGER NOT NULL DEFAULT 1,
    zip_code        TEXT    NOT NULL DEFAULT '',
    location_lat    TEXT    NOT NULL DEFAULT '',
    location_lon    TEXT    NOT NULL DEFAULT '',
    google_place_id TEXT    NOT NULL DEFAULT ''
);

-- The JPEGs uploaded with a hospital, served under /media/ and embedded in the PDF. `sha256` (hex) of
-- the bytes versions the media URL (`?v=`), so a replaced image is never served stale from a cache.
CREATE TABLE IF NOT EXISTS hospital_images (
    hospital_id INTEGER NOT NULL REFERENCES hospitals (id),
    kind        TEXT    NOT NULL CHECK (kind IN ('picture', 'university_logo')),
    filename    TEXT    NOT NULL,
    bytes       BLOB    NOT NULL,
    sha256      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (hospital_id, kind)
);

-- A medic. `token_hash` is SHA-256 of the API token (the token itself is never stored);
-- `password_hash` is Argon2id in PHC format.
CREATE TABLE IF NOT EXISTS medics (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at         TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    email              TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    password_hash      TEXT    NOT NULL,
    token_hash         TEXT    NOT NULL UNIQUE,
    date_of_birth      TEXT    NOT NULL,
    cedula_prof        TEXT    NOT NULL DEFAULT '',
    specialty_no       TEXT    NOT NULL DEFAULT '',
    specialty          TEXT    NOT NULL DEFAULT '',
    alma_mater         TEXT    NOT NULL DEFAULT '',
    female             INTEGER NOT NULL DEFAULT 0,
    specialty_verified INTEGER NOT NULL DEFAULT 0,
    is_active          INTEGER NOT NULL DEFAULT 1
);

-- A medic's right to prescribe from (MEMBER) or manage (ADMIN) a hospital. Deleting is soft
-- (`is_deleted`); exactly one live membership per medic is `is_active` (the active hospital).
CREATE TABLE IF NOT EXISTS memberships (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    medic_id        INTEGER NOT NULL REFERENCES medics (id),
    hospital_id     INTEGER NOT NULL REFERENCES hospitals (id),
    type_membership TEXT    NOT NULL CHECK (type_membership IN ('ADMIN', 'MEMBER')),
    is_active       INTEGER NOT NULL DEFAULT 0,
    is_deleted      INTEGER NOT NULL DEFAULT 0,
    date_joined     TEXT    NOT NULL,
    UNIQUE (medic_id, hospital_id)
);
CREATE INDEX IF NOT EXISTS memberships_by_hospital ON memberships (hospital_id);
