-- Schema version 3: one order over every session's events, so that a client following the
-- whole store (the app, an SSE stream) can reconnect and ask for what it missed.

ALTER TABLE events ADD COLUMN global_seq INTEGER;

-- Events written before this version: numbered by time, then session, then seq.
UPDATE events SET global_seq = ordered.n
FROM (
    SELECT session_id, seq, ROW_NUMBER() OVER (ORDER BY time_ms, session_id, seq) AS n FROM events
) AS ordered
WHERE ordered.session_id = events.session_id AND ordered.seq = events.seq;

CREATE UNIQUE INDEX events_in_global_order ON events (global_seq);
