-- The readings store (hub/store/pg-readings.ts): the table `readings` of migration 1 becomes the raw readings of
-- the ReadingStore too, next to per-minute and per-hour rollups and each member's latest reading. Every write of
-- readings, the hub's MQTT ingest (hub/ingest/chain-writer.ts) and the store's own (readings posted to the hub's
-- API), goes through one function, hr_store_readings, so that rollups, latest records and notifications follow
-- every reading stored, whichever hub instance stores it.

-- A member's readings are unique per millisecond, whichever box forwarded them: of readings held twice, the one
-- of the first box (in box_id order) is kept.
DELETE FROM readings r USING readings o
 WHERE o.profile_id = r.profile_id AND o.measured_at = r.measured_at AND o.box_id < r.box_id;
ALTER TABLE readings DROP CONSTRAINT readings_pkey;
ALTER TABLE readings ADD PRIMARY KEY (profile_id, measured_at);
-- box_id: the box that forwarded the reading over MQTT; NULL for a reading posted to the hub itself.
ALTER TABLE readings ALTER COLUMN box_id DROP NOT NULL;
-- The rest of a stored reading (RawValue in api/pipeline/codec.ts), NULL when the reading did not carry it.
-- An empty list of RR intervals is stored as NULL, as the box's LevelDB store drops it.
ALTER TABLE readings ADD COLUMN rr_intervals_ms integer[];
ALTER TABLE readings ADD COLUMN energy_expended_kj integer;
ALTER TABLE readings ADD COLUMN sensor_contact boolean;

-- Minute (span 60000) and hour (span 3600000) rollups, the fields of Rollup in api/store/rollups.ts; a bucket
-- starts at `start` (Unix ms) and has a row once it has a reading. An hour's row is the merge of its minutes'.
-- Rows are updated in place as readings arrive: the free space left in each page keeps those updates HOT.
CREATE TABLE reading_rollups (
  profile_id text    NOT NULL,
  span       integer NOT NULL CHECK (span IN (60000, 3600000)),
  start      bigint  NOT NULL,
  c          integer NOT NULL,
  s          bigint  NOT NULL,
  mn         integer NOT NULL,
  mx         integer NOT NULL,
  st         bigint  NOT NULL,
  sh         bigint  NOT NULL,
  f          bigint  NOT NULL,
  fc         integer NOT NULL,
  fh         integer NOT NULL,
  PRIMARY KEY (profile_id, span, start)
) WITH (fillfactor = 70);

-- Each member's newest reading, and each member's lock: every write of a member's readings (and an erasure)
-- locks this row first, so that the writes of one member run one after the other across hub instances, while
-- other members' run side by side. A row with measured_at NULL is a member without readings (a lock only).
CREATE TABLE reading_latest (
  profile_id  text     PRIMARY KEY,
  measured_at bigint,
  heart_rate  smallint,
  source      text,
  device_id   text
) WITH (fillfactor = 50);

-- Streamed time: a reading is credited with the time since its predecessor when that is at most the gap
-- (streamCredit in api/store/rollups.ts).
CREATE FUNCTION hr_credit(dt bigint, gap bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN dt > 0 AND dt <= gap THEN dt ELSE 0 END
$$;

-- Locks the members' rows of reading_latest (creating the missing ones), in profile_id order: two transactions
-- that lock overlapping sets wait for each other instead of deadlocking. A transaction that writes readings of
-- several calls (or readings and erasures) locks all its members with one call first.
CREATE FUNCTION hr_lock_profiles(profiles text[]) RETURNS void LANGUAGE sql AS $$
  INSERT INTO reading_latest (profile_id)
  SELECT DISTINCT x FROM unnest(profiles) AS x ORDER BY x
  ON CONFLICT (profile_id) DO UPDATE SET profile_id = EXCLUDED.profile_id WHERE false
$$;

-- Stores a group of readings. The arrays are columns, one element per reading; shorter arrays are padded with
-- NULL (unnest), so a caller without box ids or the optional fields passes '{}'. RR intervals of all readings are
-- concatenated in _rr; reading i has _rr_len[i] of them from _rr_from[i] on. `stored` is how many were stored.
--
-- The members' locks come first, in a statement of their own, so that the next statement's snapshot sees what
-- the transactions it waited for committed. With _wait they are waited for (in profile_id order). Without, the
-- members another transaction holds are skipped: their readings are left out and answered in `deferred` (their
-- 1-based positions; NULL when none), for the caller to store in a later call. Two hub instances' groups hold
-- most members each (a shared subscription spreads every member's readings over both), so waiting would make
-- their transactions run one after the other; skipping lets them run side by side.
--
-- Then one statement:
--   - drops the readings of a member erased at the box that forwarded them (erasures) and the repeats of a
--     time within the group (the first is kept);
--   - finds each reading's predecessor and successor among the stored readings (none to look up for a reading
--     newer than the latest, the usual case) and drops the readings the store holds;
--   - inserts the readings;
--   - adds each inserted reading to its minute and hour rollup with its credit, and changes the credit of the
--     stored successor of the last inserted reading before it (rollups.ts), as increments of the stored rollup,
--     so a rollup whose raw readings were pruned is never rebuilt from what is left;
--   - updates the latest record when a reading is newer;
--   - notifies channel hr_readings with the inserted readings, JSON arrays of [profile_id, measured_at,
--     heart_rate, source, device_id], in chunks under 7,500 bytes: every instance hears them once committed.
CREATE FUNCTION hr_store_readings(
  _p text[], _m bigint[], _h smallint[], _s text[], _d text[], _b text[],
  _rr integer[], _rr_from integer[], _rr_len integer[], _e integer[], _sc boolean[], _gap bigint, _wait boolean,
  OUT stored integer, OUT deferred integer[]
) LANGUAGE plpgsql
-- Every table read by key: scanning a whole table to hash it costs more than the lookups of one group. (Migration
-- 007 drops the plan_cache_mode setting: planning this statement for every group cost more than running it.)
SET plan_cache_mode = force_custom_plan
SET enable_seqscan = off
AS $$
DECLARE
  held text[];
  notices integer;
BEGIN
  IF _wait THEN
    PERFORM hr_lock_profiles(_p);
  ELSE
    -- A member's first row: created and committed by one transaction, waited for by the others (in order).
    INSERT INTO reading_latest (profile_id) SELECT DISTINCT x FROM unnest(_p) AS x ORDER BY x ON CONFLICT DO NOTHING;
    SELECT coalesce(array_agg(profile_id), '{}') INTO held FROM (
      SELECT profile_id FROM reading_latest WHERE profile_id = ANY(_p) ORDER BY profile_id FOR UPDATE SKIP LOCKED
    ) l;
    SELECT array_agg(i::integer ORDER BY i) INTO deferred FROM unnest(_p) WITH ORDINALITY AS u(p, i) WHERE p NOT IN (SELECT unnest(held));
  END IF;
  WITH input AS (
    SELECT * FROM unnest(_p, _m, _h, _s, _d, _b, _rr_from, _rr_len, _e, _sc) WITH ORDINALITY AS u(p, m, h, s, d, b, rf, rl, e, sc, i)
     WHERE held IS NULL OR u.p IN (SELECT unnest(held))
  ), cand AS (
    SELECT DISTINCT ON (u.p, u.m) u.* FROM input u
     WHERE u.b IS NULL OR NOT EXISTS (SELECT 1 FROM erasures x WHERE x.box_id = u.b AND x.profile_digest = sha256(convert_to(u.p, 'UTF8')))
     ORDER BY u.p, u.m, u.i
  ), fresh AS (
    -- The readings the store does not hold (under the locks, exactly those the INSERT inserts), each with the
    -- stored readings just before and after it, [measured_at, heart_rate]; none to look up for a reading newer
    -- than the latest. Each lookup is one probe of a primary key (LIMIT keeps the planner from joining whole
    -- tables instead; OFFSET 0 from computing them twice, for the filter and for the columns).
    SELECT * FROM (
      SELECT c.p, c.m, c.h, c.s, c.d, c.b, c.rf, c.rl, c.e, c.sc,
        CASE WHEN l.measured_at IS NULL THEN NULL
             WHEN c.m > l.measured_at THEN ARRAY[l.measured_at, l.heart_rate::bigint]
             ELSE (SELECT ARRAY[x.measured_at, x.heart_rate::bigint] FROM readings x WHERE x.profile_id = c.p AND x.measured_at < c.m ORDER BY x.measured_at DESC LIMIT 1)
        END AS pred,
        -- the first stored reading at or after the reading's time: at it, the reading is held already
        CASE WHEN l.measured_at IS NULL OR c.m > l.measured_at THEN NULL
             ELSE (SELECT ARRAY[x.measured_at, x.heart_rate::bigint] FROM readings x WHERE x.profile_id = c.p AND x.measured_at >= c.m ORDER BY x.measured_at LIMIT 1)
        END AS succ
      FROM cand c CROSS JOIN LATERAL (SELECT measured_at, heart_rate FROM reading_latest WHERE profile_id = c.p LIMIT 1) l
      OFFSET 0
    ) z WHERE z.succ IS NULL OR z.succ[1] <> z.m
  ), ins AS (
    INSERT INTO readings AS r (profile_id, measured_at, box_id, heart_rate, source, device_id, rr_intervals_ms, energy_expended_kj, sensor_contact)
    SELECT f.p, f.m, f.b, f.h, f.s, f.d, CASE WHEN f.rl > 0 THEN _rr[f.rf:f.rf + f.rl - 1] END, f.e, f.sc FROM fresh f ORDER BY f.p, f.m
    ON CONFLICT DO NOTHING
    RETURNING r.profile_id AS p, r.measured_at AS m, r.heart_rate AS h, r.source AS s, r.device_id AS d
  ), seq AS (
    SELECT f.p, f.m, f.h, f.s, f.d, f.pred, f.succ, lag(f.m) OVER w AS prev_m, lead(f.m) OVER w AS next_m, lag(f.succ) OVER w AS prev_succ
      FROM fresh f WINDOW w AS (PARTITION BY f.p ORDER BY f.m)
  ), credited AS (
    SELECT q.*,
      -- the predecessor now: the later of the previous fresh reading and the stored one
      hr_credit(q.m - CASE WHEN q.prev_m IS NOT NULL AND (q.pred IS NULL OR q.prev_m > q.pred[1]) THEN q.prev_m ELSE q.pred[1] END, _gap) AS cr,
      -- the stored successor that this reading now precedes (none when the next fresh reading comes first)
      CASE WHEN q.succ IS NOT NULL AND (q.next_m IS NULL OR q.next_m > q.succ[1]) THEN q.succ END AS sx,
      -- the time of the event before this one (below): the previous reading's successor when it comes first
      CASE WHEN q.prev_succ IS NOT NULL AND q.m > q.prev_succ[1] THEN q.prev_succ[1] ELSE q.prev_m END AS pe
    FROM seq q
  ), events AS (
    -- What changes in the rollups, per member in time order: each fresh reading with its credit, and each stored
    -- successor whose credit changes, right after the fresh reading that now precedes it. fc and fh are what a
    -- bucket's f, fc and fh become when the event is the bucket's earliest: its credit and bpm.
    SELECT p, m AS t, pe, 1 AS c, h::integer AS hr, cr AS st, h * cr AS sh, cr AS fc, h::integer AS fh FROM credited
    UNION ALL
    SELECT p, sx[1], m, 0, NULL, hr_credit(sx[1] - m, _gap) - hr_credit(sx[1] - pred[1], _gap),
           sx[2] * (hr_credit(sx[1] - m, _gap) - hr_credit(sx[1] - pred[1], _gap)), hr_credit(sx[1] - m, _gap), sx[2]::integer
      FROM credited WHERE sx IS NOT NULL
  ), agg AS (
    -- Per bucket, f, fc and fh of its earliest event: the one whose previous event is in another bucket.
    SELECT k.p, sp.span, k.t - k.t % sp.span AS start, sum(k.c)::integer AS c, coalesce(sum(k.hr), 0) AS s, min(k.hr) AS mn, max(k.hr) AS mx,
           sum(k.st) AS st, sum(k.sh) AS sh, min(k.t) AS f,
           max(k.fc) FILTER (WHERE k.pe IS NULL OR k.pe - k.pe % sp.span <> k.t - k.t % sp.span) AS fc,
           max(k.fh) FILTER (WHERE k.pe IS NULL OR k.pe - k.pe % sp.span <> k.t - k.t % sp.span) AS fh
      FROM events k CROSS JOIN (VALUES (60000), (3600000)) AS sp(span)
     GROUP BY k.p, sp.span, k.t - k.t % sp.span
  ), added AS (
    -- Buckets with a rollup. An earliest event at the stored f is a successor: its credit is the new fc.
    UPDATE reading_rollups r SET c = r.c + a.c, s = r.s + a.s, mn = least(r.mn, a.mn), mx = greatest(r.mx, a.mx),
           st = r.st + a.st, sh = r.sh + a.sh, f = least(r.f, a.f),
           fc = CASE WHEN a.f <= r.f THEN a.fc ELSE r.fc END, fh = CASE WHEN a.f <= r.f THEN a.fh ELSE r.fh END
      FROM agg a WHERE r.profile_id = a.p AND r.span = a.span AND r.start = a.start
    RETURNING r.profile_id AS p, r.span, r.start
  ), began AS (
    -- New buckets, with fresh readings (a successor whose bucket has no rollup, pruned already, changes nothing).
    -- The members' locks keep another writer from inserting the same bucket meanwhile.
    INSERT INTO reading_rollups (profile_id, span, start, c, s, mn, mx, st, sh, f, fc, fh)
    SELECT a.p, a.span, a.start, a.c, a.s, a.mn, a.mx, a.st, a.sh, a.f, a.fc, a.fh FROM agg a
     WHERE a.c > 0 AND NOT EXISTS (SELECT 1 FROM added d WHERE d.p = a.p AND d.span = a.span AND d.start = a.start)
  ), latest AS (
    UPDATE reading_latest l SET measured_at = n.m, heart_rate = n.h, source = n.s, device_id = n.d
      FROM credited n WHERE n.next_m IS NULL AND l.profile_id = n.p AND (l.measured_at IS NULL OR n.m > l.measured_at)
  ), notes AS (
    -- An element is at most about 700 bytes (ids of at most 64 characters, a source of at most 32, each
    -- character escaped at worst): chunks of the elements that start within 6,000 bytes stay under 7,500.
    SELECT j, sum(octet_length(j) + 1) OVER (ROWS UNBOUNDED PRECEDING) - octet_length(j) - 1 AS pos
      FROM (SELECT json_build_array(p, m, h, s, d)::text AS j FROM ins) e
  ), sent AS (
    SELECT pg_notify('hr_readings', '[' || string_agg(j, ',') || ']') FROM notes GROUP BY pos / 6000
  )
  SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM sent) INTO stored, notices;
END $$;

-- Recomputes, from the raw readings, the minute rollups of the minutes of `times` and the hour rollups of their
-- hours (from the minutes), deleting those left without readings; after readings were deleted (an erasure).
-- `times` must hold the deleted readings' times and those of their stored successors, whose credit changed.
CREATE FUNCTION hr_recompute_rollups(_profile text, _times bigint[], _gap bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH minutes AS (
    SELECT DISTINCT t - t % 60000 AS start FROM unnest(_times) AS t
  ), raw AS (
    SELECT mi.start, x.t, x.h, hr_credit(x.t - x.pt, _gap) AS cr
      FROM minutes mi CROSS JOIN LATERAL (
        SELECT u.t, u.h, lag(u.t) OVER (ORDER BY u.t) AS pt FROM (
          (SELECT measured_at AS t, heart_rate AS h FROM readings WHERE profile_id = _profile AND measured_at < mi.start ORDER BY measured_at DESC LIMIT 1)
          UNION ALL
          (SELECT measured_at, heart_rate FROM readings WHERE profile_id = _profile AND measured_at >= mi.start AND measured_at < mi.start + 60000)
        ) u
      ) x
     WHERE x.t >= mi.start
  ), agg AS (
    SELECT start, count(*)::integer AS c, sum(h) AS s, min(h) AS mn, max(h) AS mx, sum(cr) AS st, sum(h * cr) AS sh,
           min(t) AS f, (array_agg(cr ORDER BY t))[1] AS fc, (array_agg(h ORDER BY t))[1] AS fh
      FROM raw GROUP BY start
  ), emptied AS (
    DELETE FROM reading_rollups r USING minutes mi
     WHERE r.profile_id = _profile AND r.span = 60000 AND r.start = mi.start AND NOT EXISTS (SELECT 1 FROM agg a WHERE a.start = mi.start)
  )
  INSERT INTO reading_rollups (profile_id, span, start, c, s, mn, mx, st, sh, f, fc, fh)
  SELECT _profile, 60000, start, c, s, mn, mx, st, sh, f, fc, fh FROM agg
  ON CONFLICT (profile_id, span, start) DO UPDATE SET c = EXCLUDED.c, s = EXCLUDED.s, mn = EXCLUDED.mn, mx = EXCLUDED.mx,
    st = EXCLUDED.st, sh = EXCLUDED.sh, f = EXCLUDED.f, fc = EXCLUDED.fc, fh = EXCLUDED.fh;

  WITH hours AS (
    SELECT DISTINCT t - t % 3600000 AS start FROM unnest(_times) AS t
  ), agg AS (
    SELECT h.start, sum(m.c)::integer AS c, sum(m.s) AS s, min(m.mn) AS mn, max(m.mx) AS mx, sum(m.st) AS st, sum(m.sh) AS sh,
           min(m.f) AS f, (array_agg(m.fc ORDER BY m.f))[1] AS fc, (array_agg(m.fh ORDER BY m.f))[1] AS fh
      FROM hours h JOIN reading_rollups m ON m.profile_id = _profile AND m.span = 60000 AND m.start >= h.start AND m.start < h.start + 3600000
     GROUP BY h.start
  ), emptied AS (
    DELETE FROM reading_rollups r USING hours h
     WHERE r.profile_id = _profile AND r.span = 3600000 AND r.start = h.start AND NOT EXISTS (SELECT 1 FROM agg a WHERE a.start = h.start)
  )
  INSERT INTO reading_rollups (profile_id, span, start, c, s, mn, mx, st, sh, f, fc, fh)
  SELECT _profile, 3600000, start, c, s, mn, mx, st, sh, f, fc, fh FROM agg
  ON CONFLICT (profile_id, span, start) DO UPDATE SET c = EXCLUDED.c, s = EXCLUDED.s, mn = EXCLUDED.mn, mx = EXCLUDED.mx,
    st = EXCLUDED.st, sh = EXCLUDED.sh, f = EXCLUDED.f, fc = EXCLUDED.fc, fh = EXCLUDED.fh;
END $$;

-- A member erased at a box: their readings forwarded by that box are deleted, a tombstone stops a redelivery of
-- one of them from being stored again (hr_store_readings), and their rollups and latest record are made again
-- from what is left. Returns how many readings were deleted.
CREATE FUNCTION hr_erase_box_member(_box text, _profile text, _erased_at bigint, _gap bigint) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  gone bigint[];
  touched bigint[];
BEGIN
  PERFORM hr_lock_profiles(ARRAY[_profile]);
  INSERT INTO erasures (box_id, profile_digest, erased_at) VALUES (_box, sha256(convert_to(_profile, 'UTF8')), _erased_at)
  ON CONFLICT (box_id, profile_digest) DO UPDATE SET erased_at = GREATEST(erasures.erased_at, EXCLUDED.erased_at);
  WITH d AS (DELETE FROM readings WHERE profile_id = _profile AND box_id = _box RETURNING measured_at)
  SELECT array_agg(measured_at) INTO gone FROM d;
  IF gone IS NULL THEN RETURN 0; END IF;
  -- The deleted readings' buckets, and those of the readings that followed them (their credit changed).
  SELECT gone || coalesce(array_agg(n), '{}') INTO touched FROM (
    SELECT DISTINCT (SELECT min(measured_at) FROM readings WHERE profile_id = _profile AND measured_at > g) AS n FROM unnest(gone) AS g
  ) s WHERE n IS NOT NULL;
  PERFORM hr_recompute_rollups(_profile, touched, _gap);
  -- The latest record, when it was one of the deleted readings: the newest reading left, or none.
  UPDATE reading_latest SET (measured_at, heart_rate, source, device_id) =
    (SELECT measured_at, heart_rate, source, device_id FROM readings WHERE profile_id = _profile ORDER BY measured_at DESC LIMIT 1)
   WHERE profile_id = _profile AND measured_at = ANY(gone);
  RETURN cardinality(gone);
END $$;

-- The readings stored before this migration: their rollups (credited with the default stream gap, 5 s) and
-- latest records.
INSERT INTO reading_rollups (profile_id, span, start, c, s, mn, mx, st, sh, f, fc, fh)
SELECT profile_id, 60000, start, count(*), sum(h), min(h), max(h), sum(cr), sum(h * cr), min(t),
       (array_agg(cr ORDER BY t))[1], (array_agg(h ORDER BY t))[1]
  FROM (SELECT profile_id, measured_at AS t, heart_rate AS h, measured_at - measured_at % 60000 AS start,
               hr_credit(measured_at - lag(measured_at) OVER (PARTITION BY profile_id ORDER BY measured_at), 5000) AS cr
          FROM readings) x
 GROUP BY profile_id, start;
INSERT INTO reading_rollups (profile_id, span, start, c, s, mn, mx, st, sh, f, fc, fh)
SELECT profile_id, 3600000, start - start % 3600000, sum(c), sum(s), min(mn), max(mx), sum(st), sum(sh), min(f),
       (array_agg(fc ORDER BY f))[1], (array_agg(fh ORDER BY f))[1]
  FROM reading_rollups WHERE span = 60000
 GROUP BY profile_id, start - start % 3600000;
INSERT INTO reading_latest (profile_id, measured_at, heart_rate, source, device_id)
SELECT DISTINCT ON (profile_id) profile_id, measured_at, heart_rate, source, device_id
  FROM readings ORDER BY profile_id, measured_at DESC;
