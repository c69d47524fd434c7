-- Schema version 7: the antikythera servers the user works with (publish, remote runs), by the
-- name the user gave them. The token, when the server wants one, is kept as given.
CREATE TABLE servers (
    name       TEXT PRIMARY KEY,
    url        TEXT NOT NULL,
    token      TEXT,
    updated_ms INTEGER NOT NULL
) WITHOUT ROWID;
