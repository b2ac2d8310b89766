-- The hub's role and database (docs/hub.md). Run once as the postgres superuser:
--   sudo -u postgres psql -v password="'choose-one'" -f deploy/hub/postgres-setup.sql
-- The hub creates and migrates its own tables at start (hub/migrations/), as this role.
CREATE ROLE hub LOGIN PASSWORD :password;
CREATE DATABASE hub OWNER hub;
\connect hub
-- Only the hub's role uses the database.
REVOKE ALL ON DATABASE hub FROM PUBLIC;
ALTER SCHEMA public OWNER TO hub;
