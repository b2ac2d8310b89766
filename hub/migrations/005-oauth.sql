-- The OAuth flows' state, shared by the hub's instances (hub/store/pg-oauth.ts): authorization codes, device
-- authorization sessions and sign-in sessions, the PostgreSQL counterparts of the box's `oauth_codes`,
-- `device_sessions`, `device_user_codes` and `sign_in_sessions` sublevels (api/oauth/codes.ts, session.ts). As on
-- the box, codes, device codes, user codes and session ids are kept as SHA-256 digests only.

CREATE TABLE oauth_codes (
  digest     text   PRIMARY KEY,
  profile_id text   NOT NULL,
  -- The CodeRecord (api/oauth/codes.ts) but used_at, which is the column below.
  record     jsonb  NOT NULL,
  -- Set once, by the exchange that redeems the code (UPDATE … WHERE used_at IS NULL).
  used_at    bigint,
  expires_at bigint NOT NULL
);
CREATE INDEX oauth_codes_profile ON oauth_codes (profile_id);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

CREATE TABLE device_sessions (
  digest     text   PRIMARY KEY,
  -- The user code's digest while it works at /device; NULL once the session was decided.
  user_code  text   UNIQUE,
  status     text   NOT NULL,
  profile_id text,
  -- The DeviceRecord (its status and profile_id are the columns above).
  record     jsonb  NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX device_sessions_profile ON device_sessions (profile_id);
CREATE INDEX device_sessions_expires ON device_sessions (expires_at);

CREATE TABLE sign_in_sessions (
  -- The digest of the cookie's session id.
  digest     text   PRIMARY KEY,
  profile_id text,
  -- The Session (api/oauth/session.ts): its anti-CSRF token, expiry, operator.
  record     jsonb  NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX sign_in_sessions_profile ON sign_in_sessions (profile_id);
CREATE INDEX sign_in_sessions_expires ON sign_in_sessions (expires_at);

-- A session ended (signed out, erased, expired) by anyone: every instance drops it from memory.
CREATE FUNCTION sign_in_session_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('hr_sessions', OLD.digest);
  RETURN NULL;
END $$;
CREATE TRIGGER sign_in_sessions_ended AFTER DELETE ON sign_in_sessions
  FOR EACH ROW EXECUTE FUNCTION sign_in_session_ended();
