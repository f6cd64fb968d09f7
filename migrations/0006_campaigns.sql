-- 0006: pharmacy campaigns, shown to patients on the prescription landing (openapi/receta.json, decisions
-- "Campaigns"), managed by the API admin through /api/v2/campaigns/.
--
-- Safe to run more than once (`IF NOT EXISTS`): real Spin runs every `--sqlite @file` on each start.

-- A pharmacy partner's campaign. `callback_redirect` and `main_site_redirect` hold an absolute
-- http(s) URL or the literal `landing_view`; `cta_link` an absolute http(s) URL or ''. The gateway
-- checks their shape; the CHECKs below only keep the table from holding anything else.
CREATE TABLE IF NOT EXISTS campaigns (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at         TEXT    NOT NULL,                 -- ISO 8601 UTC
    short_name         TEXT    NOT NULL COLLATE NOCASE UNIQUE,
    callback_redirect  TEXT    NOT NULL DEFAULT 'landing_view'
        CHECK (callback_redirect = 'landing_view' OR callback_redirect LIKE 'http://%' OR callback_redirect LIKE 'https://%'),
    main_site_redirect TEXT    NOT NULL DEFAULT 'landing_view'
        CHECK (main_site_redirect = 'landing_view' OR main_site_redirect LIKE 'http://%' OR main_site_redirect LIKE 'https://%'),
    display_name       TEXT    NOT NULL,
    display_phone      TEXT    NOT NULL DEFAULT '',
    display_contact    TEXT    NOT NULL DEFAULT '',
    cta_link           TEXT    NOT NULL DEFAULT ''
        CHECK (cta_link = '' OR cta_link LIKE 'http://%' OR cta_link LIKE 'https://%'),
    is_default         INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
    is_active          INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1))
);
-- At most one default campaign: a second row with is_default = 1 violates this index. Making a new
-- default clears the old one first, in the same transaction.
CREATE UNIQUE INDEX IF NOT EXISTS campaigns_one_default ON campaigns (is_default) WHERE is_default = 1;

-- The branches of a campaign, in the order they were sent (`position` from 0). A campaign's branches
-- are replaced as a whole, and deleted with it (by the catalog, in one transaction).
CREATE TABLE IF NOT EXISTS campaign_branches (
    campaign_id  INTEGER NOT NULL REFERENCES campaigns (id),
    position     INTEGER NOT NULL,
    determinante INTEGER NOT NULL,                       -- the pharmacy's store number
    name         TEXT    NOT NULL,
    formato      TEXT    NOT NULL DEFAULT '',
    estado       TEXT    NOT NULL DEFAULT '',
    address      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (campaign_id, position)
);
