-- The chain's boxes and the revision of its membership (docs/hub.md "Members of the chain"). Every box in
-- `boxes` receives the chain's members and pairings as one retained message at <topic_root>/boxes/<box_id>/members
-- (hub/membership/), stamped with the revision below.
CREATE TABLE boxes (
  box_id     text   PRIMARY KEY CHECK (box_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
  created_at bigint NOT NULL
);

-- One row: the membership's revision. It grows with every change of a member or a pairing, in the transaction of
-- that change, so that a snapshot read in one transaction pairs each revision with exactly one membership. The
-- change is what the triggers below see, whoever writes it (`hr-relay hub admin`, the hub's API, SQL by hand).
CREATE TABLE chain_revision (
  one      boolean PRIMARY KEY DEFAULT true CHECK (one),
  revision bigint  NOT NULL
);
INSERT INTO chain_revision (revision) VALUES (1);

-- Bumps the revision and tells every hub instance (channel hr_chain, payload the new revision). Run at commit
-- (deferred constraint triggers), so the row lock it takes is held for the commit alone: two transactions that
-- change members never wait for each other's statements through it.
CREATE FUNCTION chain_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r bigint;
BEGIN
  UPDATE chain_revision SET revision = revision + 1 RETURNING revision INTO r;
  PERFORM pg_notify('hr_chain', r::text);
  RETURN NULL;
END $$;

-- A box added or removed: its instances publish to it (or stop); the membership itself is unchanged.
CREATE FUNCTION chain_boxes_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('hr_chain', (SELECT revision FROM chain_revision)::text);
  RETURN NULL;
END $$;

-- The fields of a user record that a box receives (ChainMember in firmware-protocol/upstream.ts, built by
-- hub/membership/snapshot.ts): a change of another field (consent, premium, room and ingestion switches) is not
-- a change of the membership.
CREATE FUNCTION chain_member_fields(record jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object(
    'username', record->'username', 'password_hash', record->'password_hash', 'display_name', record->'display_name',
    'age', record->'age', 'weight_kg', record->'weight_kg', 'sex', record->'sex', 'max_heart_rate', record->'max_heart_rate',
    'created_at', record->'created_at')
$$;

CREATE CONSTRAINT TRIGGER users_chain_insert AFTER INSERT OR DELETE ON users
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION chain_changed();
CREATE CONSTRAINT TRIGGER users_chain_update AFTER UPDATE ON users
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.profile_id IS DISTINCT FROM NEW.profile_id OR chain_member_fields(OLD.record) IS DISTINCT FROM chain_member_fields(NEW.record))
  EXECUTE FUNCTION chain_changed();
CREATE CONSTRAINT TRIGGER devices_chain AFTER INSERT OR UPDATE OR DELETE ON devices
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION chain_changed();
-- TRUNCATE has no row triggers: a statement trigger, at once.
CREATE TRIGGER users_chain_truncate AFTER TRUNCATE ON users FOR EACH STATEMENT EXECUTE FUNCTION chain_changed();
CREATE TRIGGER devices_chain_truncate AFTER TRUNCATE ON devices FOR EACH STATEMENT EXECUTE FUNCTION chain_changed();
CREATE CONSTRAINT TRIGGER boxes_chain AFTER INSERT OR DELETE ON boxes
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION chain_boxes_changed();
