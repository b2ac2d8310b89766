-- Wrong attempts at the OAuth pages (wrong passwords at /signin, wrong codes at /device), counted by all the hub's
-- instances together (hub/store/pg-attempts.ts), so that a limit holds however many instances an attacker's
-- attempts are spread over. A key (an address, a username, a session) is kept as its SHA-256 digest only, and
-- rows older than their limit's window are deleted.
CREATE TABLE auth_attempts (
  attempt    bigint NOT NULL,
  key_digest bytea  NOT NULL,
  limiter    text   NOT NULL,
  at         bigint NOT NULL,
  PRIMARY KEY (attempt, key_digest)
);
CREATE INDEX auth_attempts_key ON auth_attempts (limiter, key_digest, at);
CREATE INDEX auth_attempts_at ON auth_attempts (limiter, at);
CREATE SEQUENCE auth_attempt_ids;

-- When every key is below the limit again (ms), or NULL when none is at it: per key at the limit, when its oldest
-- attempt that keeps it there leaves the window.
CREATE FUNCTION hr_attempt_freeing(_limiter text, _keys bytea[], _limit integer, _window bigint, _now bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT max(f) FROM (
    SELECT (array_agg(a.at ORDER BY a.at))[count(*) - _limit + 1] + _window AS f
      FROM auth_attempts a WHERE a.limiter = _limiter AND a.key_digest = ANY(_keys) AND a.at > _now - _window
     GROUP BY a.key_digest HAVING count(*) >= _limit
  ) s
$$;

-- Counts an attempt under every key, unless one of them has _limit attempts within the window: then nothing is
-- counted, attempt_id is NULL and retry_after_ms says how long until every key is below the limit again. The keys
-- are locked first (advisory transaction locks, in one order), so that of a burst spread over several instances
-- exactly _limit attempts are counted, as the box's in-memory limiter counts them (api/oauth/rate-limit.ts).
CREATE FUNCTION hr_reserve_attempt(_limiter text, _keys bytea[], _limit integer, _window bigint, _now bigint,
  OUT attempt_id bigint, OUT retry_after_ms bigint) LANGUAGE plpgsql AS $$
DECLARE
  k bytea;
  freeing bigint;
BEGIN
  FOR k IN SELECT DISTINCT x FROM unnest(_keys) AS x ORDER BY x LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended(_limiter || ':' || encode(k, 'hex'), 0));
  END LOOP;
  DELETE FROM auth_attempts WHERE limiter = _limiter AND key_digest = ANY(_keys) AND at <= _now - _window;
  freeing := hr_attempt_freeing(_limiter, _keys, _limit, _window, _now);
  IF freeing IS NOT NULL THEN
    retry_after_ms := freeing - _now;
    RETURN;
  END IF;
  attempt_id := nextval('auth_attempt_ids');
  INSERT INTO auth_attempts (attempt, key_digest, limiter, at)
  SELECT DISTINCT attempt_id, x, _limiter, _now FROM unnest(_keys) AS x;
END $$;
