-- Readings as the boxes stored them, one row per (box, profile, measured_at): the key the relay documents
-- (docs/integrations.md "Upstream bridge": the topic, which names the box and the profile, plus measured_at).
CREATE TABLE readings (
  profile_id  text     NOT NULL,
  measured_at bigint   NOT NULL,
  box_id      text     NOT NULL,
  heart_rate  smallint NOT NULL CHECK (heart_rate > 0),
  source      text     NOT NULL,
  device_id   text,
  PRIMARY KEY (profile_id, measured_at, box_id)
);

-- A member erased at a box: what the hub held of them is deleted, and a reading of theirs that the broker
-- delivers again afterwards is not stored. Keyed by a digest of the profile id, not the id itself.
CREATE TABLE erasures (
  box_id         text   NOT NULL,
  profile_digest bytea  NOT NULL,
  erased_at      bigint NOT NULL,
  PRIMARY KEY (box_id, profile_digest)
);
