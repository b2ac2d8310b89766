-- Users, device pairings, OAuth clients and tokens: the PostgreSQL counterparts of the LevelDB stores
-- (api/store/users.ts, devices.ts, clients.ts, tokens.ts), written by hub/store/pg-*.ts. Secrets are kept as the
-- LevelDB store keeps them: passwords and client secrets as scrypt hashes, tokens and MQTT passwords as SHA-256
-- digests (api/store/secrets.ts).

-- A change of a row tells every hub instance which row changed (TG_ARGV[0]: the channel, TG_ARGV[1]: the key
-- column), in the transaction of the change, whoever writes it: the instances reload that row into memory.
CREATE FUNCTION store_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN PERFORM pg_notify(TG_ARGV[0], to_jsonb(OLD) ->> TG_ARGV[1]); END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN PERFORM pg_notify(TG_ARGV[0], to_jsonb(NEW) ->> TG_ARGV[1]); END IF;
  RETURN NULL;
END $$;

-- An empty payload: every row may have changed (the instances reload them all).
CREATE FUNCTION store_table_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_ARGV[0], '');
  RETURN NULL;
END $$;

CREATE TABLE users (
  profile_id   text   PRIMARY KEY,
  username     text   NOT NULL,
  -- The username NFC-normalised and lower-cased (Users.nameKey): unique, so usernames are case-insensitively.
  username_key text   NOT NULL UNIQUE,
  -- The whole UserRecord (api/store/records.ts), password hash included.
  record       jsonb  NOT NULL,
  created_at   bigint NOT NULL
);
CREATE TRIGGER users_changed AFTER INSERT OR UPDATE OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION store_row_changed('hr_users', 'profile_id');
CREATE TRIGGER users_truncated AFTER TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION store_table_truncated('hr_users');

CREATE TABLE devices (
  -- Normalised (normalizeDeviceId: BLE addresses upper case).
  device_id     text   PRIMARY KEY,
  profile_id    text   NOT NULL,
  kind          text   NOT NULL,
  mqtt_username text   UNIQUE,
  -- The whole DeviceRecord, MQTT password digest included.
  record        jsonb  NOT NULL,
  created_at    bigint NOT NULL
);
CREATE INDEX devices_profile ON devices (profile_id);
CREATE TRIGGER devices_changed AFTER INSERT OR UPDATE OR DELETE ON devices
  FOR EACH ROW EXECUTE FUNCTION store_row_changed('hr_devices', 'device_id');
CREATE TRIGGER devices_truncated AFTER TRUNCATE ON devices
  FOR EACH STATEMENT EXECUTE FUNCTION store_table_truncated('hr_devices');

CREATE TABLE clients (
  client_id  text   PRIMARY KEY,
  -- The whole ClientRecord, secret hash included.
  record     jsonb  NOT NULL,
  created_at bigint NOT NULL
);

-- A grant: the tokens issued from one authorization (a code, a device code, a manual token) and their rotations.
-- Every write of a family's tokens first locks its row (hub/store/pg-tokens.ts), so that a revocation of the
-- family and a rotation or issue in it run one after the other, on any instance.
CREATE TABLE token_families (
  family     text   PRIMARY KEY,
  client_id  text   NOT NULL,
  -- null for client-credentials tokens.
  profile_id text,
  created_at bigint NOT NULL
);
CREATE INDEX token_families_grant ON token_families (profile_id, client_id);

-- Tokens by the SHA-256 (hex) of the token; the token itself is never stored.
CREATE TABLE access_tokens (
  digest     text   PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
  family     text   NOT NULL REFERENCES token_families ON DELETE CASCADE,
  client_id  text   NOT NULL,
  profile_id text,
  scopes     text[] NOT NULL,
  flow       text   NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX access_tokens_family ON access_tokens (family);
CREATE INDEX access_tokens_grant ON access_tokens (profile_id, client_id);

CREATE TABLE refresh_tokens (
  digest        text   PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
  family        text   NOT NULL REFERENCES token_families ON DELETE CASCADE,
  client_id     text   NOT NULL,
  profile_id    text,
  scopes        text[] NOT NULL,
  -- The access token issued with it (deleted when this one is rotated).
  access_digest text   NOT NULL,
  created_at    bigint NOT NULL,
  expires_at    bigint NOT NULL,
  -- Set when rotated: a later use is a replay, and revokes the family.
  used_at       bigint
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family);
CREATE INDEX refresh_tokens_grant ON refresh_tokens (profile_id, client_id);

-- Access tokens deleted lately (digests only, kept a day): an instance whose notification connection dropped
-- reads what was revoked meanwhile when it reconnects, so that its open streams still end.
CREATE TABLE revoked_access_tokens (
  digest     text        PRIMARY KEY,
  revoked_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX revoked_access_tokens_at ON revoked_access_tokens (revoked_at);

-- A deletion of access tokens (revoked, rotated, a family or grant revoked, a member erased), whoever deletes them,
-- tells every instance the digests (channel hr_tokens_revoked, payload a JSON array of at most 100 digests, under
-- PostgreSQL's 8,000-byte limit) in the transaction of the deletion, and leaves their tombstones.
CREATE FUNCTION access_tokens_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO revoked_access_tokens (digest) SELECT digest FROM gone ON CONFLICT (digest) DO NOTHING;
  PERFORM pg_notify('hr_tokens_revoked', json_agg(digest)::text)
    FROM (SELECT digest, (row_number() OVER () - 1) / 100 AS chunk FROM gone) AS numbered
    GROUP BY chunk;
  RETURN NULL;
END $$;
CREATE TRIGGER access_tokens_deleted AFTER DELETE ON access_tokens
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION access_tokens_deleted();
